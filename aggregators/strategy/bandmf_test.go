package strategy

import (
	"context"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// The banded fast path (reverse Cholesky, loss, gradient) against dense
// oracles: LowerFactor, tr(AᵀA X⁻¹) by Cholesky, and −2(X⁻¹AᵀAX⁻¹)_ij.
func TestBandProblemAgainstDense(t *testing.T) {
	n, bw := 12, 4
	w := Momentum(n, 0.5, LinearCooldown(n, 4, 0.1))
	p := newBandProblem(w, bw, func(i, j int) bool { return true })
	rng := rand.New(rand.NewPCG(5, 6))
	theta := p.start()
	for k := range theta {
		theta[k] += 0.05 * rng.NormFloat64()
	}
	xs := make([]float64, n*bw)
	p.xFromParams(xs, theta)
	bf, ok := reverseCholesky(xs, n, bw)
	if !ok {
		t.Fatal("not PD")
	}
	x := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for d := 0; d < bw && d <= i; d++ {
			x.SetSym(i, i-d, xs[i*bw+d])
		}
	}
	c, err := LowerFactor(x)
	if err != nil {
		t.Fatal(err)
	}
	for j := 0; j < n; j++ {
		for d := 0; d < bw && j+d < n; d++ {
			if !near(bf.cc[j*bw+d], c.At(j+d, j), 1e-12) {
				t.Fatalf("C[%d][%d] = %v, dense %v (tolerance 1e-12)", j+d, j, bf.cc[j*bw+d], c.At(j+d, j))
			}
		}
	}
	g := make([]float64, n*bw)
	f := p.lossGrad(bf, g)
	var ch mat.Cholesky
	ch.Factorize(x)
	var xinv mat.SymDense
	ch.InverseTo(&xinv)
	var gx, xgx mat.Dense
	gx.Mul(w.Gram(), &xinv)
	xgx.Mul(&xinv, &gx)
	if want := mat.Trace(&gx); !near(f, want, 1e-10*want) {
		t.Errorf("loss %v, dense %v (tolerance 1e-10 relative)", f, want)
	}
	for i := 0; i < n; i++ {
		for tt := 0; tt < bw-1; tt++ {
			j := i - bw + 1 + tt
			if j < 0 {
				continue
			}
			if want := xgx.At(i, j); !near(g[i*bw+tt], want, 1e-10*(1+want)) {
				t.Errorf("G[%d][%d] = %v, dense %v", i, j, g[i*bw+tt], want)
			}
		}
	}
}

func TestBandMFTable(t *testing.T) {
	// NUMBERS.md §D.4 (A = S, n = 64, 4 decimals): b̂ → loss.
	ref := map[int]float64{1: 2080, 2: 1122.6491, 4: 660.3576, 8: 439.4950, 16: 336.3902, 32: 293.1174, 64: 282.2014}
	n := 64
	w := Prefix(n)
	for _, b := range []int{1, 2, 4, 8, 16, 32, 64} {
		f, err := BandMF(context.Background(), w, b, LBFGSOptions{RelTol: 1e-12})
		if err != nil {
			t.Fatal(err)
		}
		m := mustEval(t, f, w, Participation{Kind: Single})
		if !near(m.Loss, ref[b], 1e-4) {
			t.Errorf("b̂=%d: loss %.5f, want %.4f (±1e-4); %+v", b, m.Loss, ref[b], f.Status())
		}
		if f.Bands() > b {
			t.Errorf("b̂=%d: X has %d bands", b, f.Bands())
		}
		// Unit column norms ⇒ sens = sqrt(k̂) under (k,b) and b-min-sep, b ≥ b̂, exact.
		for _, p := range []Participation{{Kind: KB, K: 3, B: 20}, {Kind: MinSep, K: 3, B: 64}} {
			if p.B < b {
				continue
			}
			s, _ := f.Sensitivity(p)
			want := float64(p.MaxParticipations(n))
			if !s.Exact || !near(s.Value*s.Value, want, 1e-12) {
				t.Errorf("b̂=%d %v: sens² %v (%s), want %v exact", b, p, s.Value*s.Value, s.Method, want)
			}
		}
		if b == 1 {
			// One band is the identity.
			if !mat.EqualApprox(f.Gram(), NewIdentity(n).Gram(), 0) {
				t.Errorf("b̂=1: X ≠ I")
			}
		}
	}
	// b̂ = n matches the optimal dense MF (fixed point to gap 1e-10).
	opt, err := OptimalSingle(context.Background(), w, FixedPointOptions{Gap: 1e-10})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := BandMF(context.Background(), w, n, LBFGSOptions{RelTol: 1e-12})
	lo, lb := mustEval(t, opt, w, Participation{Kind: Single}).Loss, mustEval(t, f, w, Participation{Kind: Single}).Loss
	if !near(lo, lb, 1e-6*lo) {
		t.Errorf("b̂=n: BandMF %v vs fixed point %v (tolerance 1e-6 relative)", lb, lo)
	}
}

func TestMultiEpochSmall(t *testing.T) {
	// (k,b) = (4,16), n = 64: every pattern block of X is the identity, so the
	// (k,b) sensitivity is exactly 2 and the brute force agrees; the optimum is
	// at least as good as BandMF with b̂ = b (a feasible point of the same
	// problem) and than the identity.
	n, k, b := 64, 4, 16
	w := Prefix(n)
	p := Participation{Kind: KB, K: k, B: b}
	me, err := MultiEpoch(context.Background(), w, b, LBFGSOptions{RelTol: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := me.Sensitivity(p)
	if !s.Exact || !near(s.Value, 2, 1e-12) {
		t.Errorf("multi-epoch sens %v (%s), want 2 exact", s.Value, s.Method)
	}
	if bf := bruteSens2(me.Gram(), p); !near(bf, 4, 1e-9) {
		t.Errorf("brute force sens² %v, want 4", bf)
	}
	bm, _ := BandMF(context.Background(), w, b, LBFGSOptions{RelTol: 1e-12})
	lme, lbm := mustEval(t, me, w, p).Loss, mustEval(t, bm, w, p).Loss
	lid := mustEval(t, NewIdentity(n), w, p).Loss
	if !(lme <= lbm*(1+1e-9) && lbm < lid) {
		t.Errorf("losses multi-epoch %v, bandmf %v, identity %v: want ME ≤ BandMF < identity", lme, lbm, lid)
	}
	// Under min-sep the sensitivity is an upper bound (Thm 3) at least the brute force.
	ms := Participation{Kind: MinSep, K: k, B: b}
	s, _ = me.Sensitivity(ms)
	if s.Exact || s.Value*s.Value < bruteSens2(me.Gram(), ms)*(1-1e-12) {
		t.Errorf("min-sep bound %v (%s) below brute force", s.Value, s.Method)
	}
	t.Logf("multi-epoch %v (%+v), bandmf %v, min-sep bound %v", lme, me.Status(), lbm, s.Value)
}
