package strategy

import (
	"context"
	"math"
	"testing"
)

// TestCertificateBoundsKnownOptimum: the certificate of every L-BFGS
// optimization bounds the distance to the optimum. Known optima: BandMF with
// b̂ = n is the single-participation optimum, whose fixed point certifies
// itself to 1e-12; b̂ = 1 is X = I (gap 0); otherwise the optimum of a run to
// RelTol 1e-15. For runs stopped early (MaxIter 3, 10, 40) and to the default
// tolerance: the dual bound is below the known optimum (to 1e-12 relative)
// and (f − f*)/f ≤ Gap; at the known optimum Gap and the KKT residual are
// tiny (≤ 1e-6, ≤ 1e-4).
func TestCertificateBoundsKnownOptimum(t *testing.T) {
	ctx := context.Background()
	const n = 24
	w := Prefix(n)
	mom := Momentum(n, 0.9, nil)
	type run func(opts LBFGSOptions) (*Factorization, error)
	cases := []struct {
		name  string
		w     *Workload
		solve run
		known float64 // 0: a tight run of solve
	}{
		{"bandmf n bands", w, func(o LBFGSOptions) (*Factorization, error) { return BandMF(ctx, w, n, o) }, -1},
		{"bandmf 1 band", w, func(o LBFGSOptions) (*Factorization, error) { return BandMF(ctx, w, 1, o) }, 0},
		{"bandmf 5 bands", w, func(o LBFGSOptions) (*Factorization, error) { return BandMF(ctx, w, 5, o) }, 0},
		{"bandmf momentum 5 bands", mom, func(o LBFGSOptions) (*Factorization, error) { return BandMF(ctx, mom, 5, o) }, 0},
		{"bandmf-f 4 bands b 6", w, func(o LBFGSOptions) (*Factorization, error) { return BandMFUnequal(ctx, w, 4, 6, o) }, 0},
		{"multi-epoch b 6", w, func(o LBFGSOptions) (*Factorization, error) { return MultiEpoch(ctx, w, 6, o) }, 0},
		{"multi-epoch-f b 6", w, func(o LBFGSOptions) (*Factorization, error) { return MultiEpochUnequal(ctx, w, 6, o) }, 0},
	}
	for _, c := range cases {
		var opt float64
		switch c.known {
		case -1:
			f, err := OptimalSingle(ctx, c.w, FixedPointOptions{Gap: 1e-12})
			if err != nil {
				t.Fatal(err)
			}
			opt = lossOf(t, f, c.w) // diag(X) = 1: the same objective
		default:
			f, err := c.solve(LBFGSOptions{RelTol: 1e-15, MaxIter: 5000})
			if err != nil {
				t.Fatal(err)
			}
			st := f.Status()
			opt = lossOf(t, f, c.w)
			if !st.Certified || !(st.Gap <= 1e-6) || !(st.KKT <= 1e-4) {
				t.Errorf("%s tight: gap %v KKT %v (%s)", c.name, st.Gap, st.KKT, st.Message)
			}
		}
		for _, it := range []int{3, 10, 40, 2000} {
			f, err := c.solve(LBFGSOptions{MaxIter: it})
			if err != nil {
				t.Fatal(err)
			}
			st := f.Status()
			loss := lossOf(t, f, c.w)
			dist := (loss - opt) / loss
			t.Logf("%s, %d iterations: loss %.10g, optimum %.10g, distance %.2e, gap %.2e, KKT %.2e", c.name, it, loss, opt, dist, st.Gap, st.KKT)
			if !st.Certified || math.IsNaN(st.Gap) || st.Lower > opt*(1+1e-12) || dist > st.Gap+1e-12 {
				t.Errorf("%s, %d iterations: bound %v gap %v, loss %v optimum %v (distance %v): %s", c.name, it, st.Lower, st.Gap, loss, opt, dist, st.Message)
			}
		}
	}
}

// lossOf is tr(AᵀA X⁻¹) = ‖A C⁻¹‖²_F, the optimized objective.
func lossOf(t *testing.T, f *Factorization, w *Workload) float64 {
	t.Helper()
	b, err := f.Decoder(w)
	if err != nil {
		t.Fatal(err)
	}
	s := 0.0
	for i := 0; i < w.N(); i++ {
		for _, x := range b.RawRowView(i) {
			s += x * x
		}
	}
	return s
}
