package privacy

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
)

// Empirical privacy estimation (Andrew, Kairouz, Oh, Oprea, McMahan and
// Suriyakumar 2024, "One-shot Empirical Privacy Estimation for Federated
// Learning"): a statistic of every canary is measured on the released
// model, for canaries whose updates were inserted and for canaries held out;
// a Gaussian is fitted to each group, and the estimate is the epsilon at
// which the two fitted Gaussians are (epsilon, delta)-indistinguishable.
// For a Gaussian mechanism and a statistic linear in its noise the two
// distributions are Gaussian, and the estimate converges to the epsilon of
// the test the statistic performs, which is at most the mechanism's.

// Normal is a fitted normal distribution N(Mean, Std²).
type Normal struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
}

// FitNormal returns the sample mean and standard deviation (n-1 in the
// denominator) of xs; it needs at least two values.
func FitNormal(xs []float64) (Normal, error) {
	if len(xs) < 2 {
		return Normal{}, errors.New("privacy: fitting a normal distribution needs at least two values")
	}
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	v /= float64(len(xs) - 1)
	if math.IsNaN(m) || math.IsInf(m, 0) || math.IsNaN(v) || math.IsInf(v, 0) {
		return Normal{}, errors.New("privacy: fitting a normal distribution: non-finite values")
	}
	return Normal{Mean: m, Std: math.Sqrt(v)}, nil
}

// survival returns P(X > x) for X ~ n.
func (n Normal) survival(x float64) float64 { return 0.5 * math.Erfc((x-n.Mean)/(n.Std*math.Sqrt2)) }

// cdf returns P(X < x) for X ~ n.
func (n Normal) cdf(x float64) float64 { return 0.5 * math.Erfc((n.Mean-x)/(n.Std*math.Sqrt2)) }

// hockeyStick returns the hockey-stick divergence
// H_{e^eps}(P || Q) = sup_A P(A) - e^eps Q(A), attained on the set A where
// the log-likelihood ratio log p/q exceeds eps. For normals,
// log p(x)/q(x) = a x² + b x + c is a quadratic, so A is a half-line, an
// interval or the complement of one, and P(A), Q(A) are normal tails.
func hockeyStick(p, q Normal, eps float64) float64 {
	a := 1/(2*q.Std*q.Std) - 1/(2*p.Std*p.Std)
	b := p.Mean/(p.Std*p.Std) - q.Mean/(q.Std*q.Std)
	c := q.Mean*q.Mean/(2*q.Std*q.Std) - p.Mean*p.Mean/(2*p.Std*p.Std) + math.Log(q.Std/p.Std)
	c -= eps // A = {x : a x² + b x + c > 0}
	mass := func(n Normal) float64 { return 0 }
	// Equal variances (to rounding): the ratio is linear in x.
	if math.Abs(a)*math.Max(p.Std*p.Std, q.Std*q.Std) < 1e-12 {
		switch {
		case b > 0:
			t := -c / b
			mass = func(n Normal) float64 { return n.survival(t) }
		case b < 0:
			t := -c / b
			mass = func(n Normal) float64 { return n.cdf(t) }
		case c > 0:
			mass = func(Normal) float64 { return 1 }
		}
	} else {
		disc := b*b - 4*a*c
		switch {
		case disc <= 0 && a > 0:
			mass = func(Normal) float64 { return 1 }
		case disc <= 0:
			// A is empty.
		default:
			// Roots without cancellation.
			s := math.Sqrt(disc)
			qq := -0.5 * (b + math.Copysign(s, b))
			r1, r2 := qq/a, c/qq
			if qq == 0 {
				r1, r2 = 0, 0
			}
			lo, hi := math.Min(r1, r2), math.Max(r1, r2)
			if a > 0 {
				mass = func(n Normal) float64 { return n.cdf(lo) + n.survival(hi) }
			} else {
				mass = func(n Normal) float64 { return math.Max(0, n.cdf(hi)-n.cdf(lo)) }
			}
		}
	}
	pa, qa := mass(p), mass(q)
	d := pa
	if qa > 0 {
		d -= math.Exp(eps + math.Log(qa))
	}
	if !(d > 0) {
		return 0
	}
	return d
}

// DeltaTwoNormals returns the smallest delta for which the pair of
// distributions p, q is (eps, delta)-indistinguishable in both directions:
// max(H_{e^eps}(p||q), H_{e^eps}(q||p)).
func DeltaTwoNormals(p, q Normal, eps float64) float64 {
	return math.Max(hockeyStick(p, q, eps), hockeyStick(q, p, eps))
}

// maxEmpiricalEpsilon bounds the search of EpsilonTwoNormals: beyond it the
// estimate is reported as +Inf (the two groups are separated without doubt).
const maxEmpiricalEpsilon = 500

