package privacy

import (
	"fmt"
	"math"
	"math/cmplx"

	"gonum.org/v1/gonum/dsp/fourier"
)

// MethodPLD is the Method of guarantees from the PLD accountant.
const MethodPLD = "pld"

// PLDConfig sets the discretization of the PLD accountant.
type PLDConfig struct {
	// Discretization is the grid step of the privacy loss (default 1.5e-5,
	// which reproduces BMF23's dp_accounting numbers to about +0.015 for
	// 2052 steps). Losses are rounded up to the grid, so epsilon is biased
	// upward, by at most steps × Discretization. Coarser grids are faster.
	Discretization float64
	// MaxSize caps the FFT length (a power of two; default 1 << 24).
	MaxSize int
}

// PLD is a privacy-loss-distribution accountant (Koskela, Jälkö and Honkela
// 2020; dp_accounting's pld package) for Gaussians and Poisson-sampled
// Gaussians under add/remove adjacency, ALGORITHMS.md §3.4. Each distinct step
// is discretized pessimistically (the loss of every x is rounded up to the
// grid; losses beyond the truncation go to +Inf), the steps are composed by
// FFT on a circular grid wide enough for the composed distribution, and delta
// is the hockey-stick divergence of the result, the larger of the remove and
// add directions. It is the tightest accountant here for sampled Gaussians;
// for non-sampled ones NewExact is exact and cheaper. The work happens in
// Epsilon and Delta (cached until the next Compose); Compose only records.
// A PLD is not safe for concurrent use.
type PLD struct {
	cfg   PLDConfig
	steps []pldStep
	cache []*pldDist // composed distributions of steps; nil after Compose
}

// pldStep is count repetitions of a Gaussian with multiplier sigma on a
// Poisson sample with probability q (q = 1: no sampling).
type pldStep struct {
	q, sigma float64
	count    int
}

var _ Accountant = (*PLD)(nil)

// NewPLD returns an empty PLD accountant; zero fields of cfg take their
// defaults. It panics on a negative discretization or a MaxSize that is not a
// power of two (programmer errors).
func NewPLD(cfg PLDConfig) Accountant {
	if cfg.Discretization == 0 {
		cfg.Discretization = 1.5e-5
	}
	if cfg.MaxSize == 0 {
		cfg.MaxSize = 1 << 24
	}
	if !(cfg.Discretization > 0) || cfg.MaxSize < 2 || cfg.MaxSize&(cfg.MaxSize-1) != 0 {
		panic(fmt.Sprintf("privacy: bad PLD config %+v", cfg))
	}
	return &PLD{cfg: cfg}
}

// Compose implements Accountant. Accepted: Gaussians, Poisson-sampled
// Gaussians (or compositions of Gaussians inside a sample) and their self-
// and plain compositions.
func (a *PLD) Compose(e Event, count int) error {
	if err := checkCompose(e, count); err != nil {
		return err
	}
	var add []pldStep
	if err := pldSteps(&add, e, count); err != nil {
		return err
	}
	if len(add) > 0 {
		a.steps = append(a.steps, add...)
		a.cache = nil
	}
	return nil
}

func pldSteps(dst *[]pldStep, e Event, count int) error {
	if count == 0 {
		return nil
	}
	switch e := e.(type) {
	case Gaussian:
		if !math.IsInf(e.NoiseMultiplier, 1) {
			*dst = append(*dst, pldStep{1, e.NoiseMultiplier, count})
		}
		return nil
	case SelfComposed:
		return pldSteps(dst, e.Event, count*e.Count)
	case Composed:
		for _, x := range e.Events {
			if err := pldSteps(dst, x, count); err != nil {
				return err
			}
		}
		return nil
	case PoissonSampled:
		if e.Probability == 0 {
			return nil
		}
		sigma, ok := gaussianEquivalent(e.Event)
		if !ok {
			return errUnsupported("PLD", e, "Poisson sampling is supported for Gaussian events only")
		}
		if !math.IsInf(sigma, 1) {
			*dst = append(*dst, pldStep{e.Probability, sigma, count})
		}
		return nil
	}
	return errUnsupported("PLD", e, "only (Poisson-sampled) Gaussians")
}

