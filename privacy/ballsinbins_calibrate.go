package privacy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// Calibrating a balls-in-bins run by Monte Carlo.
//
// The samples are drawn in chunks of MonteCarloChunk, chunk i from its own
// stream (a Streams value, e.g. one derived from a run's root by label and
// i), and the per-chunk sums are added in chunk order: the account is the
// same bit for bit whatever the number of workers.
//
// Calibration uses common random numbers: every noise multiplier σ is
// tested with the same draws (the bin of each sample and the standard
// normal vector ξ behind its output, u = G·e_s + σ·L·ξ), re-generated from
// the same streams. Whether σ meets the target is one pass over the
// samples: the upper confidence bound on δ at the target ε (both
// directions, plus the margin below) is at most the target δ. The bound of
// a fixed sample is not monotone in σ in general, so the search keeps an
// invariant instead: the upper end of its bracket always passed the test
// and the lower end always failed, and it returns the upper end, within a
// relative tolerance. The true δ(ε) does decrease with σ (more noise is
// post-processing of less).
//
// A σ chosen by looking at samples is not covered by those samples'
// confidence statement, so the guarantee a calibrated run reports is
// re-estimated at the chosen σ from independent streams (see
// BallsInBinsGuarantee): that estimate, at its stated confidence, is the
// one printed. The calibration keeps a margin (BallsInBinsTarget.Margin)
// below the target δ, in standard errors of the difference between two
// independent estimates, so that the independent estimate normally lands at
// or below the target.

// MonteCarloChunk is the number of samples of one chunk of a chunked
// Monte Carlo account (each chunk has a stream of its own).
const MonteCarloChunk = 1 << 13

// Streams returns the random stream of chunk i of a Monte Carlo account.
type Streams func(i int) *rand.Rand

// bibSampler draws the Monte Carlo samples of a balls-in-bins mechanism.
type bibSampler struct {
	g, l    [][]float64
	samples int
	streams Streams
	workers int
}

func newBIBSampler(m BallsInBins, samples int, streams Streams, workers int) (*bibSampler, error) {
	m.NoiseMultiplier = 1 // the modes do not depend on it
	modes, err := m.Modes()
	if err != nil {
		return nil, err
	}
	g, l, err := gram(modes)
	if err != nil {
		return nil, err
	}
	if samples < 1 {
		return nil, fmt.Errorf("privacy: Monte Carlo needs at least one sample, got %d", samples)
	}
	return &bibSampler{g: g, l: l, samples: samples, streams: streams, workers: max(1, workers)}, nil
}

func (sp *bibSampler) chunks() int { return (sp.samples + MonteCarloChunk - 1) / MonteCarloChunk }

// chunk calls f(pos, neg) with the losses of chunk c's samples at noise
// multiplier sigma, in the order they are drawn. A loss that cannot exceed
// cut (from max ≥ L ≥ max − log b over the terms) is replaced by that upper
// bound, which saves its exponentials; cut = −∞ computes every loss.
func (sp *bibSampler) chunk(c int, sigma, cut float64, f func(pos, neg float64)) {
	r := sp.streams(c)
	b := len(sp.g)
	logB := math.Log(float64(b))
	xi, ls := make([]float64, b), make([]float64, b)
	inv := 1 / (sigma * sigma)
	terms := func(mean int) float64 {
		for i := range xi {
			xi[i] = r.NormFloat64()
		}
		hi := math.Inf(-1)
		for i := range ls {
			v := 0.0
			for k, lk := range sp.l[i][:i+1] {
				v += lk * xi[k]
			}
			shift := -sp.g[i][i] / 2
			if mean >= 0 {
				shift += sp.g[i][mean]
			}
			ls[i] = shift*inv + v/sigma
			hi = max(hi, ls[i])
		}
		return hi
	}
	n := min(MonteCarloChunk, sp.samples-c*MonteCarloChunk)
	for range n {
		p := terms(r.IntN(b))
		if p > cut {
			p = logMeanExp(ls)
		}
		q := logB - terms(-1)
		if q > cut {
			q = -logMeanExp(ls)
		}
		f(p, q)
	}
}

