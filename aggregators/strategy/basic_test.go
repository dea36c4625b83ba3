package strategy

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func mustEval(t *testing.T, s Strategy, w *Workload, p participation.Pattern) Metrics {
	t.Helper()
	m, err := Evaluate(s, w, p)
	if err != nil {
		t.Fatalf("%s: %v", s.String(), err)
	}
	// Every strategy must factor the workload: B C = A to rounding.
	if m.Residual > 1e-10 {
		t.Errorf("%s n=%d: residual ‖BC−A‖/‖A‖ = %g > 1e-10", s.String(), s.N(), m.Residual)
	}
	return m
}

// Closed forms, and reference values computed by an independent implementation (float64) and recorded here.
func TestPrefixLossTable(t *testing.T) {
	ref := map[int][4]float64{ // identity, vanilla, online, full
		16:  {136, 165, 113.4378, 60.1045},
		64:  {2080, 1351, 853.7182, 405.7182},
		256: {32896, 9225, 5535.7123, 2463.7123},
	}
	for n, r := range ref {
		w := Prefix(n)
		single := participation.AtMostOnce
		got := [4]float64{
			mustEval(t, NewIdentity(n), w, single).Loss,
			mustEval(t, NewTree(n, TreeVanilla), w, single).Loss,
			mustEval(t, NewTree(n, TreeOnline), w, single).Loss,
			mustEval(t, NewTree(n, TreeFull), w, single).Loss,
		}
		// Closed forms, exact to rounding (tolerance 1e-9 relative).
		if !near(got[0], float64(n*(n+1)/2), 1e-9*got[0]) {
			t.Errorf("n=%d identity loss %v, want n(n+1)/2", n, got[0])
		}
		pc := 0
		for i := 1; i <= n; i++ {
			pc += bits.OnesCount(uint(i))
		}
		h := bits.Len(uint(n)) - 1
		if !near(got[1], float64((h+1)*pc), 1e-9*got[1]) {
			t.Errorf("n=%d vanilla tree loss %v, want (log2 n+1)·Σpopcount = %d", n, got[1], (h+1)*pc)
		}
		for i := range r {
			// Table values are printed to 4 decimals: tolerance 1e-4 absolute.
			if !near(got[i], r[i], 1e-4) {
				t.Errorf("n=%d strategy %d: loss %.4f, want %.4f (±1e-4)", n, i, got[i], r[i])
			}
		}
	}
}

func TestHonakerVariance(t *testing.T) {
	// Kairouz et al. 2021 D.3.1: t = 25 → 16/31 + 8/15 + 1 = 2.0495; t = 32 → 32/63.
	tr := NewTree(32, TreeOnline)
	w, err := tr.PrefixWeights()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		t    int
		want float64
	}{{25, 16.0/31 + 8.0/15 + 1}, {32, 32.0 / 63}} {
		r := mat.Norm(w.RowView(c.t-1), 2)
		if !near(r*r, c.want, 1e-12) {
			t.Errorf("Honaker variance at t=%d: %v, want %v (±1e-12)", c.t, r*r, c.want)
		}
	}
}

// Momentum and cooldown workloads at n = 256: reference values computed by an independent implementation (float64) and recorded here.
func TestMomentumWorkloadLosses(t *testing.T) {
	n := 256
	cases := []struct {
		w   *Workload
		ref [3]float64 // identity, online, full
	}{
		{Momentum(n, 0.9, nil), [3]float64{2952319.391, 274030.331, 122937.084}},
		{Momentum(n, 0.9, LinearCooldown(n, 64, 0.05)), [3]float64{2862839.522, 254744.873, 118410.687}},
		{Momentum(n, 0, LinearCooldown(n, 64, 0.05)), [3]float64{31865.185, 4927.111, 2245.749}},
	}
	single := participation.AtMostOnce
	for i, c := range cases {
		got := [3]float64{
			mustEval(t, NewIdentity(n), c.w, single).Loss,
			mustEval(t, NewTree(n, TreeOnline), c.w, single).Loss,
			mustEval(t, NewTree(n, TreeFull), c.w, single).Loss,
		}
		for j := range got {
			// Reference printed to 3 decimals: tolerance 1e-3 absolute.
			if !near(got[j], c.ref[j], 1e-3) {
				t.Errorf("case %d strategy %d: loss %.3f, want %.3f (±1e-3)", i, j, got[j], c.ref[j])
			}
		}
	}
}

