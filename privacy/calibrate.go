package privacy

import (
	"context"
	"fmt"
	"math"
)

// piloted is implemented by accountants that offer a cheaper, coarser
// accountant of the same kind (or nil): Calibrate first calibrates with it
// and then searches near its answer.
type piloted interface{ pilot() Accountant }

// Calibration search range for the noise multiplier.
const (
	calibrateMinSigma = 1e-6
	calibrateMaxSigma = 1e6
)

// MinCalibrateTolerance is the smallest relative tolerance Calibrate
// accepts: 2^-52, the spacing of float64 values just above 1, the finest
// relative resolution a noise multiplier has everywhere.
const MinCalibrateTolerance = 0x1p-52

// calibrateMaxEvals caps the accountant evaluations of one search (a pilot
// has its own): a second line of defence, far above what the search needs
// (tens, at most about three per halving of the bracket). A variable so
// that a test can lower it.
var calibrateMaxEvals = 400

// Calibrate returns the smallest noise multiplier sigma in [1e-6, 1e6] for
// which the event factory(sigma), composed once into a fresh
// newAccountant(), certifies epsilon at delta, together with the guarantee
// achieved at that sigma. The answer is within relative tolerance relTol
// (MinCalibrateTolerance <= relTol < 1) of the exact threshold, always on the
// safe side: the returned sigma meets the target, sigma/(1+relTol) does not
// (unless sigma is the lower end of the range).
//
// It assumes the accountant's epsilon is non-increasing in sigma. The search
// keeps a bracket [lo, hi] with lo failing and hi meeting the target and
// shrinks it by regula falsi on log epsilon against log sigma (Illinois
// variant, with bisection when that stalls), which needs far fewer accountant
// evaluations than bisection for the smooth curves accountants produce.
// When the bracket's ends in log sigma are adjacent float64 values before
// its width reaches relTol (from sigma of a few thousand on, for relTol near
// 1e-15), the search goes on by bisection on sigma itself. Targets no sigma
// can reach (even sigma = 1e6 gives a larger epsilon, or the accountant
// cannot certify anything at delta) return an error naming the target, as
// does a search that has not converged after a few hundred evaluations.
func Calibrate(epsilon, delta float64, factory func(sigma float64) Event, newAccountant func() Accountant, relTol float64) (sigma float64, g Guarantee, err error) {
	return CalibrateContext(context.Background(), epsilon, delta, factory, newAccountant, relTol)
}

// CalibrateContext is Calibrate ending early with ctx's error (wrapped)
// when ctx is done: it checks ctx before every accountant evaluation, and
// accountants whose evaluations are long (PLD) check it during them too.
func CalibrateContext(ctx context.Context, epsilon, delta float64, factory func(sigma float64) Event, newAccountant func() Accountant, relTol float64) (sigma float64, g Guarantee, err error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, Guarantee{}, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, Guarantee{}, err
	}
	if !(relTol >= MinCalibrateTolerance && relTol < 1) {
		return 0, Guarantee{}, fmt.Errorf("privacy: calibration tolerance must be in [%.2g, 1) (float64 cannot resolve a noise multiplier more finely), got %g", MinCalibrateTolerance, relTol)
	}
	c := &calibration{ctx: ctx, epsilon: epsilon, delta: delta, factory: factory, newAccountant: newAccountant,
		target: fmt.Sprintf("ε = %g at δ = %g", epsilon, delta),
		uMin:   math.Log(calibrateMinSigma), uMax: math.Log(calibrateMaxSigma), minJump: math.Log(2)}
	// Start at sigma = 1, or where a pilot accountant meets the target.
	u0 := 0.0
	if pa, ok := newAccountant().(piloted); ok && pa.pilot() != nil {
		if s, _, err := CalibrateContext(ctx, epsilon, delta, factory, pa.pilot, 1e-4); err == nil {
			u0, c.minJump = math.Log(s), 1e-4
		}
		if err := ctx.Err(); err != nil {
			return 0, Guarantee{}, fmt.Errorf("privacy: calibrating for %s: %w", c.target, err)
		}
	}
	lo, hi, done, err := c.bracket(u0)
	switch {
	case err != nil:
		return 0, Guarantee{}, err
	case done:
		return calibrateMinSigma, hi.gu, nil
	}
	tol := math.Log1p(relTol)
	if lo, hi, err = c.shrink(lo, hi, tol); err != nil {
		return 0, Guarantee{}, err
	}
	if hi.u-lo.u <= tol {
		return math.Exp(hi.u), hi.gu, nil
	}
	s, g, err := c.shrinkSigma(math.Exp(lo.u), math.Exp(hi.u), hi.gu, relTol)
	if err != nil {
		return 0, Guarantee{}, err
	}
	return s, g, nil
}

