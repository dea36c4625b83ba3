package strategy

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

// TestBandCholSelInv: the banded Cholesky factor and its selected inverse
// give the band of the dense inverse.
func TestBandCholSelInv(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct{ n, bw int }{{1, 0}, {7, 2}, {50, 5}, {40, 39}} {
		n, bw, w1 := c.n, c.bw, c.bw+1
		dense := mat.NewSymDense(n, nil)
		kb := make([]float64, n*w1)
		for p := 0; p < n; p++ {
			for q := max(0, p-bw); q <= p; q++ {
				v := rng.NormFloat64()
				if p == q {
					v = float64(2*bw+2) + rng.Float64()
				}
				kb[p*w1+q-p+bw] = v
				dense.SetSym(p, q, v)
			}
		}
		const s = 0.3
		for i := 0; i < n; i++ {
			dense.SetSym(i, i, dense.At(i, i)+s)
		}
		l, z := make([]float64, n*w1), make([]float64, n*w1)
		if !bandChol(l, kb, n, bw, s) {
			t.Fatalf("n=%d: not positive definite", n)
		}
		selInv(z, l, n, bw)
		var ch mat.Cholesky
		ch.Factorize(dense)
		var inv mat.SymDense
		if err := ch.InverseTo(&inv); err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for p := 0; p < n; p++ {
			for q := max(0, p-bw); q <= p; q++ {
				worst = math.Max(worst, math.Abs(z[p*w1+q-p+bw]-inv.At(p, q)))
			}
		}
		if worst > 1e-13 {
			t.Errorf("n=%d bw=%d: selected inverse off by %.2e", n, bw, worst)
		}
	}
	// Negative control: an indefinite matrix is refused.
	kb := []float64{1, 2, 2, 1} // [[1,2],[2,1]] with bw = 1: row 0 (pad, 1), row 1 (2, 1)
	kb = []float64{0, 1, 2, 1}
	if bandChol(make([]float64, 4), kb, 2, 1, 0) {
		t.Error("indefinite matrix factored")
	}
}

