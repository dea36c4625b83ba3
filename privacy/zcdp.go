package privacy

import (
	"fmt"
	"math"
)

// ZCDPConversion selects how a zCDP accountant turns rho into (epsilon, delta).
type ZCDPConversion int

const (
	// ZCDPStandard is eps = rho + 2 sqrt(rho log(1/delta)) (Bun and Steinke
	// 2016; LK18 Lemma 3.8). Method "zcdp".
	ZCDPStandard ZCDPConversion = iota
	// ZCDPCKS treats rho-zCDP as RDP alpha*rho at every alpha > 1 and applies
	// the Canonne-Kamath-Steinke (2020) conversion at the optimal alpha, which
	// is never looser than ZCDPStandard. Method "zcdp-cks"; the order is
	// reported.
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
// Gaussian with noise multiplier sigma is 1/(2 sigma^2)-zCDP (LK18 Lemma 3.6)
// and an epsilon-DP release is epsilon^2/2-zCDP (Lemma 3.7). Poisson sampling
// with 0 < q < 1 is refused (zCDP has no amplification by sampling).
type ZCDP struct {
	rho  float64
	conv ZCDPConversion
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
	a.rho += float64(count) * r
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
	}
	return 0, fmt.Errorf("privacy: unknown event type %T", e)
}

// Epsilon implements Accountant.
func (a *ZCDP) Epsilon(delta float64) (Guarantee, error) {
	if err := checkDelta(delta); err != nil {
		return Guarantee{}, err
	}
	g, err := zcdpEpsilon(a.rho, delta, a.conv)
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
		// Minimize over alpha > 1 the CKS bound of RDP alpha*rho. The bound is
		// convex in alpha; golden-section search on log(alpha - 1).
		f := func(alpha float64) float64 { return cksEpsilon(alpha, alpha*rho, delta) }
		alpha, eps := minimizeOrder(f)
		g.Epsilon, g.Order = math.Max(0, eps), alpha
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
		f := func(alpha float64) float64 { return cksLogDelta(alpha, alpha*rho, eps) }
		_, ld := minimizeOrder(f)
		return math.Min(1, math.Exp(ld))
	}
}

// minimizeOrder minimizes f over alpha in (1, 1e7] by golden-section search on
// t = log(alpha - 1); f must be unimodal in t. It returns the minimizer and
// the minimum.
func minimizeOrder(f func(alpha float64) float64) (alpha, fmin float64) {
	g := func(t float64) float64 { return f(1 + math.Exp(t)) }
	lo, hi := math.Log(0.01), math.Log(1e7)
	const r = 0.6180339887498949
	x1, x2 := hi-r*(hi-lo), lo+r*(hi-lo)
	f1, f2 := g(x1), g(x2)
	for i := 0; i < 100 && hi-lo > 1e-10; i++ {
		if f1 <= f2 {
			hi, x2, f2 = x2, x1, f1
			x1 = hi - r*(hi-lo)
			f1 = g(x1)
		} else {
			lo, x1, f1 = x1, x2, f2
			x2 = lo + r*(hi-lo)
			f2 = g(x2)
		}
	}
	if f1 <= f2 {
		return 1 + math.Exp(x1), f1
	}
	return 1 + math.Exp(x2), f2
}

// GaussianRho returns the zCDP parameter 1/(2 sigma^2) of a Gaussian mechanism
// with noise multiplier sigma (LK18 Lemma 3.6 with sensitivity 1).
func GaussianRho(sigma float64) float64 { return 1 / (2 * sigma * sigma) }

// GaussianSigma returns the noise multiplier 1/sqrt(2 rho) whose Gaussian is
// exactly rho-zCDP.
func GaussianSigma(rho float64) float64 { return 1 / math.Sqrt(2*rho) }

// PureDPRho returns epsilon^2/2, the zCDP parameter of an epsilon-DP release
// (LK18 Lemma 3.7).
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
