package strategy

import (
	"context"
	"math"

	"gonum.org/v1/gonum/floats"
)

// lbfgsResult is what minimizeLBFGS reached.
type lbfgsResult struct {
	x          []float64
	f          float64
	gradNorm   float64
	iterations int
	evals      int
	converged  bool
	message    string
}

// minimizeLBFGS minimizes a convex f from x0 with limited-memory BFGS
// (Nocedal & Wright, Alg. 7.4, two-loop recursion) and an Armijo
// backtracking line search that treats f = +Inf (infeasible, e.g. a
// non-positive-definite X) as a rejected step. fg returns f(x) and, when g is
// not nil, writes ∇f(x) into g. It stops when the objective improved by less
// than relTol (relative) over the last 20 iterations, when the line search
// cannot decrease f any more (rounding level), or after maxIter iterations.
//
// gonum/optimize is the field's L-BFGS in Go. On the rescaled BandMF
// objective of solve (prefix sums, history 20, stopping at a relative
// improvement below 1e-9 over 20 iterations) both take about the same
// iterations and evaluations, reach final losses that agree to 1e-10, and
// neither hits an infeasible (non-positive-definite) step; neither is
// faster. This one stays because switching would change every optimized
// strategy in its last bits (other iterates), and with them the noise of
// existing runs and the cached strategies, which must stay bit-identical.
//
// With halves, the direction is computed by twoLoopHalves (two goroutines)
// instead, whose dot products are summed by halves: other bits, the same
// with one thread or two.
func minimizeLBFGS(ctx context.Context, fg func(x, g []float64) float64, x0 []float64, store, maxIter int, relTol float64, progress func(int, float64), halves bool) (lbfgsResult, error) {
	dim := len(x0)
	x := append([]float64(nil), x0...)
	g := make([]float64, dim)
	f := fg(x, g)
	res := lbfgsResult{evals: 1}
	if math.IsInf(f, 1) || math.IsNaN(f) {
		res.x, res.f, res.message = x, f, "infeasible start"
		return res, nil
	}
	s := make([][]float64, 0, store)
	y := make([][]float64, 0, store)
	rho := make([]float64, 0, store)
	alpha := make([]float64, store)
	d := make([]float64, dim)
	xn := make([]float64, dim)
	gn := make([]float64, dim)
	hist := []float64{f}
	var pair spinPair
	for it := 1; it <= maxIter; it++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		// d = −H g by the two-loop recursion.
		var slope float64
		if halves {
			slope = twoLoopHalves(&pair, d, g, s, y, rho, alpha)
		} else {
			slope = twoLoop(d, g, s, y, rho, alpha)
		}
		if !(slope < 0) {
			// Not a descent direction: restart from steepest descent.
			s, y, rho = s[:0], y[:0], rho[:0]
			copy(d, g)
			floats.Scale(-1/math.Max(floats.Norm(g, 2), 1e-300), d)
			slope = floats.Dot(g, d)
		}
		fn, evals, ok, haveGrad := backtrack(fg, x, d, xn, gn, f, slope)
		res.evals += evals
		res.iterations = it
		if !ok {
			res.converged = true
			res.message = "line search stalled at rounding level"
			break
		}
		if !haveGrad {
			fg(xn, gn)
			res.evals++
		}
		// Update the history.
		var sk, yk []float64
		if len(s) == store {
			sk, yk = s[0], y[0]
			s, y, rho = s[1:], y[1:], rho[1:]
		} else {
			sk, yk = make([]float64, dim), make([]float64, dim)
		}
		floats.SubTo(sk, xn, x)
		floats.SubTo(yk, gn, g)
		if sy := floats.Dot(sk, yk); sy > 0 {
			s, y, rho = append(s, sk), append(y, yk), append(rho, 1/sy)
		}
		x, xn = xn, x // the accepted point becomes the iterate (no copy)
		g, gn = gn, g
		f = fn
		hist = append(hist, f)
		if progress != nil {
			progress(it, f)
		}
		if len(hist) > 20 {
			old := hist[len(hist)-21]
			if (old-f)/math.Abs(f) < relTol {
				res.converged = true
				res.message = "relative improvement over 20 iterations below tolerance"
				break
			}
		}
		if floats.Norm(g, 2) == 0 {
			res.converged = true
			res.message = "zero gradient"
			break
		}
	}
	if res.message == "" {
		res.message = "iteration limit"
	}
	res.x, res.f, res.gradNorm = x, f, floats.Norm(g, 2)
	return res, nil
}