// Delta implements Accountant.
func (a *PLD) Delta(epsilon float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	if len(a.steps) == 0 {
		return 0, nil
	}
	dists, err := a.distributions()
	if err != nil {
		return 0, err
	}
	d := 0.0
	for _, c := range dists {
		d = math.Max(d, c.delta(epsilon))
	}
	return d, nil
}

// Epsilon implements Accountant.
func (a *PLD) Epsilon(delta float64) (Guarantee, error) {
	if err := checkDelta(delta); err != nil {
		return Guarantee{}, err
	}
	g := Guarantee{Delta: delta, Method: MethodPLD}
	if len(a.steps) == 0 || delta >= 1 {
		return g, nil
	}
	dists, err := a.distributions()
	if err != nil {
		return g, err
	}
	f := func(eps float64) float64 {
		d := 0.0
		for _, c := range dists {
			d = math.Max(d, c.delta(eps))
		}
		return d
	}
	if f(0) <= delta {
		return g, nil
	}
	inf := 0.0
	for _, c := range dists {
		inf = math.Max(inf, c.pInf)
	}
	if inf >= delta {
		return g, fmt.Errorf("privacy: PLD accountant: δ = %g is below the truncated loss mass %g; no finite ε", delta, inf)
	}
	eps, err := solveDecreasing(f, delta, 0)
	if err != nil {
		return g, fmt.Errorf("privacy: PLD accountant: epsilon at delta %g: %w", delta, err)
	}
	g.Epsilon = eps
	return g, nil
}

// pldDist is a discretized privacy-loss distribution: mass p[i] at loss
// (lo+i)·step, plus pInf at +Inf. s1 and s2 are suffix sums for delta.
type pldDist struct {
	lo   int
	step float64
	p    []float64
	pInf float64
	s1   []float64 // s1[i] = sum_{j>=i} p[j]
	s2   []float64 // s2[i] = sum_{j>=i} p[j] e^{-loss_j}, for loss_j >= 0 only
	zero int       // index of the first non-negative loss
}

// prepare computes the suffix sums used by delta.
func (d *pldDist) prepare() {
	n := len(d.p)
	d.s1 = make([]float64, n+1)
	d.s2 = make([]float64, n+1)
	d.zero = min(max(-d.lo, 0), n)
	for i := n - 1; i >= 0; i-- {
		d.s1[i] = d.s1[i+1] + d.p[i]
		if i >= d.zero {
			d.s2[i] = d.s2[i+1] + d.p[i]*math.Exp(-float64(d.lo+i)*d.step)
		}
	}
}

// delta is the hockey-stick divergence sum_k p_k (1 - e^{eps - loss_k})_+ + pInf
// for eps >= 0.
func (d *pldDist) delta(eps float64) float64 {
	// First index with loss > eps.
	i := int(math.Floor(eps/d.step)) + 1 - d.lo
	i = min(max(i, d.zero), len(d.p))
	for i > d.zero && float64(d.lo+i-1)*d.step > eps {
		i--
	}
	for i < len(d.p) && float64(d.lo+i)*d.step <= eps {
		i++
	}
	v := d.s1[i] - math.Exp(eps)*d.s2[i]
	return math.Min(1, math.Max(0, v)+d.pInf)
}

// distributions composes all steps in the remove direction and (for sampled
// steps) the add direction.
func (a *PLD) distributions() ([]*pldDist, error) {
	if a.cache != nil {
		return a.cache, nil
	}
	d, err := a.distributionsUncached()
	if err == nil {
		a.cache = d
	}
	return d, err
}

func (a *PLD) distributionsUncached() ([]*pldDist, error) {
	sampled := false
	for _, s := range a.steps {
		sampled = sampled || s.q < 1
	}
	r, err := a.compose(false)
	if err != nil || !sampled {
		return []*pldDist{r}, err
	}
	ad, err := a.compose(true)
	return []*pldDist{r, ad}, err
}

// pldTail is the standard-normal quantile beyond which mass is treated as
// lying at the truncation (about 1.9e-28 on each side at 11).
const pldTail = 11