// calibration is Calibrate's search.
type calibration struct {
	ctx            context.Context
	evals          int // accountant evaluations so far
	epsilon, delta float64
	factory        func(sigma float64) Event
	newAccountant  func() Accountant
	target         string
	uMin, uMax     float64 // the range of log sigma
	minJump        float64 // the least step outside a bracket end
	hard           error   // the accountant cannot account the event at all
}

// calPoint is a point of the search: u = log sigma and g = log(ε/target),
// > 0 when sigma fails, <= 0 when it meets, +Inf when the accountant cannot
// certify any epsilon there (which counts as failing).
type calPoint struct {
	u, g  float64
	gu    Guarantee
	noEps error // the accountant's Epsilon error
}

func (c *calibration) eval(u float64) calPoint {
	return c.evalSigma(u, math.Exp(u))
}

// evalSigma evaluates the accountant at sigma, recording the point as u
// (the search's coordinate). It sets hard, and the point fails, when ctx
// is done or the search has used calibrateMaxEvals evaluations.
func (c *calibration) evalSigma(u, sigma float64) calPoint {
	p := calPoint{u: u, g: math.Inf(1)}
	if err := c.ctx.Err(); err != nil {
		c.hard = fmt.Errorf("privacy: calibrating for %s: %w", c.target, err)
		return p
	}
	if c.evals >= calibrateMaxEvals {
		c.hard = fmt.Errorf("privacy: calibrating for %s: no convergence in %d accountant evaluations", c.target, c.evals)
		return p
	}
	c.evals++
	a := c.newAccountant()
	if err := a.Compose(c.factory(sigma), 1); err != nil {
		c.hard = fmt.Errorf("privacy: calibrating for %s: %w", c.target, err)
		return p
	}
	p.gu, p.noEps = epsilonContext(c.ctx, a, c.delta)
	if err := c.ctx.Err(); err != nil {
		c.hard = fmt.Errorf("privacy: calibrating for %s: %w", c.target, err)
		return calPoint{u: u, g: math.Inf(1)}
	}
	if p.noEps != nil {
		return p
	}
	p.g = math.Log(p.gu.Epsilon) - math.Log(c.epsilon)
	switch {
	case p.gu.Epsilon <= c.epsilon && !(p.g <= 0):
		p.g = 0 // ε = target = 0
	case p.gu.Epsilon > c.epsilon && !(p.g > 0):
		p.g = math.SmallestNonzeroFloat64
	}
	return p
}

func meets(p calPoint) bool { return p.noEps == nil && p.g <= 0 }

// jump is the next point outside a bracket end, extrapolated from
// log(ε/target) at the end: down (smaller sigma) by half of it, as if
// epsilon were proportional to 1/sigma² (so as not to overshoot into small
// sigma, which is costly for the PLD accountant), up by 1.1 times it, as if
// it were proportional to 1/sigma; at least minJump, at most a factor 64.
func (c *calibration) jump(p calPoint, down bool) float64 {
	d := math.Log(8)
	if !math.IsInf(p.g, 0) && p.g != 0 {
		f := 1.1
		if down {
			f = 0.5
		}
		d = math.Min(math.Max(math.Abs(p.g)*f, c.minJump), math.Log(64))
	}
	if down {
		return math.Max(p.u-d, c.uMin)
	}
	return math.Min(p.u+d, c.uMax)
}