// each runs f(c) for every chunk on sp.workers goroutines, stopping early
// when ctx is done.
func (sp *bibSampler) each(ctx context.Context, f func(c int)) error {
	n := sp.chunks()
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(sp.workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				f(c)
			}
		}()
	}
	var err error
	for c := 0; c < n; c++ {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- c
	}
	close(next)
	wg.Wait()
	return err
}

// deltaBound is the upper confidence bound (at conf, both directions) on
// δ(eps) at noise multiplier sigma, plus z times a bound on the standard
// error of the difference of two independent estimates (z = 0: the bound
// itself).
func (sp *bibSampler) deltaBound(ctx context.Context, sigma, eps, conf, z float64) (float64, error) {
	n := sp.chunks()
	sums := make([][2]float64, n) // Σh of each side
	err := sp.each(ctx, func(c int) {
		var s [2]float64
		sp.chunk(c, sigma, eps, func(lp, ln float64) {
			if lp > eps {
				s[0] += -math.Expm1(eps - lp)
			}
			if ln > eps {
				s[1] += -math.Expm1(eps - ln)
			}
		})
		sums[c] = s
	})
	if err != nil {
		return 0, err
	}
	var t [2]float64
	for _, s := range sums { // in chunk order: the same sum whatever the workers
		t[0] += s[0]
		t[1] += s[1]
	}
	logInv, nf := math.Log(2/(1-conf)), float64(sp.samples)
	side := func(sum float64) float64 {
		// The terms lie in [0, 1], so their variance is at most their
		// mean, and the mean at most its upper bound: a standard error
		// that a sample short of the rare large losses cannot understate
		// (the samples' own spread did, in trials: the independent
		// estimate then exceeded the target about one time in five).
		up := klUpper(sum/nf, sp.samples, logInv)
		return up + z*math.Sqrt(2*up/nf)
	}
	return max(side(t[0]), side(t[1])), nil
}

// losses returns all losses at sigma, each side sorted decreasingly.
func (sp *bibSampler) losses(ctx context.Context, sigma float64) (pos, neg []float64, err error) {
	pos, neg = make([]float64, sp.samples), make([]float64, sp.samples)
	err = sp.each(ctx, func(c int) {
		i := c * MonteCarloChunk
		sp.chunk(c, sigma, math.Inf(-1), func(lp, ln float64) {
			pos[i], neg[i] = lp, ln
			i++
		})
	})
	slices.SortFunc(pos, func(a, b float64) int { return -cmpFloat(a, b) })
	slices.SortFunc(neg, func(a, b float64) int { return -cmpFloat(a, b) })
	return pos, neg, err
}

// BallsInBinsGuarantee is BallsInBinsEpsilon with chunked streams on
// workers goroutines: the same result whatever workers is.
func BallsInBinsGuarantee(ctx context.Context, m BallsInBins, delta float64, mc MonteCarlo, streams Streams, workers int) (Guarantee, error) {
	if err := mc.check(delta); err != nil {
		return Guarantee{}, err
	}
	if _, err := m.Modes(); err != nil {
		return Guarantee{}, err
	}
	sp, err := newBIBSampler(m, mc.Samples, streams, workers)
	if err != nil {
		return Guarantee{}, err
	}
	pos, neg, err := sp.losses(ctx, m.NoiseMultiplier)
	if err != nil {
		return Guarantee{}, err
	}
	return epsilonFromLosses(pos, neg, delta, mc.Confidence)
}

// BallsInBinsTarget is what BallsInBinsCalibrate aims at.
type BallsInBinsTarget struct {
	Epsilon, Delta float64
	MC             MonteCarlo
	// Margin z: the bound must stay below Delta by z standard errors of
	// the difference between two independent estimates, so that the
	// independent estimate that is reported lands below the target with
	// probability about Φ(z) (0: none).
	Margin float64
	// Hint is a noise multiplier to start from (e.g. the unamplified one);
	// RelTol the bisection's relative tolerance on it.
	Hint, RelTol float64
}

