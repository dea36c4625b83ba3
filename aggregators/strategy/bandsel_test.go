package strategy

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestSelEvalMatchesRows: the selected-inversion evaluator (loss tr(K⁻¹) and
// G from reverse-mode differentiation) agrees with solving with every row of
// A (bandProblem.lossGrad) to 1e-11 relative, on prefix sums and on momentum
// workloads with a learning-rate schedule, for bandwidths from 1 to n, at a
// perturbed start (a generic positive definite X).
func TestSelEvalMatchesRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	eta := func(n int) []float64 {
		e := make([]float64, n)
		for i := range e {
			e[i] = 0.5 + r.Float64()
		}
		return e
	}
	for _, c := range []struct {
		w  *Workload
		bw int
	}{{Prefix(1), 1}, {Prefix(2), 2}, {Prefix(37), 1}, {Prefix(37), 2}, {Prefix(64), 5}, {Prefix(101), 17}, {Prefix(60), 60},
		{Momentum(50, 0, eta(50)), 7}, {Momentum(40, 0, eta(40)), 40},
		// Windows of parMinRows rows and more are split in two parts (par):
		// a full window, bw = n, and a schedule.
		{Prefix(400), 150}, {Prefix(130), 130}, {Momentum(300, 0, eta(300)), 128}} {
		p := newBandProblem(c.w, c.bw, func(i, j int) bool { return true })
		theta := p.start(nil)
		for k := range theta {
			theta[k] *= 1 + 0.05*r.NormFloat64()*math.Min(1, 8/float64(c.bw))
		}
		xs := make([]float64, p.n*p.bw)
		p.xFromParams(xs, theta)
		f, ok := reverseCholesky(xs, p.n, p.bw)
		if !ok {
			t.Fatalf("n=%d bw=%d: X not positive definite", p.n, p.bw)
		}
		want := make([]float64, p.n*p.bw)
		lw := p.lossGrad(f, want)
		e := newSelEval(c.w, c.bw)
		got := make([]float64, p.n*p.bw)
		lg := e.eval(xs, got)
		if math.Abs(lg-lw) > 1e-11*lw || e.eval(xs, nil) != lg {
			t.Fatalf("%s n=%d bw=%d: loss %v, rows %v", c.w.Name, p.n, p.bw, lg, lw)
		}
		scale := 0.0
		for _, v := range want {
			scale = math.Max(scale, math.Abs(v))
		}
		worst := 0.0
		for i := range want {
			worst = math.Max(worst, math.Abs(got[i]-want[i])/scale)
		}
		t.Logf("%s n=%d bw=%d: loss rel diff %.2g, G max diff / max |G| %.2g", c.w.Name, p.n, p.bw, math.Abs(lg-lw)/lw, worst)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-11*scale {
				t.Fatalf("%s n=%d bw=%d: G entry %d (row %d): %v, rows %v", c.w.Name, p.n, p.bw, i, i/p.bw, got[i], want[i])
			}
		}
	}
	// A custom workload has no known banded inverse; with momentum the
	// row solves are kept (accuracy).
	if newSelEval(mustCustom(t, Prefix(8)), 3) != nil || newSelEval(Momentum(8, 0.9, nil), 3) != nil {
		t.Error("custom or momentum workload: want no selected-inversion evaluator")
	}
}