// TestQuadInverseSqrt: the quadrature's rational function is within its
// stated relative error of λ^{-½} across the interval (also between the
// check points), and a coarser rule is not.
func TestQuadInverseSqrt(t *testing.T) {
	for _, c := range []struct{ lo, hi, tol float64 }{{1e-7, 4, 1e-11}, {0.5, 2, 1e-14}, {1e-9, 1e3, 1e-9}} {
		q := newQuad(c.lo, c.hi, c.tol)
		if q.relErr > c.tol {
			t.Errorf("[%g,%g]: stated error %.2e above %g", c.lo, c.hi, q.relErr, c.tol)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < 2000; i++ {
			lam := c.lo * math.Pow(c.hi/c.lo, rng.Float64())
			if e := math.Abs(q.eval(lam)*math.Sqrt(lam) - 1); e > 2*c.tol {
				t.Fatalf("[%g,%g]: error %.2e at λ = %g", c.lo, c.hi, e, lam)
			}
		}
		// Negative control: twice the step, same range.
		bad := quad{lo: c.lo, hi: c.hi}
		for u := q.uLo; u <= q.uHi+1e-12; u += 2 * q.h {
			bad.s = append(bad.s, math.Exp(2*u))
			bad.c = append(bad.c, 2/math.Pi*2*q.h*math.Exp(u))
		}
		if e := bad.check(); e < 100*c.tol {
			t.Errorf("[%g,%g]: a rule with twice the step is within %.2e", c.lo, c.hi, e)
		}
	}
}

// TestMEDualMatchesLBFGS: on small cases the dual reaches the optimum the
// L-BFGS reaches (the known optimum): the same loss and X, a feasible X,
// and a dual bound that is below the L-BFGS loss (so a valid bound) and
// within the reported gap of it.
func TestMEDualMatchesLBFGS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eta := make([]float64, 90)
	for i := range eta {
		eta[i] = 1 - 0.8*float64(i)/90
	}
	cases := []struct {
		name string
		w    *Workload
		b    int
	}{
		{"prefix n=60 b=20", Prefix(60), 20},
		{"prefix n=61 b=20 (uneven classes)", Prefix(61), 20},
		{"schedule n=90 b=15", Momentum(90, 0, eta), 15},
		{"prefix n=40 b=40 (one round per class: single participation)", Prefix(40), 40},
		{"prefix n=40 b=39 (one class of two)", Prefix(40), 39},
		{"prefix n=40 b=2 (two classes)", Prefix(40), 2},
	}
	for _, c := range cases {
		for _, unequal := range []bool{false, true} {
			var ref *Factorization
			var err error
			if unequal {
				ref, err = MultiEpochUnequal(ctx, c.w, c.b, LBFGSOptions{})
			} else {
				ref, err = MultiEpoch(ctx, c.w, c.b, LBFGSOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
			f, err := multiEpochDual(ctx, c.w, c.b, unequal, LBFGSOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st := f.Status()
			refLoss := lossOf(t, ref, c.w)
			loss := lossOf(t, f, c.w)
			t.Logf("%s unequal=%v: dual %.12g (%s), L-BFGS %.12g", c.name, unequal, loss, st.Message, refLoss)
			if !st.Certified || !st.Converged || !(st.Gap <= 1e-9) {
				t.Errorf("%s unequal=%v: status %+v", c.name, unequal, st)
			}
			if st.Lower > refLoss*(1+1e-12) {
				t.Errorf("%s unequal=%v: dual bound %.12g above a feasible loss %.12g", c.name, unequal, st.Lower, refLoss)
			}
			if math.Abs(loss-refLoss) > 1e-8*refLoss {
				t.Errorf("%s unequal=%v: loss %.12g, L-BFGS %.12g", c.name, unequal, loss, refLoss)
			}
			// Feasibility, exactly; and X near the L-BFGS X (the optimum is flat).
			n := c.w.N()
			x, xr := f.Gram(), ref.Gram()
			tau := float64(ceilDiv(n, c.b))
			sums := make([]float64, c.b)
			dx := 0.0
			for i := 0; i < n; i++ {
				sums[i%c.b] += x.At(i, i)
				for j := 0; j < i; j++ {
					if (i-j)%c.b == 0 && x.At(i, j) != 0 {
						t.Fatalf("%s: X[%d,%d] = %g on the pattern", c.name, i, j, x.At(i, j))
					}
					dx = math.Max(dx, math.Abs(x.At(i, j)-xr.At(i, j)))
				}
				if !unequal && x.At(i, i) != 1 {
					t.Fatalf("%s: X[%d,%d] = %v", c.name, i, i, x.At(i, i))
				}
			}
			for r, s := range sums {
				if unequal && math.Abs(s-tau) > 1e-12*tau {
					t.Errorf("%s: class %d trace %.15g, want %g", c.name, r, s, tau)
				}
			}
			if dx > 1e-3 { // the optimum is flat: L-BFGS stops with X within about 1e-4
				t.Errorf("%s unequal=%v: X differs from the L-BFGS X by %.2e", c.name, unequal, dx)
			}
		}
	}
}

// TestMEDualCertificateDetects: stopped early, the certificate's gap is
// large and still brackets the optimum (negative control for the gap).
func TestMEDualCertificateDetects(t *testing.T) {
	ctx := context.Background()
	w := Prefix(60)
	opt, err := multiEpochDual(ctx, w, 20, false, LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	early, err := multiEpochDual(ctx, w, 20, false, LBFGSOptions{MaxIter: 3})
	if err != nil {
		t.Fatal(err)
	}
	best := lossOf(t, opt, w)
	st := early.Status()
	if st.Converged || !(st.Gap > 1e-4) {
		t.Errorf("3 iterations: converged %v, gap %.2e", st.Converged, st.Gap)
	}
	if !(st.Lower <= best) || !(lossOf(t, early, w) >= best) {
		t.Errorf("3 iterations: bound %.10g and loss %.10g do not bracket the optimum %.10g", st.Lower, lossOf(t, early, w), best)
	}
}

// TestMEDualWorkers: the same bits with one worker and with two.
func TestMEDualWorkers(t *testing.T) {
	w := Prefix(80)
	run := func(procs int) *mat.SymDense {
		old := runtime.GOMAXPROCS(procs)
		defer runtime.GOMAXPROCS(old)
		f, err := multiEpochDual(context.Background(), w, 16, true, LBFGSOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return f.Gram()
	}
	a, b := run(1), run(2)
	for i := 0; i < 80; i++ {
		for j := 0; j <= i; j++ {
			if math.Float64bits(a.At(i, j)) != math.Float64bits(b.At(i, j)) {
				t.Fatalf("X[%d,%d]: %v with one worker, %v with two", i, j, a.At(i, j), b.At(i, j))
			}
		}
	}
}

// TestUseMEDual: which problems go through the dual.
func TestUseMEDual(t *testing.T) {
	for _, c := range []struct {
		w    *Workload
		b    int
		want bool
	}{
		{Prefix(2052), 342, true},
		{Prefix(1024), 32, true},
		{Prefix(1023), 342, false}, // below selMinN: the committed L-BFGS
		{Prefix(2052), 1, false},
		{Prefix(2052), 60, false}, // ⌈n/b⌉ = 35 > 32
		{Momentum(2052, 0.9, nil), 342, false},
	} {
		if got := useMEDual(c.w, c.b); got != c.want {
			t.Errorf("n=%d b=%d beta=%v: %v, want %v", c.w.N(), c.b, c.w.Beta, got, c.want)
		}
	}
}

// TestMEDualMemory: the memory estimate follows the method: the dual's
// for the prefix workload, the L-BFGS history's otherwise (Build refuses
// momentum between the two before optimizing anything).
func TestMEDualMemory(t *testing.T) {
	if got, want := MemoryBytes("multi-epoch", 2052, 342), meDualMemory(2052); got != want {
		t.Errorf("n=2052 b=342: %g, want the dual's %g", got, want)
	}
	if got, want := MemoryBytes("multi-epoch-f", 2052, 60), meLBFGSMemory(2052); got != want {
		t.Errorf("n=2052 b=60: %g, want the L-BFGS's %g", got, want)
	}
	limit := (meDualMemory(1024) + meLBFGSMemory(1024)) / 2
	p := participation.Turns(8, 128)
	_, err := Build(context.Background(), "multi-epoch", Config{Workload: Momentum(1024, 0.9, nil), Participation: p, MemoryLimit: limit})
	if err == nil || !strings.Contains(err.Error(), "needs an estimated") {
		t.Errorf("momentum above the limit: %v", err)
	}
}