// BallsInBinsCalibrate returns the noise multiplier σ (m.NoiseMultiplier is
// ignored), within a relative t.RelTol above the smallest one the search
// finds, whose Monte Carlo upper confidence bound on δ at t.Epsilon, plus
// the margin, is at most t.Delta, with common random numbers from streams
// (see above). The search is regula falsi on log δ over log σ (Illinois
// variant), which keeps a bracket whose upper end passed and lower end
// failed.
func BallsInBinsCalibrate(ctx context.Context, m BallsInBins, t BallsInBinsTarget, streams Streams, workers int) (float64, error) {
	if err := t.MC.check(t.Delta); err != nil {
		return 0, err
	}
	switch {
	case !(t.Epsilon > 0) || math.IsInf(t.Epsilon, 0):
		return 0, fmt.Errorf("privacy: target epsilon must be positive and finite, got %g", t.Epsilon)
	case !(t.Hint > 0) || math.IsInf(t.Hint, 0):
		return 0, fmt.Errorf("privacy: the starting noise multiplier must be positive and finite, got %g", t.Hint)
	case !(t.RelTol > 0):
		return 0, fmt.Errorf("privacy: the calibration tolerance must be positive, got %g", t.RelTol)
	}
	sp, err := newBIBSampler(m, t.MC.Samples, streams, workers)
	if err != nil {
		return 0, err
	}
	// f is log(bound/δ) at log σ: ≤ 0 passes.
	f := func(x float64) (float64, error) {
		d, err := sp.deltaBound(ctx, math.Exp(x), t.Epsilon, t.MC.Confidence, t.Margin)
		return math.Log(d / t.Delta), err
	}
	lo, hi, err := bibBracket(f, math.Log(t.Hint))
	if err != nil {
		return 0, err
	}
	return bibShrink(f, lo, hi, math.Log1p(t.RelTol))
}

// bibPoint is a tested log σ and its f.
type bibPoint struct{ x, f float64 }

// bibBracket finds lo (f > 0) and hi (f ≤ 0) from x0, doubling or halving
// σ; lo.x = −∞ when every σ tried passes.
func bibBracket(f func(float64) (float64, error), x0 float64) (lo, hi bibPoint, err error) {
	hi.x = x0
	if hi.f, err = f(hi.x); err != nil {
		return
	}
	for i := 0; hi.f > 0; i++ {
		if i == 30 {
			return lo, hi, errors.New("privacy: balls-in-bins calibration found no noise multiplier whose Monte Carlo bound meets the target (use more samples)")
		}
		lo = hi
		hi.x += math.Ln2
		if hi.f, err = f(hi.x); err != nil {
			return
		}
	}
	if lo.f > 0 {
		return lo, hi, nil
	}
	for i := 0; i < 60; i++ {
		lo.x = hi.x - math.Ln2
		if lo.f, err = f(lo.x); err != nil || lo.f > 0 {
			return
		}
		hi = lo
	}
	return bibPoint{x: math.Inf(-1)}, hi, nil
}

// bibShrink narrows [lo, hi] to width tol by the Illinois method.
func bibShrink(f func(float64) (float64, error), lo, hi bibPoint, tol float64) (float64, error) {
	if math.IsInf(lo.x, -1) {
		return math.Exp(hi.x), nil
	}
	side := 0
	for hi.x-lo.x > tol {
		x := hi.x - hi.f*(hi.x-lo.x)/(hi.f-lo.f)
		if !(x > lo.x && x < hi.x) || math.IsInf(hi.f, 0) || math.IsInf(lo.f, 0) {
			x = (lo.x + hi.x) / 2
		}
		// Never a step thinner than the tolerance: it would not narrow.
		x = min(max(x, lo.x+tol/2), hi.x-tol/2)
		y, err := f(x)
		if err != nil {
			return 0, err
		}
		if y > 0 {
			lo = bibPoint{x, y}
			if side == -1 {
				hi.f /= 2
			}
			side = -1
		} else {
			hi = bibPoint{x, y}
			if side == 1 {
				lo.f /= 2
			}
			side = 1
		}
	}
	return math.Exp(hi.x), nil
}