// bracket finds lo failing and hi meeting the target, from u0; done is set
// (with hi) when the lower end of the range meets it.
func (c *calibration) bracket(u0 float64) (lo, hi calPoint, done bool, err error) {
	p := c.eval(u0)
	if c.hard != nil {
		return lo, hi, false, c.hard
	}
	if meets(p) {
		hi = p
		for {
			if hi.u <= c.uMin {
				return lo, hi, true, nil
			}
			p := c.eval(c.jump(hi, true))
			if c.hard != nil {
				return lo, hi, false, c.hard
			}
			if !meets(p) {
				return p, hi, false, nil
			}
			hi = p
		}
	}
	lo = p
	for {
		if lo.u >= c.uMax {
			if lo.noEps != nil {
				return lo, hi, false, fmt.Errorf("privacy: target %s unreachable: even σ = %g: %w", c.target, calibrateMaxSigma, lo.noEps)
			}
			return lo, hi, false, fmt.Errorf("privacy: target %s unreachable: even σ = %g gives %v", c.target, calibrateMaxSigma, lo.gu)
		}
		p := c.eval(c.jump(lo, false))
		if c.hard != nil {
			return lo, hi, false, c.hard
		}
		if meets(p) {
			return lo, p, false, nil
		}
		lo = p
	}
}

// shrink narrows the bracket to width tol (in log sigma), or until its ends
// are adjacent float64 values, and returns it: regula falsi on (u, g) with
// the Illinois modification (the value kept at an end that survives two
// steps in a row is halved), bisection when the width does not halve in two
// steps or the fail end has no finite value.
func (c *calibration) shrink(lo, hi calPoint, tol float64) (calPoint, calPoint, error) {
	ga, gb := lo.g, hi.g
	lastWidth, stall := hi.u-lo.u, 0
	side := 0 // +1: the last step moved lo, -1: it moved hi
	for hi.u-lo.u > tol && math.Nextafter(lo.u, hi.u) < hi.u {
		w := hi.u - lo.u
		x := lo.u + w/2
		if stall < 2 && !math.IsInf(ga, 0) && !math.IsInf(gb, 0) && ga > 0 && gb < 0 {
			x = hi.u - gb*w/(gb-ga)
		}
		// Stay a little inside the bracket so that every step shrinks it,
		// and the last one closes it.
		m := math.Min(w/4, tol/2)
		x = math.Min(math.Max(x, lo.u+m), hi.u-m)
		p := c.eval(x)
		if c.hard != nil {
			return lo, hi, c.hard
		}
		if meets(p) {
			if side == -1 {
				ga /= 2
			}
			hi, gb, side = p, p.g, -1
		} else {
			if side == +1 {
				gb /= 2
			}
			lo, ga, side = p, p.g, +1
		}
		if nw := hi.u - lo.u; nw > lastWidth/2 {
			stall++
		} else {
			stall, lastWidth = 0, nw
		}
		if stall > 2 {
			stall = 0
		}
	}
	return lo, hi, nil
}

// shrinkSigma bisects on sigma the bracket (lo failing, hi meeting with
// guarantee g) until hi/lo - 1 <= relTol or the ends are adjacent float64
// values, and returns its meeting end.
func (c *calibration) shrinkSigma(lo, hi float64, g Guarantee, relTol float64) (float64, Guarantee, error) {
	for hi-lo > relTol*lo {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		p := c.evalSigma(math.Log(mid), mid)
		if c.hard != nil {
			return 0, g, c.hard
		}
		if meets(p) {
			hi, g = mid, p.gu
		} else {
			lo = mid
		}
	}
	return hi, g, nil
}
