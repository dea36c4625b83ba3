package strategy

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

// patterns enumerates every participation pattern of p over [0,n).
func patterns(n int, p participation.Pattern) [][]int {
	var out [][]int
	switch {
	case p.Once():
		for i := 0; i < n; i++ {
			out = append(out, []int{i})
		}
	case p.Groups > 0:
		for i := 0; i < p.Separation() && i < n; i++ {
			var pi []int
			for a := 0; a < p.MaxParticipations && i+a*p.Separation() < n; a++ {
				pi = append(pi, i+a*p.Separation())
			}
			out = append(out, pi)
		}
	case p.MinSeparation > 0:
		var rec func(start int, cur []int)
		rec = func(start int, cur []int) {
			if len(cur) > 0 {
				out = append(out, append([]int(nil), cur...))
			}
			if len(cur) == p.MaxParticipations {
				return
			}
			for i := start; i < n; i++ {
				rec(i+p.Separation(), append(cur, i))
			}
		}
		rec(0, nil)
	}
	return out
}

// bruteSens2 is max over patterns π and sign vectors s of sᵀX_ππ s: the exact
// squared sensitivity whenever the supremum is attained by collinear rows
// (X_ππ ≥ 0 or diagonal), and a lower bound in general.
func bruteSens2(x mat.Symmetric, p participation.Pattern) float64 {
	best := 0.0
	for _, pi := range patterns(x.SymmetricDim(), p) {
		for mask := 0; mask < 1<<len(pi); mask++ {
			s := 0.0
			for a, i := range pi {
				for c, j := range pi {
					sa, sc := 1.0, 1.0
					if mask>>a&1 == 1 {
						sa = -1
					}
					if mask>>c&1 == 1 {
						sc = -1
					}
					s += sa * sc * x.At(i, j)
				}
			}
			best = math.Max(best, s)
		}
	}
	return best
}

func randomC(rng *rand.Rand, n, bands int, nonneg bool) *mat.Dense {
	c := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := max(0, i-bands+1); j <= i; j++ {
			v := rng.NormFloat64()
			if nonneg {
				v = math.Abs(v)
			}
			c.Set(i, j, v)
		}
	}
	return c
}

func TestSensitivityAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const tol = 1e-10 // relative
	for trial := 0; trial < 30; trial++ {
		n := 3 + rng.IntN(10)
		k := 1 + rng.IntN(4)
		b := 1 + rng.IntN(4)
		for _, p := range []participation.Pattern{participation.AtMostOnce, participation.Turns(k, b), participation.Spaced(k, b)} {
			// Nonnegative dense C: exact for single and (k,b).
			x := gramOf(randomC(rng, n, n, true))
			got, err := SensitivityOf(x, p)
			if err != nil {
				t.Fatal(err)
			}
			want := math.Sqrt(bruteSens2(x, p))
			if got.Exact && !near(got.Value, want, tol*want) {
				t.Errorf("X≥0 n=%d %v: %s = %v, brute force %v", n, p, got.Method, got.Value, want)
			}
			if !got.Exact && got.Value < want*(1-tol) {
				t.Errorf("X≥0 n=%d %v: bound %s = %v < brute force %v", n, p, got.Method, got.Value, want)
			}
			if p.MinSeparation == 0 && !got.Exact {
				t.Errorf("X≥0 %v: expected an exact method, got %s", p, got.Method)
			}
			// Banded signed C with bands ≤ b: exact for every schema.
			xb := gramOf(randomC(rng, n, b, false))
			got, _ = SensitivityOf(xb, p)
			want = math.Sqrt(bruteSens2(xb, p))
			if !got.Exact || !near(got.Value, want, tol*want) {
				t.Errorf("banded n=%d %v: %s = %v (exact %v), brute force %v", n, p, got.Method, got.Value, got.Exact, want)
			}
			// Signed dense C: bounds must dominate the brute-force lower bound.
			xs := gramOf(randomC(rng, n, n, false))
			got, _ = SensitivityOf(xs, p)
			want = math.Sqrt(bruteSens2(xs, p))
			if got.Value < want*(1-tol) {
				t.Errorf("signed n=%d %v: %s = %v < brute force %v", n, p, got.Method, got.Value, want)
			}
		}
	}
}