// twoLoop is the two-loop recursion of minimizeLBFGS: it writes the
// direction d = −H g, H the inverse Hessian estimate of the history s, y,
// rho (alpha is scratch of its length), and returns the slope gᵀd.
func twoLoop(d, g []float64, s, y [][]float64, rho, alpha []float64) (slope float64) {
	copy(d, g)
	for i := len(s) - 1; i >= 0; i-- {
		alpha[i] = rho[i] * floats.Dot(s[i], d)
		floats.AddScaled(d, -alpha[i], y[i])
	}
	gamma := 1.0
	if k := len(s) - 1; k >= 0 {
		gamma = floats.Dot(s[k], y[k]) / floats.Dot(y[k], y[k])
	} else {
		gamma = 1 / math.Max(floats.Norm(g, 2), 1e-300)
	}
	floats.Scale(gamma, d)
	for i := range s {
		beta := rho[i] * floats.Dot(y[i], d)
		floats.AddScaled(d, alpha[i]-beta, s[i])
	}
	floats.Scale(-1, d)
	return floats.Dot(g, d)
}

// backtrack is minimizeLBFGS' Armijo line search from x (value f) along d
// (slope gᵀd): steps 1, ½, ¼, … (at most 60 trials) into xn until one
// decreases f enough. It returns the accepted trial's value, the number of
// evaluations of fg, whether a trial was accepted and whether gn holds its
// gradient. The first trial is evaluated with its gradient (it is usually
// accepted); the backtracking trials without, and the accepted one then
// again with it (by the caller). fg's value does not depend on whether the
// gradient is asked for, so the iterates are those of evaluating every
// trial without it.
func backtrack(fg func(x, g []float64) float64, x, d, xn, gn []float64, f, slope float64) (fn float64, evals int, ok, haveGrad bool) {
	step := 1.0
	for ls := 0; ls < 60; ls++ {
		floats.AddScaledTo(xn, x, step, d)
		if ls == 0 {
			fn = fg(xn, gn)
		} else {
			fn = fg(xn, nil)
		}
		evals++
		if fn <= f+1e-4*step*slope {
			return fn, evals, true, ls == 0
		}
		step *= 0.5
	}
	return fn, evals, false, false
}

// twoLoopHalves is the two-loop recursion of minimizeLBFGS (d = −H g) with
// every vector split in two halves at a fixed point, the second half's
// part of each step on the helper goroutine of p: every dot product is the
// first half's floats.Dot plus the second's, every other operation is
// elementwise. So the result depends on the split, not on the number of
// threads. The history vectors are streamed from memory twice per
// iteration (tens of MB for BandMF at n = 2052 with 342 bands), and two
// cores stream them faster than one. It returns the slope g·d.
func twoLoopHalves(p *spinPair, d, g []float64, s, y [][]float64, rho, alpha []float64) float64 {
	n := len(d)
	mid := (n / 2) &^ 7
	p.start()
	defer p.stop()
	dot := func(a, b []float64) float64 {
		var second float64
		t := p.give(func() { second = floats.Dot(a[mid:n], b[mid:n]) })
		first := floats.Dot(a[:mid], b[:mid])
		p.wait(t)
		return first + second
	}
	each := func(f func(lo, hi int)) {
		t := p.give(func() { f(mid, n) })
		f(0, mid)
		p.wait(t)
	}
	each(func(lo, hi int) { copy(d[lo:hi], g[lo:hi]) })
	for i := len(s) - 1; i >= 0; i-- {
		alpha[i] = rho[i] * dot(s[i], d)
		a, yi := -alpha[i], y[i]
		each(func(lo, hi int) { floats.AddScaled(d[lo:hi], a, yi[lo:hi]) })
	}
	gamma := 1.0
	if k := len(s) - 1; k >= 0 {
		gamma = dot(s[k], y[k]) / dot(y[k], y[k])
	} else {
		gamma = 1 / math.Max(math.Sqrt(dot(g, g)), 1e-300)
	}
	each(func(lo, hi int) { floats.Scale(gamma, d[lo:hi]) })
	for i := range s {
		c, si := alpha[i]-rho[i]*dot(y[i], d), s[i]
		each(func(lo, hi int) { floats.AddScaled(d[lo:hi], c, si[lo:hi]) })
	}
	each(func(lo, hi int) { floats.Scale(-1, d[lo:hi]) })
	return dot(g, d)
}