// stepPMF discretizes one step: mass at loss index k (loss k·step) for
// k = lo..lo+len(p)-1, and the mass beyond the truncation (pInf).
func stepPMF(s pldStep, step float64, add bool) pldDist {
	q, sig := s.q, s.sigma
	// Loss as a function of x and its inverse.
	// remove: P = (1-q)N(0,σ²) + qN(1,σ²), Q = N(0,σ²), ℓ(x) = log(1-q + q e^{(2x-1)/(2σ²)}) increasing.
	// add:    P = N(0,σ²), Q = the mixture, ℓ(x) = -log(1-q + q e^{(2x-1)/(2σ²)}) decreasing.
	lossOf := func(x float64) float64 {
		z := (2*x - 1) / (2 * sig * sig)
		var l float64
		if q == 1 {
			l = z
		} else {
			l = logAdd(math.Log1p(-q), math.Log(q)+z)
		}
		if add {
			return -l
		}
		return l
	}
	// xOf returns the x at which the loss equals l (±Inf outside the range).
	xOf := func(l float64) float64 {
		if add {
			l = -l
		}
		var z float64
		if q == 1 {
			z = l
		} else {
			// e^l = 1-q + q e^z  =>  z = log((e^l - (1-q))/q)
			v := math.Exp(l) - (1 - q)
			if v <= 0 {
				return math.Inf(-1)
			}
			z = math.Log(v / q)
		}
		return sig*sig*z + 0.5
	}
	// CDF and survival of P.
	cdf := func(x float64) float64 {
		if add || q == 1 {
			m := 0.0
			if !add {
				m = 1
			}
			return phi((x - m) / sig)
		}
		return (1-q)*phi(x/sig) + q*phi((x-1)/sig)
	}
	sf := func(x float64) float64 {
		if add || q == 1 {
			m := 0.0
			if !add {
				m = 1
			}
			return phi(-(x - m) / sig)
		}
		return (1-q)*phi(-x/sig) + q*phi(-(x-1)/sig)
	}
	mass := func(a, b float64) float64 { // P(a < x <= b)
		if a >= b {
			return 0
		}
		if a > 0.5 {
			return math.Max(0, sf(a)-sf(b))
		}
		return math.Max(0, cdf(b)-cdf(a))
	}
	// The x-range holding all but ~1e-28 of P's mass.
	xlo, xhi := -pldTail*sig, 1+pldTail*sig
	if add {
		xhi = pldTail * sig
	}
	l1, l2 := lossOf(xlo), lossOf(xhi)
	lmin, lmax := math.Min(l1, l2), math.Max(l1, l2)
	kmin := int(math.Ceil(lmin / step))
	kmax := int(math.Ceil(lmax / step))
	d := pldDist{lo: kmin, step: step, p: make([]float64, kmax-kmin+1)}
	// Mass with loss in ((k-1)Δ, kΔ] goes to k; loss <= (kmin-1)Δ also to kmin
	// (rounding up is pessimistic); loss > kmaxΔ to +Inf.
	for k := kmin; k <= kmax; k++ {
		lo, hi := float64(k-1)*step, float64(k)*step
		if k == kmin {
			lo = math.Inf(-1)
		}
		var m float64
		if !add {
			m = mass(xOf(lo), xOf(hi))
		} else {
			// loss decreasing: loss in (lo, hi] <=> x in [xOf(hi), xOf(lo)).
			a, b := xOf(hi), xOf(lo)
			if math.IsInf(lo, -1) {
				b = math.Inf(1)
			}
			m = mass(a, b)
		}
		d.p[k-kmin] = m
	}
	// Mass beyond the top bin.
	if !add {
		d.pInf = sf(xOf(float64(kmax) * step))
	} else {
		d.pInf = cdf(xOf(float64(kmax) * step))
	}
	return d
}

// stepDist is one step's distribution and its repetition count.
type stepDist struct {
	d     pldDist
	count int
}