// TestSelEvalWorkers: windows of parMinRows rows and more are split over
// two goroutines when GOMAXPROCS allows; the loss and G have the same bits
// with one thread and with two, and with two evaluations running at once
// (four goroutines spinning on two threads: slower, but the same).
func TestSelEvalWorkers(t *testing.T) {
	for _, c := range []struct {
		w  *Workload
		bw int
	}{{Prefix(400), 150}, {Momentum(300, 0, cosineEta(300)), 128}, {Prefix(150), 150}} {
		p := newBandProblem(c.w, c.bw, func(i, j int) bool { return true })
		xs := make([]float64, p.n*p.bw)
		p.xFromParams(xs, p.start(nil))
		run := func(procs int) (float64, []float64, uint64) {
			old := runtime.GOMAXPROCS(procs)
			defer runtime.GOMAXPROCS(old)
			e := newSelEval(c.w, c.bw)
			g := make([]float64, p.n*p.bw)
			return e.eval(xs, g), g, e.pair.seq.Load()
		}
		l1, g1, passes1 := run(1)
		l2, g2, passes2 := run(2)
		if passes1 != 0 || passes2 == 0 {
			t.Fatalf("n=%d bw=%d: %d passes handed to a helper with one thread, %d with two", p.n, c.bw, passes1, passes2)
		}
		same := func(what string, l float64, g []float64) {
			if !sameBits(l, l1) {
				t.Fatalf("n=%d bw=%d %s: loss %v, one thread %v", p.n, c.bw, what, l, l1)
			}
			for i := range g {
				if !sameBits(g[i], g1[i]) {
					t.Fatalf("n=%d bw=%d %s: G entry %d %v, one thread %v", p.n, c.bw, what, i, g[i], g1[i])
				}
			}
		}
		same("two threads", l2, g2)
		var wg sync.WaitGroup
		res := make([][]float64, 2)
		loss := make([]float64, 2)
		for k := range res {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e := newSelEval(c.w, c.bw)
				res[k] = make([]float64, p.n*p.bw)
				loss[k] = e.eval(xs, res[k])
			}()
		}
		wg.Wait()
		same("two at once", loss[0], res[0])
		same("two at once", loss[1], res[1])
	}
}

// cosineEta is a learning-rate schedule for tests: a cosine decay from 1
// to 0.1 over n rounds.
func cosineEta(n int) []float64 {
	e := make([]float64, n)
	for i := range e {
		e[i] = 0.1 + 0.45*(1+math.Cos(math.Pi*float64(i)/float64(n)))
	}
	return e
}

func mustCustom(t *testing.T, w *Workload) *Workload {
	c, err := Custom("file", w.A())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSelKernelsBitIdentical: the AVX2 kernels of the selected-inversion
// evaluator give the bits of their Go forms (so results do not depend on
// the CPU or on -tags purego), for every length from 0 to 70.
func TestSelKernelsBitIdentical(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2: the Go forms are used")
	}
	r := rand.New(rand.NewPCG(5, 6))
	vec := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = r.NormFloat64() * math.Exp(3*r.NormFloat64())
		}
		return v
	}
	for n := 0; n <= 70; n++ {
		row, w, y, srow, yb, wb := vec(n), vec(n), vec(n), vec(n), vec(n), vec(n)
		wa, yba := r.NormFloat64(), r.NormFloat64()
		y2, srow2, wb2 := append([]float64(nil), y...), append([]float64(nil), srow...), append([]float64(nil), wb...)
		if a, b := selFwdAVX2(row, w, y, wa, false), selFwdGo(row, w, y2, wa, false); !sameBits(a, b) {
			t.Fatalf("n=%d: forward sum %v, Go %v", n, a, b)
		}
		if a, b := selRevAVX2(row, srow, w, yb, wb, wa, yba, false), selRevGo(row, srow2, w, yb, wb2, wa, yba, false); !sameBits(a, b) {
			t.Fatalf("n=%d: reverse sum %v, Go %v", n, a, b)
		}
		// The 16-lane forms, on copies of the outputs of the 4-lane ones.
		y3, y4 := append([]float64(nil), y...), append([]float64(nil), y...)
		srow3, srow4 := append([]float64(nil), srow...), append([]float64(nil), srow...)
		wb3, wb4 := append([]float64(nil), wb...), append([]float64(nil), wb...)
		if a, b := selFwdAVX2(row, w, y3, wa, true), selFwdGo(row, w, y4, wa, true); !sameBits(a, b) {
			t.Fatalf("n=%d: 16-lane forward sum %v, Go %v", n, a, b)
		}
		if a, b := selRevAVX2(row, srow3, w, yb, wb3, wa, yba, true), selRevGo(row, srow4, w, yb, wb4, wa, yba, true); !sameBits(a, b) {
			t.Fatalf("n=%d: 16-lane reverse sum %v, Go %v", n, a, b)
		}
		for i := 0; i < n; i++ {
			if !sameBits(y3[i], y4[i]) || !sameBits(srow3[i], srow4[i]) || !sameBits(wb3[i], wb4[i]) {
				t.Fatalf("n=%d, entry %d: 16-lane y %v/%v srow %v/%v wb %v/%v", n, i, y3[i], y4[i], srow3[i], srow4[i], wb3[i], wb4[i])
			}
		}
		ax, ax2 := vec(n), []float64(nil)
		ax2 = append(ax2, ax...)
		selAxpyAVX2(wa, row, ax)
		selAxpyGo(wa, row, ax2)
		for i := 0; i < n; i++ {
			if !sameBits(ax[i], ax2[i]) {
				t.Fatalf("n=%d, entry %d: axpy %v, Go %v", n, i, ax[i], ax2[i])
			}
			if !sameBits(y[i], y2[i]) || !sameBits(srow[i], srow2[i]) || !sameBits(wb[i], wb2[i]) {
				t.Fatalf("n=%d, entry %d: y %v/%v srow %v/%v wb %v/%v", n, i, y[i], y2[i], srow[i], srow2[i], wb[i], wb2[i])
			}
		}
	}
}