func TestNuCoefficientsAndLoss(t *testing.T) {
	c, ci := NuCoefficients(6, 0)
	wc := []float64{1, 0.5, 0.375, 0.3125, 0.2734375, 0.24609375}
	wi := []float64{1, -0.5, -0.125, -0.0625, -0.0390625, -0.02734375}
	for i := range wc {
		if c[i] != wc[i] || ci[i] != wi[i] { // dyadic rationals: exact
			t.Errorf("coefficient %d: %v %v, want %v %v", i, c[i], ci[i], wc[i], wi[i])
		}
	}
	// ν = 0 is the dense square root: C·C = S (tolerance 1e-12).
	n := 32
	cm := NewNu(n, 0).Encoder()
	var sq mat.Dense
	sq.Mul(cm, cm)
	if !mat.EqualApprox(&sq, Prefix(n).A(), 1e-12) {
		t.Errorf("ν=0: C² ≠ S")
	}
	// Reference values of an independent implementation (float64):
	// (n, ν) → sens², loss, printed to 3–4 decimals.
	for _, r := range []struct{ n, nu, s2, loss float64 }{
		{16, 0.1, 1.4489, 50.459}, {16, 0, 1.9439, 51.657},
		{64, 0.01, 2.0923, 306.518}, {256, 0.001, 2.6882, 1788.161},
		{256, 0, 2.8310, 1823.334},
	} {
		m := mustEval(t, NewNu(int(r.n), r.nu), Prefix(int(r.n)), participation.AtMostOnce)
		s2 := m.Sensitivity.Value * m.Sensitivity.Value
		if !near(s2, r.s2, 1e-4) || !near(m.Loss, r.loss, 1e-3) {
			t.Errorf("n=%v ν=%v: sens² %.4f loss %.3f, want %.4f %.3f (±1e-4, ±1e-3)", r.n, r.nu, s2, m.Loss, r.s2, r.loss)
		}
		if fast := NuPrefixLoss(int(r.n), r.nu); !near(fast, m.Loss, 1e-9*m.Loss) {
			t.Errorf("NuPrefixLoss %v ≠ dense %v", fast, m.Loss)
		}
	}
	// Best ν on the 0.0005 grid (the same independent implementation).
	for _, r := range []struct{ n, nu, loss float64 }{{16, 0.0525, 49.356}, {64, 0.0125, 306.135}, {1024, 0.0005, 9650.418}} {
		nu := TuneNu(int(r.n), 0.0005)
		if !near(nu, r.nu, 1e-9) || !near(NuPrefixLoss(int(r.n), nu), r.loss, 1e-3) {
			t.Errorf("n=%v: best ν %v loss %.3f, want %v %.3f", r.n, nu, NuPrefixLoss(int(r.n), nu), r.nu, r.loss)
		}
	}
}

func TestLowerFactor(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 20
	a := mat.NewDense(n+3, n, nil)
	for i := range n + 3 {
		for j := range n {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	x := gramOf(a)
	c, err := LowerFactor(x)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.EqualApprox(gramOf(c), x, 1e-10) { // tolerance 1e-10 absolute on entries of size ~n
		t.Errorf("C̃ᵀC̃ ≠ X")
	}
}

// TestGramUpperBitIdentical: the block-upper Gram product equals the full
// Dgemm product bit for bit (sizes below, at and across the block size,
// dense and triangular inputs), so strategies computed before it are
// unchanged.
func TestGramUpperBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, sz := range [][2]int{{5, 3}, {40, 40}, {gramBlock, gramBlock}, {gramBlock + 37, 2*gramBlock + 5}, {300, 1100}} {
		m, n := sz[0], sz[1]
		a := mat.NewDense(m, n, nil)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				if sz[0] != 40 || j <= i {
					a.Set(i, j, rng.NormFloat64())
				}
			}
		}
		var full mat.Dense
		full.Mul(a.T(), a)
		got := gramUpper(a)
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				if got.At(i, j) != full.At(i, j) {
					t.Fatalf("%d×%d: (%d,%d) = %v, full product %v", m, n, i, j, got.At(i, j), full.At(i, j))
				}
			}
		}
	}
}