// compose discretizes every step and composes them by FFT.
func (a *PLD) compose(add bool) (*pldDist, error) {
	step := a.cfg.Discretization
	var sds []stepDist
	mean, variance, logNoInf := 0.0, 0.0, 0.0
	minK, maxK := 0.0, 0.0
	ts := []float64{0.25, 0.5, 1, 2, 4, 8, 16}
	logMGF := make([]float64, len(ts)) // log E[e^{tL}] of the composed finite part
	for _, s := range a.steps {
		d := stepPMF(s, step, add)
		m, m2, tot := 0.0, 0.0, 0.0
		lm := make([]float64, len(ts))
		for j := range lm {
			lm[j] = math.Inf(-1)
		}
		for i, p := range d.p {
			if p == 0 {
				continue
			}
			l := float64(d.lo+i) * step
			m += p * l
			m2 += p * l * l
			tot += p
			for j, t := range ts {
				lm[j] = logAdd(lm[j], math.Log(p)+t*l)
			}
		}
		if tot > 0 {
			m /= tot
			m2 /= tot
		}
		c := float64(s.count)
		mean += c * m
		variance += c * math.Max(0, m2-m*m)
		minK += c * float64(d.lo)
		maxK += c * float64(d.lo+len(d.p)-1)
		logNoInf += c * math.Log1p(-math.Min(d.pInf, 1))
		for j := range ts {
			logMGF[j] += c * lm[j]
		}
		sds = append(sds, stepDist{d, s.count})
	}
	// Window of the composed loss. Upper end: a Chernoff bound
	// P(L > h) <= exp(-t h) E[e^{tL}] puts at most pldWrap of mass above it;
	// that mass (which the circular convolution wraps to low losses) is added
	// to pInf, so delta stays an upper bound. Lower end: mean - 40 sd, but
	// not below -40 (P(L < -h) <= e^{-h} since E[e^{-L}] <= 1); mass wrapped
	// from below lands at high losses, which can only increase delta.
	const pldWrap = 1e-18
	hiL := math.Inf(1)
	for j, t := range ts {
		hiL = math.Min(hiL, (logMGF[j]-math.Log(pldWrap))/t)
	}
	hiL = math.Min(hiL+1, maxK*step)
	sd := math.Sqrt(variance)
	loL := math.Max(minK*step, math.Max(-40, mean-40*sd-1))
	loL = math.Min(loL, hiL-1)
	lo := int(math.Floor(loL / step))
	width := int(math.Ceil(hiL/step)) - lo + 1
	n := 2
	for n < width {
		n *= 2
	}
	if n > a.cfg.MaxSize {
		return nil, fmt.Errorf("privacy: PLD accountant needs an FFT of length %d > MaxSize %d (loss range %.3g..%.3g at discretization %g); use the RDP accountant", n, a.cfg.MaxSize, loL, hiL, step)
	}
	out := convolve(sds, n, lo, step)
	out.pInf = -math.Expm1(logNoInf)
	if hiL < maxK*step {
		out.pInf += 2 * pldWrap // the wrapped mass, counted twice to be safe
	}
	out.prepare()
	return out, nil
}

// convolve composes the step distributions by FFT of length n and returns the
// result on losses (lo..lo+n-1)·step.
func convolve(sds []stepDist, n, lo int, step float64) *pldDist {
	fft := fourier.NewFFT(n)
	buf := make([]float64, n)
	var spec []complex128
	for _, sdist := range sds {
		clear(buf)
		for i, p := range sdist.d.p {
			k := sdist.d.lo + i
			buf[((k%n)+n)%n] += p
		}
		c := fft.Coefficients(nil, buf)
		for i := range c {
			c[i] = cpow(c[i], sdist.count)
		}
		if spec == nil {
			spec = c
		} else {
			for i := range spec {
				spec[i] *= c[i]
			}
		}
	}
	seq := fft.Sequence(buf, spec)
	out := &pldDist{lo: lo, step: step, p: make([]float64, n)}
	for i := range out.p {
		k := lo + i
		if v := seq[((k%n)+n)%n] / float64(n); v > 0 {
			out.p[i] = v
		}
	}
	return out
}

// cpow returns c^n for a complex c with |c| <= 1, by repeated squaring.
func cpow(c complex128, n int) complex128 {
	if n == 1 {
		return c
	}
	if cmplx.Abs(c) == 0 {
		return 0
	}
	r := complex(1, 0)
	for n > 0 {
		if n&1 == 1 {
			r *= c
		}
		c *= c
		n >>= 1
	}
	return r
}
