package privacy

import (
	"fmt"
	"math"
)

// ZCDPConversion selects how a zCDP accountant turns rho into (epsilon, delta).
type ZCDPConversion int

const (
	// ZCDPStandard is eps = rho + 2 sqrt(rho log(1/delta)) (Bun and Steinke
	// 2016; Lee and Kifer 2018 Lemma 3.8). Method "zcdp".
	ZCDPStandard ZCDPConversion = iota
	// ZCDPCKS treats rho-zCDP as RDP alpha*rho at every alpha > 1 and applies
	// the Canonne-Kamath-Steinke (2020) conversion at the optimal alpha, which
	// is never looser than ZCDPStandard; delta is also bounded by the total
	// variation distance, at most min(sqrt(rho/2), sqrt(1 - e^-rho)) (Pinsker
	// and Bretagnolle-Huber with KL <= rho), which decides small epsilon.
	// Method "zcdp-cks"; the optimal order is reported (none when the total
	// variation bound decides). See zcdpCKSLogDelta for the optimization.
	ZCDPCKS
)

// String returns the method name of c.
func (c ZCDPConversion) String() string {
	switch c {
	case ZCDPStandard:
		return MethodZCDP
	case ZCDPCKS:
		return MethodZCDPCKS
	}
	return fmt.Sprintf("ZCDPConversion(%d)", int(c))
}

// ZCDP is the zero-concentrated DP accountant: composition adds rho; a
// Gaussian with noise multiplier sigma is 1/(2 sigma^2)-zCDP (Lee and Kifer 2018 Lemma 3.6)
// and an epsilon-DP release is epsilon^2/2-zCDP (Lemma 3.7). Poisson sampling
// with 0 < q < 1 is refused (zCDP has no amplification by sampling).
type ZCDP struct {
	rho  float64
	conv ZCDPConversion
	adj  Adjacency // of the events composed
}

var _ Accountant = (*ZCDP)(nil)

// NewZCDP returns an empty zCDP accountant that converts with conv. It panics
// on an unknown conversion (a programmer error).
func NewZCDP(conv ZCDPConversion) Accountant {
	if conv != ZCDPStandard && conv != ZCDPCKS {
		panic(fmt.Sprintf("privacy: unknown zCDP conversion %d", int(conv)))
	}
	return &ZCDP{conv: conv}
}

func init() {
	for _, c := range []ZCDPConversion{ZCDPStandard, ZCDPCKS} {
		RegisterAccountant(AccountantKind{Name: c.String(), New: func(AccountantOptions) Accountant { return NewZCDP(c) }})
	}
}

// Supports implements Accountant: Gaussians and PureDP events, not sampled
// with 0 < q < 1.
func (a *ZCDP) Supports(e Event) error {
	if err := Validate(e); err != nil {
		return err
	}
	_, err := eventRho(e)
	return err
}

// BudgetFor implements ZCDPBudgeter: ZCDPBudgetFor with a's conversion.
func (a *ZCDP) BudgetFor(epsilon, delta float64) (float64, error) {
	return ZCDPBudgetFor(epsilon, delta, a.conv)
}

// Rho returns the total rho composed so far.
func (a *ZCDP) Rho() float64 { return a.rho }

// Compose implements Accountant.
func (a *ZCDP) Compose(e Event, count int) error {
	if err := checkCompose(e, count); err != nil {
		return err
	}
	r, err := eventRho(e)
	if err != nil {
		return err
	}
	adj, err := mergeAdjacency(a.adj, e)
	if err != nil {
		return err
	}
	a.rho += float64(count) * r
	a.adj = adj
	return nil
}

// eventRho returns the zCDP parameter of a valid event.
func eventRho(e Event) (float64, error) {
	switch e := e.(type) {
	case Gaussian:
		return GaussianRho(e.NoiseMultiplier), nil
	case PureDP:
		return PureDPRho(e.Epsilon), nil
	case SelfComposed:
		r, err := eventRho(e.Event)
		return float64(e.Count) * r, err
	case Composed:
		s := 0.0
		for _, x := range e.Events {
			r, err := eventRho(x)
			if err != nil {
				return 0, err
			}
			s += r
		}
		return s, nil
	case PoissonSampled:
		switch e.Probability {
		case 0:
			return 0, nil
		case 1:
			return eventRho(e.Event)
		}
		return 0, errUnsupported("zCDP", e, "zCDP has no amplification by sampling; use the RDP accountant")
	case SampledWithoutReplacement:
		switch e.SampleSize {
		case 0:
			return 0, nil
		case e.PopulationSize:
			return eventRho(e.Event)
		}
		return 0, errUnsupported("zCDP", e, "zCDP has no amplification by sampling without replacement; use the RDP or PLD accountant")
	case Neighbouring:
		return eventRho(e.Event)
	}
	return 0, fmt.Errorf("privacy: unknown event type %T", e)
}