// EpsilonTwoNormals returns the smallest eps >= 0 at which p and q are
// (eps, delta)-indistinguishable (0 when they are at eps = 0; +Inf when
// they are not at any eps up to 500, or when a standard deviation is 0 and
// the means differ).
func EpsilonTwoNormals(p, q Normal, delta float64) float64 {
	if !(delta > 0 && delta < 1) {
		panic("privacy: EpsilonTwoNormals needs delta in (0, 1)")
	}
	if !(p.Std > 0) || !(q.Std > 0) {
		if p.Mean == q.Mean && p.Std == q.Std {
			return 0
		}
		return math.Inf(1)
	}
	f := func(eps float64) float64 { return DeltaTwoNormals(p, q, eps) }
	if f(0) <= delta {
		return 0
	}
	lo, hi := 0.0, 1.0
	for f(hi) > delta {
		lo, hi = hi, 2*hi
		if hi > maxEmpiricalEpsilon {
			if f(maxEmpiricalEpsilon) > delta {
				return math.Inf(1)
			}
			hi = maxEmpiricalEpsilon
			break
		}
	}
	for i := 0; i < 200 && hi-lo > 1e-9*math.Max(1, hi); i++ {
		mid := 0.5 * (lo + hi)
		if f(mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// EmpiricalEstimate is an empirical epsilon with its bootstrap confidence
// interval.
type EmpiricalEstimate struct {
	// Epsilon is the epsilon of the two normals fitted with a common
	// (pooled) standard deviation: the Gaussian-DP epsilon of
	// Mu = (inserted mean - held-out mean) / pooled std.
	Epsilon   float64
	Mu        float64
	Low, High float64 // basic (reverse-percentile) bootstrap interval of Epsilon, Low >= 0
	// Separate is the epsilon of the two normals fitted each with its own
	// standard deviation (the paper's estimate; biased upward, see
	// EstimateEpsilon).
	Separate   float64
	Confidence float64 // of the interval (e.g. 0.95)
	HeldOut    Normal  // fitted to the held-out canaries' statistics
	Inserted   Normal  // fitted to the inserted canaries' statistics
	Resamples  int
}

// pooled returns the normals of the two groups with their pooled standard
// deviation, and mu.
func pooled(h, in []float64, nh, ni Normal) (Normal, Normal, float64) {
	a, b := float64(len(h)-1), float64(len(in)-1)
	sd := math.Sqrt((a*nh.Std*nh.Std + b*ni.Std*ni.Std) / (a + b))
	mu := 0.0
	if sd > 0 {
		mu = (ni.Mean - nh.Mean) / sd
	} else if ni.Mean != nh.Mean {
		mu = math.Inf(1)
	}
	return Normal{nh.Mean, sd}, Normal{ni.Mean, sd}, mu
}

// EstimateEpsilon fits normal distributions to the statistics of the
// held-out and of the inserted canaries and returns the epsilon at delta at
// which the two are indistinguishable (EpsilonTwoNormals), with a bootstrap
// interval at the given confidence: both groups are resampled with
// replacement resamples times, with randomness from rng, and the interval is
// the basic (reverse percentile) one, [2ε̂ - q(1-α/2), 2ε̂ - q(α/2)] clamped
// at 0, for the quantiles q of the resampled estimates. Each group needs at
// least two values.
//
// The headline fit shares one (pooled) standard deviation between the two
// normals: the statistics it is meant for are linear in a Gaussian
// mechanism's noise, whose variance the inserted canaries do not change,
// so a difference between the two fitted deviations is sampling noise. At
// small delta that noise matters: unequal variances make the likelihood
// ratio grow without bound in the tails, and at delta 1e-5 a 5% difference
// turns epsilon 4.4 into 5.4. With 500 values per group, the separate fit
// (Separate, the paper's) of epsilon(mu = 1) = 4.38 has median 5.1 over
// samples, the pooled one 4.4 (TestEstimateEpsilonCoverage). When the
// inserted canaries' statistics really are more spread (a mixture of
// canaries taking part different numbers of times), the pooled fit
// underestimates: an audit estimate is a lower bound in spirit.
func EstimateEpsilon(heldOut, inserted []float64, delta, confidence float64, resamples int, rng *rand.Rand) (EmpiricalEstimate, error) {
	e := EmpiricalEstimate{Confidence: confidence, Resamples: resamples}
	if !(delta > 0 && delta < 1) {
		return e, errors.New("privacy: empirical epsilon needs delta in (0, 1)")
	}
	if !(confidence > 0 && confidence < 1) || resamples < 1 {
		return e, errors.New("privacy: empirical epsilon needs a confidence in (0, 1) and at least one resample")
	}
	var err error
	if e.HeldOut, err = FitNormal(heldOut); err != nil {
		return e, err
	}
	if e.Inserted, err = FitNormal(inserted); err != nil {
		return e, err
	}
	e.Separate = EpsilonTwoNormals(e.HeldOut, e.Inserted, delta)
	p0, p1, mu := pooled(heldOut, inserted, e.HeldOut, e.Inserted)
	e.Mu, e.Epsilon = mu, EpsilonTwoNormals(p0, p1, delta)
	eps := make([]float64, resamples)
	h, in := make([]float64, len(heldOut)), make([]float64, len(inserted))
	for r := range eps {
		for i := range h {
			h[i] = heldOut[rng.IntN(len(heldOut))]
		}
		for i := range in {
			in[i] = inserted[rng.IntN(len(inserted))]
		}
		nh, _ := FitNormal(h)
		ni, _ := FitNormal(in)
		q0, q1, _ := pooled(h, in, nh, ni)
		eps[r] = EpsilonTwoNormals(q0, q1, delta)
	}
	slices.Sort(eps)
	alpha := (1 - confidence) / 2
	qlo, qhi := quantile(eps, alpha), quantile(eps, 1-alpha)
	if math.IsInf(e.Epsilon, 1) {
		// Separated beyond measure: nothing to reflect about.
		e.Low, e.High = qlo, math.Inf(1)
		return e, nil
	}
	e.Low, e.High = math.Max(0, 2*e.Epsilon-qhi), math.Max(0, 2*e.Epsilon-qlo)
	return e, nil
}

// quantile is the q-quantile of sorted xs (linear interpolation; +Inf
// values are kept as such).
func quantile(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	i := int(math.Floor(pos))
	if i >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	f := pos - float64(i)
	if f == 0 || math.IsInf(xs[i+1], 1) {
		if f == 0 {
			return xs[i]
		}
		return xs[i+1]
	}
	return xs[i] + f*(xs[i+1]-xs[i])
}