func TestTreeMinSepAgainstBruteForce(t *testing.T) {
	// (n, E, b) → sens², from an independent implementation (brute force).
	for _, c := range []struct{ n, k, b, want int }{
		{8, 2, 2, 12}, {13, 3, 3, 20}, {20, 3, 4, 23}, {21, 4, 3, 40},
		{32, 3, 5, 32}, {37, 5, 4, 66}, {16, 16, 1, 496},
	} {
		if got := TreeMinSepSens2(c.n, c.k, c.b); got != float64(c.want) {
			t.Errorf("tree DP (%d,%d,%d) = %v, want %d", c.n, c.k, c.b, got, c.want)
		}
	}
	// And our own brute force on a grid of small cases (T ≥ 0: exact oracle).
	for n := 1; n <= 14; n++ {
		for k := 1; k <= 4; k++ {
			for b := 1; b <= 4; b++ {
				p := participation.Spaced(k, b)
				want := bruteSens2(NewTree(n, TreeVanilla).Gram(), p)
				if got := TreeMinSepSens2(n, k, b); got != want {
					t.Errorf("tree DP n=%d k=%d b=%d: %v, brute force %v", n, k, b, got, want)
				}
			}
		}
	}
}

func TestTreeSensitivityN2052(t *testing.T) {
	t.Parallel()
	// Exact integers, also from the independent implementation.
	tr := NewTree(2052, TreeVanilla)
	s, _ := tr.Sensitivity(participation.AtMostOnce)
	if !near(s.Value*s.Value, 12, 1e-12) || !s.Exact {
		t.Errorf("single: sens² %v, want 12", s.Value*s.Value)
	}
	s, _ = tr.Sensitivity(participation.Turns(6, 342))
	if !near(s.Value*s.Value, 118, 1e-9) || !s.Exact {
		t.Errorf("(6,342): sens² %v (%s), want 118", s.Value*s.Value, s.Method)
	}
	if testing.Short() {
		t.Skip("min-sep DP at n=2052 skipped in -short")
	}
	s, _ = tr.Sensitivity(participation.Spaced(6, 342))
	if !near(s.Value*s.Value, 118, 1e-9) || !s.Exact {
		t.Errorf("342-min-sep: sens² %v (%s), want 118", s.Value*s.Value, s.Method)
	}
}

func TestVecSensSmall(t *testing.T) {
	v := []float64{1, 5, 2, 4, 3}
	// b = 2, k = 2: best pattern {1,3} → 9; k = 3, b = 2: {0,2,4} → 6 or {1,3} → 9.
	if got := VecSens(v, 2, 2); got != 9 {
		t.Errorf("VecSens = %v, want 9", got)
	}
	if got := VecSens(v, 3, 2); got != 9 {
		t.Errorf("VecSens = %v, want 9", got)
	}
	if got := VecSens(v, 5, 1); got != 15 {
		t.Errorf("VecSens = %v, want 15", got)
	}
}

func TestSqrtSensitivityN2052(t *testing.T) {
	t.Parallel()
	// Independent implementation (float64): C = S^{1/2}: single 1.8692, (6,342) 6.0994 (4 decimals).
	nu := NewNu(2052, 0)
	s, _ := nu.Sensitivity(participation.AtMostOnce)
	if !near(s.Value, 1.8692, 1e-4) {
		t.Errorf("single %v, want 1.8692", s.Value)
	}
	s, _ = nu.Sensitivity(participation.Turns(6, 342))
	if !near(s.Value, 6.0994, 1e-4) || !s.Exact {
		t.Errorf("(6,342) %v (%s), want 6.0994", s.Value, s.Method)
	}
}

// TestMonotoneGramSensitivity: for X ≥ 0 non-increasing along rows and
// diagonals (Toeplitz C with nonnegative non-increasing coefficients, and the
// optimal single-participation MF for prefix sums, n ≤ 12) the b-min-sep
// sensitivity is exact and equals the brute force over all patterns (1e-12
// relative), for k, b ≤ 5; the multi-epoch MF (zeros at i ≡ j mod b) keeps
// the Thm 3 bound.
func TestMonotoneGramSensitivity(t *testing.T) {
	ctx := context.Background()
	for n := 2; n <= 12; n += 2 {
		opt, err := OptimalSingle(ctx, Prefix(n), FixedPointOptions{Gap: 1e-10})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := NuCoefficients(n, 0.1)
		for _, x := range []*mat.SymDense{opt.Gram(), gramOf(toeplitzLower(n, c))} {
			if !monotoneGram(x) {
				t.Fatalf("n=%d: X not monotone", n)
			}
			for k := 1; k <= 5; k++ {
				for b := 1; b <= 5; b++ {
					p := participation.Spaced(k, b)
					got, err := SensitivityOf(x, p)
					if err != nil {
						t.Fatal(err)
					}
					want := math.Sqrt(bruteSens2(x, p))
					if !got.Exact || !near(got.Value, want, 1e-12*want) {
						t.Fatalf("n=%d %v: %v (%s), brute force %v", n, p, got.Value, got.Method, want)
					}
				}
			}
		}
	}
	me, err := MultiEpoch(ctx, Prefix(24), 6, LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := me.Sensitivity(participation.Spaced(4, 6)); s.Exact {
		t.Errorf("multi-epoch min-sep claimed exact: %s", s.Method)
	}
}