// Epsilon implements Accountant.
func (a *ZCDP) Epsilon(delta float64) (Guarantee, error) {
	if err := checkDelta(delta); err != nil {
		return Guarantee{}, err
	}
	g, err := zcdpEpsilon(a.rho, delta, a.conv)
	g.Adjacency = a.adj
	return g, err
}

// Delta implements Accountant.
func (a *ZCDP) Delta(epsilon float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	return zcdpDelta(a.rho, epsilon, a.conv), nil
}

// zcdpEpsilon converts rho-zCDP to epsilon at delta.
func zcdpEpsilon(rho, delta float64, conv ZCDPConversion) (Guarantee, error) {
	g := Guarantee{Delta: delta, Method: conv.String()}
	if conv != ZCDPStandard && conv != ZCDPCKS {
		return g, fmt.Errorf("privacy: unknown zCDP conversion %d", int(conv))
	}
	if rho == 0 || delta >= 1 {
		return g, nil
	}
	if math.IsInf(rho, 1) {
		return g, fmt.Errorf("privacy: zCDP: infinite rho, no finite epsilon at delta %g", delta)
	}
	if delta == 0 {
		return g, fmt.Errorf("privacy: zCDP: no finite epsilon at delta 0 for rho = %g", rho)
	}
	switch conv {
	case ZCDPStandard:
		g.Epsilon = rho + 2*math.Sqrt(rho*math.Log(1/delta))
	case ZCDPCKS:
		g.Epsilon, g.Order = zcdpCKSEpsilon(rho, delta)
	}
	return g, nil
}

// zcdpDelta converts rho-zCDP to delta at epsilon.
func zcdpDelta(rho, eps float64, conv ZCDPConversion) float64 {
	if rho == 0 {
		return 0
	}
	switch conv {
	case ZCDPStandard:
		// Invert eps = rho + 2 sqrt(rho L), L = log(1/delta).
		if eps <= rho {
			return 1
		}
		s := (eps - rho) / (2 * math.Sqrt(rho))
		return math.Exp(-s * s)
	default:
		ld, _ := zcdpCKSLogDelta(rho, eps)
		return math.Min(zcdpTV(rho), math.Exp(ld))
	}
}

// zcdpTV bounds the total variation distance, i.e. delta at epsilon = 0, of
// rho-zCDP: KL <= rho (the limit of the Renyi bound alpha*rho as alpha -> 1),
// so TV <= sqrt(rho/2) (Pinsker) and TV <= sqrt(1 - e^-rho)
// (Bretagnolle-Huber).
func zcdpTV(rho float64) float64 {
	return math.Min(1, math.Min(math.Sqrt(rho/2), math.Sqrt(-math.Expm1(-rho))))
}

// zcdpCKSLogDelta returns the minimum over orders alpha > 1 of the CKS
// bound on log delta of rho-zCDP at eps, and the order attaining it,
//
//	f(alpha) = (alpha-1)(alpha rho - eps) - log(alpha-1) + alpha log(1 - 1/alpha),
//
// f is strictly convex (second derivative 2 rho + 1/(alpha(alpha-1)) > 0)
// with f'(alpha) = (2 alpha - 1) rho + log(1 - 1/alpha) - eps increasing from
// -Inf to +Inf, so the global minimum is the unique root of f', found by
// bisection on log(alpha - 1) over (-60, 200): no cap on the order short of
// alpha = 1 + e^200.
func zcdpCKSLogDelta(rho, eps float64) (logDelta, alpha float64) {
	df := func(t float64) float64 {
		a := 1 + math.Exp(t)
		return (2*a-1)*rho + math.Log1p(-1/a) - eps
	}
	lo, hi := -60.0, 200.0
	for range 200 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break
		}
		if df(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	t := (lo + hi) / 2
	am1 := math.Exp(t)
	alpha = 1 + am1
	logDelta = am1*(alpha*rho-eps) - t + alpha*math.Log1p(-1/alpha)
	return math.Min(logDelta, 0), alpha
}

