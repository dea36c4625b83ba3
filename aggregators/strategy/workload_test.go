package strategy

import (
	"context"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

// TestCustomWorkload: a workload given as a matrix equal to a named one
// (prefix sums; momentum 0.9 with the D.3 cooldown) gives the same loss for
// identity, tree-online, the optimal fixed point (dense eigensolver path for
// the custom one, O(n²) bidiagonal path for the named prefix) and BandMF, to
// 1e-6 relative (the optimizers' tolerance), and a different cache key; A = I
// is the identity workload (identity strategy loss n·sens²).
func TestCustomWorkload(t *testing.T) {
	const n = 48
	ctx := context.Background()
	single := participation.AtMostOnce
	for _, named := range []*Workload{Prefix(n), Momentum(n, 0.9, LinearCooldown(n, 12, 0.05))} {
		var d mat.Dense
		d.CloneFrom(named.A())
		custom, err := Custom("file", &d)
		if err != nil {
			t.Fatal(err)
		}
		if custom.IsPrefix() || custom.Key() == named.Key() {
			t.Fatalf("custom workload: IsPrefix %v, key %s", custom.IsPrefix(), custom.Key())
		}
		build := func(w *Workload) []Strategy {
			opt, err := OptimalSingle(ctx, w, FixedPointOptions{Gap: 1e-9})
			if err != nil {
				t.Fatal(err)
			}
			band, err := BandMF(ctx, w, 6, LBFGSOptions{RelTol: 1e-12})
			if err != nil {
				t.Fatal(err)
			}
			return []Strategy{NewIdentity(n), NewTree(n, TreeOnline), opt, band}
		}
		a, b := build(named), build(custom)
		for i := range a {
			ma, mb := mustEval(t, a[i], named, single), mustEval(t, b[i], custom, single)
			if !near(ma.Loss, mb.Loss, 1e-6*ma.Loss) {
				t.Errorf("%s %s: loss %v named, %v custom", named.Name, a[i], ma.Loss, mb.Loss)
			}
		}
	}
	id := IdentityWorkload(n)
	if m := mustEval(t, NewIdentity(n), id, single); m.Loss != n {
		t.Errorf("identity strategy on the identity workload: loss %v, want %d", m.Loss, n)
	}
}

func TestReadWorkload(t *testing.T) {
	w, err := ReadWorkload(strings.NewReader("# A\n1 0 0\n\n0.5, 1, 0\n1\t1\t2\n"), "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if w.N() != 3 || w.A().At(2, 2) != 2 || w.A().At(1, 0) != 0.5 || w.Name != "a.txt" {
		t.Fatalf("read %v", mat.Formatted(w.A()))
	}
	for in, msg := range map[string]string{
		"":                 "no rows",
		"1 0\n1 1\n1 1\n":  "3 rows of 2 entries",
		"1 0\n1\n":         "line 2: 1 entries",
		"1 x\n1 1\n":       `entry 2 "x" is not a number`,
		"1 2\n1 1\n":       "above the diagonal",
		"1 0\n1 0\n":       "diagonal entry (2,2) is 0",
		"1 0\n1 NaN\n":     "is NaN",
		"1 0 0\n0 1 0\n0 ": "line 3: 1 entries",
		"1e300 0\n1 1\n":   "sum of their squares overflows",
	} {
		if _, err := ReadWorkload(strings.NewReader(in), "bad"); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want %q", in, err, msg)
		}
	}
}

// TestMomentumRowOrderBitIdentical: Momentum, built row by row, has the
// bits of the column-by-column recurrence A_ij = A_{i−1,j} + η_i β^{i−j}.
func TestMomentumRowOrderBitIdentical(t *testing.T) {
	for _, c := range []struct {
		n    int
		beta float64
		eta  []float64
	}{{1, 0, nil}, {7, 0, nil}, {50, 0.9, nil}, {33, 0.37, LinearCooldown(33, 10, 0.05)}, {64, 0, LinearCooldown(64, 64, 0.01)}} {
		w := Momentum(c.n, c.beta, c.eta)
		for j := 0; j < c.n; j++ {
			s, p := 0.0, 1.0
			for i := j; i < c.n; i++ {
				e := 1.0
				if c.eta != nil {
					e = c.eta[i]
				}
				s += e * p
				p *= c.beta
				if got := w.A().At(i, j); math.Float64bits(got) != math.Float64bits(s) {
					t.Fatalf("n %d β %v: A[%d,%d] = %v, column recurrence %v", c.n, c.beta, i, j, got, s)
				}
			}
		}
	}
}

// TestReadWorkloadLimit: a row longer than maxN, or rows beyond the first
// row's length, are refused as soon as they are read (a long line of
// separators is counted, not split), and a file within the limit reads as
// ReadWorkload does.
func TestReadWorkloadLimit(t *testing.T) {
	long := strings.Repeat("0 ", 1<<20) + "1\n"
	if _, err := ReadWorkloadLimit(strings.NewReader(long), "long", 1000); err == nil || !strings.Contains(err.Error(), "1048577 entries, above the 1000 rounds") {
		t.Errorf("long row: %v", err)
	}
	tall := "1 0\n1 1\n" + strings.Repeat("1 1\n", 1<<16)
	if _, err := ReadWorkloadLimit(strings.NewReader(tall), "tall", 1000); err == nil || !strings.Contains(err.Error(), "3 rows of 2 entries (or more)") {
		t.Errorf("tall: %v", err)
	}
	w, err := ReadWorkloadLimit(strings.NewReader("1 0\n0.5 1\n"), "ok", 2)
	if err != nil || w.N() != 2 || w.A().At(1, 0) != 0.5 {
		t.Errorf("2×2 within the limit: %v", err)
	}
}