// TestBandMFSelOptimum: at n ≥ selMinN BandMF optimizes through the selected
// inverse; it reaches the optimum the row solves reach (same start, same
// L-BFGS, default tolerance), to 1e-9 relative in the loss and 1e-3 in X
// (the optimum is flat: 7e-5 apart at the default tolerance). Prefix sums,
// n = 1024, 6 bands, and the unequal-norm variant under (4, 256).
func TestBandMFSelOptimum(t *testing.T) {
	if testing.Short() {
		t.Skip("two BandMF optimizations at n = 1024 (a few seconds); run without -short")
	}
	t.Parallel()
	w := Prefix(selMinN)
	for _, unequal := range []bool{false, true} {
		t.Run(fmt.Sprintf("unequal=%v", unequal), func(t *testing.T) {
			t.Parallel()
			solve := func(sel bool) *Factorization {
				p := newBandProblem(w, 6, func(i, j int) bool { return true })
				if unequal {
					p.unequal(256)
				}
				if p.selOn != true {
					t.Fatal("n = selMinN: want the selected-inverse evaluator")
				}
				p.selOn = sel
				t0 := time.Now()
				f, err := p.solve(context.Background(), LBFGSOptions{})
				t.Logf("unequal=%v sel=%v: %v", unequal, sel, time.Since(t0))
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
			a, b := solve(true), solve(false)
			// tr(AᵀA X⁻¹) of each result, through the row solves.
			loss := func(f *Factorization) float64 {
				p := newBandProblem(w, 6, func(i, j int) bool { return true })
				p.selOn = false
				xs := make([]float64, p.n*p.bw)
				x := f.Gram()
				for i := 0; i < p.n; i++ {
					for d := 0; d < p.bw && d <= i; d++ {
						xs[i*p.bw+d] = x.At(i, i-d)
					}
				}
				return p.eval(xs, nil, nil)
			}
			la, lb := loss(a), loss(b)
			if math.Abs(la-lb) > 1e-9*lb {
				t.Errorf("unequal=%v: loss %.12g through the selected inverse, %.12g through the rows", unequal, la, lb)
			}
			var d float64
			xa, xb := a.Gram(), b.Gram()
			for i := 0; i < w.N(); i++ {
				for j := max(0, i-5); j <= i; j++ {
					d = math.Max(d, math.Abs(xa.At(i, j)-xb.At(i, j)))
				}
			}
			if d > 1e-3 {
				t.Errorf("unequal=%v: X differs by %.3g", unequal, d)
			}
			t.Logf("unequal=%v: loss %.12g vs %.12g, max |ΔX| %.2g, iterations %d vs %d", unequal, la, lb, d, a.Status().Iterations, b.Status().Iterations)
		})
	}
}