// zcdpCKSEpsilon returns the smallest epsilon at which the CKS bound (or the
// total variation bound) of rho-zCDP certifies delta, and the order used (0
// when the total variation bound decides). With h(eps) = min_alpha f(alpha)
// − log delta, concave and decreasing in eps with slope −(alpha*(eps) − 1)
// (envelope theorem), Newton's method started at the standard conversion
// rho + 2 sqrt(rho log(1/delta)) (where h <= 0) decreases monotonically to
// the root, every iterate certifying delta.
func zcdpCKSEpsilon(rho, delta float64) (eps, alpha float64) {
	if zcdpTV(rho) <= delta {
		return 0, 0
	}
	ld := math.Log(delta)
	eps = rho + 2*math.Sqrt(rho*math.Log(1/delta))
	var h float64
	h, alpha = zcdpCKSLogDelta(rho, eps)
	h -= ld
	for range 100 {
		next := eps + h/(alpha-1) // h <= 0: next <= eps
		if !(next < eps) {
			break
		}
		if next <= 0 {
			// The root is at 0 or below: δ(0) <= delta (not reached when
			// the total variation bound is above delta, kept for safety).
			if l0, a0 := zcdpCKSLogDelta(rho, 0); l0 <= ld {
				return 0, a0
			}
			break
		}
		hn, an := zcdpCKSLogDelta(rho, next)
		if hn-ld > 0 {
			break // round-off: keep the last certified point
		}
		converged := eps-next <= 1e-15*eps
		eps, h, alpha = next, hn-ld, an
		if converged {
			break
		}
	}
	return eps, alpha
}

// GaussianRho returns the zCDP parameter 1/(2 sigma^2) of a Gaussian mechanism
// with noise multiplier sigma (Lee and Kifer 2018 Lemma 3.6 with sensitivity 1).
func GaussianRho(sigma float64) float64 { return 1 / (2 * sigma * sigma) }

// GaussianSigma returns the noise multiplier 1/sqrt(2 rho) whose Gaussian is
// exactly rho-zCDP.
func GaussianSigma(rho float64) float64 { return 1 / math.Sqrt(2*rho) }

// PureDPRho returns epsilon^2/2, the zCDP parameter of an epsilon-DP release
// (Lee and Kifer 2018 Lemma 3.7).
func PureDPRho(epsilon float64) float64 { return epsilon * epsilon / 2 }

// PureDPEpsilon returns sqrt(2 rho), the epsilon of an epsilon-DP release
// (for example report-noisy-max) that spends exactly rho.
func PureDPEpsilon(rho float64) float64 { return math.Sqrt(2 * rho) }

// ZCDPBudget returns the largest rho whose standard conversion
// rho + 2 sqrt(rho log(1/delta)) is at most epsilon:
// rho = (sqrt(epsilon + log(1/delta)) - sqrt(log(1/delta)))^2.
func ZCDPBudget(epsilon, delta float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	if !(delta > 0 && delta < 1) {
		return 0, fmt.Errorf("privacy: zCDP budget needs delta in (0, 1), got %g", delta)
	}
	l := math.Log(1 / delta)
	s := epsilon / (math.Sqrt(epsilon+l) + math.Sqrt(l)) // = sqrt(eps+l) - sqrt(l), no cancellation
	return s * s, nil
}

// ZCDPBudgetFor returns the largest rho whose conversion conv gives at most
// epsilon at delta: ZCDPBudget's closed form for ZCDPStandard; for ZCDPCKS
// (never looser, so its budget is at least the standard one) a bisection on
// rho between the standard budget and the rho whose standard conversion
// gives 4·epsilon, to relative 1e-12, keeping the side that meets epsilon.
func ZCDPBudgetFor(epsilon, delta float64, conv ZCDPConversion) (float64, error) {
	lo, err := ZCDPBudget(epsilon, delta)
	if err != nil || conv == ZCDPStandard {
		return lo, err
	}
	if conv != ZCDPCKS {
		return 0, fmt.Errorf("privacy: unknown zCDP conversion %d", int(conv))
	}
	hi, _ := ZCDPBudget(4*epsilon, delta)
	eps := func(rho float64) (float64, error) {
		g, err := zcdpEpsilon(rho, delta, conv)
		return g.Epsilon, err
	}
	if e, err := eps(hi); err != nil || e <= epsilon {
		return 0, fmt.Errorf("privacy: zCDP budget for ε = %g at δ = %g: conversion %v does not bracket it (%v)", epsilon, delta, conv, err)
	}
	for i := 0; i < 200 && hi-lo > 1e-12*lo; i++ {
		mid := (lo + hi) / 2
		e, err := eps(mid)
		if err != nil {
			return 0, err
		}
		if e <= epsilon {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}
