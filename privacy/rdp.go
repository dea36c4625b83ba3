package privacy

import (
	"fmt"
	"math"
	"slices"
)

// RDPConversion selects how an RDP accountant turns RDP into (epsilon, delta).
type RDPConversion int

const (
	// CKS is the conversion of Canonne, Kamath and Steinke (2020, Prop. 12),
	// eps = rdp + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1),
	// together with the total variation bound delta <= min(sqrt(rdp/2),
	// sqrt(1 - exp(-rdp))) that certifies epsilon = 0 for tiny rdp. Method
	// "rdp-cks". The default.
	CKS RDPConversion = iota
	// Mironov is the standard conversion of Mironov (2017, Prop. 3),
	// eps = rdp + log(1/delta)/(alpha-1). Method "rdp-mironov".
	Mironov
)

// String returns the method name of c.
func (c RDPConversion) String() string {
	switch c {
	case CKS:
		return MethodRDPCKS
	case Mironov:
		return MethodRDPMironov
	}
	return fmt.Sprintf("RDPConversion(%d)", int(c))
}

// DefaultOrders returns the Renyi orders used when none are given: 1.1, 1.2,
// ..., 10.9 (step 0.1), the integers 11..63, and 128, 256, 512 (155 orders;
// the TF-Privacy grid plus 11 and the large orders of dp_accounting). The slice
// is new on every call.
func DefaultOrders() []float64 {
	o := make([]float64, 0, 155)
	for x := 11; x <= 109; x++ {
		o = append(o, float64(x)/10)
	}
	for a := 11; a <= 63; a++ {
		o = append(o, float64(a))
	}
	return append(o, 128, 256, 512)
}

// RDP is the Renyi-DP accountant over a fixed grid of orders. It accounts
// Gaussians (alpha/(2 sigma^2)), PureDP events (min(eps, alpha eps^2/2)), and
// Poisson-sampled Gaussians (Mironov, Talwar and Zhang 2019: the exact
// binomial sum at integer orders, the two-sided series at fractional orders).
// The event inside a PoissonSampled must be Gaussian or a composition of
// Gaussians (which is one Gaussian, see Composed).
type RDP struct {
	orders []float64
	rdp    []float64
	conv   RDPConversion
	frac   FractionalRDP
	adj    Adjacency // of the events composed
}

// FractionalRDP selects how the RDP of the Poisson-subsampled Gaussian is
// computed at fractional orders. Integer orders are unaffected.
type FractionalRDP int

const (
	// FracSeries sums the signed series of Mironov, Talwar and Zhang (2019,
	// Sec. 3.3), which equals the Renyi divergence (tests check it against
	// numerical integration). TF-Privacy's rdp_accountant and Opacus compute
	// this; it reproduces Kairouz et al.'s tables. The default.
	FracSeries FractionalRDP = iota
	// FracAbsSeries sums the absolute values of the series' terms, as current
	// dp_accounting does: an upper bound on FracSeries, a little looser
	// (e.g. 6.706e-4 instead of 6.501e-4 at order 1.5 for q = 0.01,
	// sigma = 2.5, 50 steps).
	FracAbsSeries
)

var _ Accountant = (*RDP)(nil)

// NewRDP returns an empty RDP accountant over orders (DefaultOrders() when
// orders is empty) converting with conv. It copies orders. It panics on an
// order <= 1, a NaN order, or an unknown conversion (programmer errors).
func NewRDP(orders []float64, conv RDPConversion) Accountant {
	return NewRDPFrac(orders, conv, FracSeries)
}

// NewRDPFrac is NewRDP with the fractional-order computation chosen by frac.
func NewRDPFrac(orders []float64, conv RDPConversion, frac FractionalRDP) Accountant {
	if frac != FracSeries && frac != FracAbsSeries {
		panic(fmt.Sprintf("privacy: unknown fractional RDP method %d", int(frac)))
	}
	if len(orders) == 0 {
		orders = DefaultOrders()
	}
	if conv != CKS && conv != Mironov {
		panic(fmt.Sprintf("privacy: unknown RDP conversion %d", int(conv)))
	}
	for _, a := range orders {
		if !(a > 1) {
			panic(fmt.Sprintf("privacy: RDP order must be > 1, got %g", a))
		}
	}
	return &RDP{orders: slices.Clone(orders), rdp: make([]float64, len(orders)), conv: conv, frac: frac}
}

func init() {
	for _, k := range []struct {
		name string
		conv RDPConversion
	}{{"rdp", CKS}, {MethodRDPCKS, CKS}, {MethodRDPMironov, Mironov}} {
		RegisterAccountant(AccountantKind{Name: k.name, RDP: true,
			New: func(o AccountantOptions) Accountant { return NewRDPFrac(o.Orders, k.conv, o.Frac) }})
	}
}

// Supports implements Accountant: Gaussians and PureDP events, and
// Poisson-sampled Gaussians (or compositions of Gaussians inside a sample).
func (a *RDP) Supports(e Event) error {
	if err := Validate(e); err != nil {
		return err
	}
	return rdpSupports(e)
}

// rdpSupports mirrors eventRDP: the error it would return on the valid e.
func rdpSupports(e Event) error {
	switch e := e.(type) {
	case Gaussian, PureDP:
	case SelfComposed:
		if e.Count == 0 {
			return nil
		}
		return rdpSupports(e.Event)
	case Composed:
		for _, x := range e.Events {
			if err := rdpSupports(x); err != nil {
				return err
			}
		}
	case PoissonSampled:
		switch e.Probability {
		case 0:
			return nil
		case 1:
			return rdpSupports(e.Event)
		}
		if _, ok := gaussianEquivalent(e.Event); !ok {
			return errRDPSampled(e)
		}
	case SampledWithoutReplacement:
		switch e.SampleSize {
		case 0:
			return nil
		case e.PopulationSize:
			return rdpSupports(e.Event)
		}
		if _, ok := gaussianEquivalent(e.Event); !ok {
			return errUnsupported("RDP", e, "sampling without replacement is supported for Gaussian events only")
		}
	case Neighbouring:
		return rdpSupports(e.Event)
	default:
		return fmt.Errorf("privacy: unknown event type %T", e)
	}
	return nil
}

func errRDPSampled(e PoissonSampled) error {
	return errUnsupported("RDP", e, "Poisson sampling is supported for Gaussian events only")
}

// Orders returns a copy of the accountant's orders.
func (a *RDP) Orders() []float64 { return slices.Clone(a.orders) }

// RDPs returns a copy of the accumulated RDP at each order.
func (a *RDP) RDPs() []float64 { return slices.Clone(a.rdp) }

// Compose implements Accountant.
func (a *RDP) Compose(e Event, count int) error {
	if err := checkCompose(e, count); err != nil {
		return err
	}
	if count == 0 {
		return nil
	}
	adj, err := mergeAdjacency(a.adj, e)
	if err != nil {
		return err
	}
	v := make([]float64, len(a.orders))
	if err := eventRDP(v, e, a.orders, a.frac); err != nil {
		return err
	}
	a.adj = adj
	for i := range v {
		a.rdp[i] += float64(count) * v[i]
	}
	return nil
}

// eventRDP adds the RDP of the valid event e at orders to dst.
func eventRDP(dst []float64, e Event, orders []float64, frac FractionalRDP) error {
	switch e := e.(type) {
	case Gaussian:
		for i, al := range orders {
			dst[i] += al / (2 * e.NoiseMultiplier * e.NoiseMultiplier)
		}
	case PureDP:
		for i, al := range orders {
			dst[i] += math.Min(e.Epsilon, al*e.Epsilon*e.Epsilon/2)
		}
	case SelfComposed:
		if e.Count == 0 {
			return nil
		}
		v := make([]float64, len(orders))
		if err := eventRDP(v, e.Event, orders, frac); err != nil {
			return err
		}
		for i := range v {
			dst[i] += float64(e.Count) * v[i]
		}
	case Composed:
		for _, x := range e.Events {
			if err := eventRDP(dst, x, orders, frac); err != nil {
				return err
			}
		}
	case PoissonSampled:
		q := e.Probability
		if q == 0 {
			return nil
		}
		if q == 1 {
			return eventRDP(dst, e.Event, orders, frac)
		}
		sigma, ok := gaussianEquivalent(e.Event)
		if !ok {
			return errRDPSampled(e)
		}
		if math.IsInf(sigma, 1) {
			return nil
		}
		for i, al := range orders {
			dst[i] += sampledGaussianRDP(q, sigma, al, frac == FracAbsSeries)
		}
	case SampledWithoutReplacement:
		return worEventRDP(dst, e, orders, frac)
	case Neighbouring:
		return eventRDP(dst, e.Event, orders, frac)
	default:
		return fmt.Errorf("privacy: unknown event type %T", e)
	}
	return nil
}

// worEventRDP adds the RDP of the valid without-replacement event e.
func worEventRDP(dst []float64, e SampledWithoutReplacement, orders []float64, frac FractionalRDP) error {
	switch e.SampleSize {
	case 0:
		return nil
	case e.PopulationSize:
		return eventRDP(dst, e.Event, orders, frac)
	}
	sigma, ok := gaussianEquivalent(e.Event)
	if !ok {
		return rdpSupports(e)
	}
	if !math.IsInf(sigma, 1) {
		worRDP(dst, e.Ratio(), sigma, orders)
	}
	return nil
}

// Epsilon implements Accountant: the minimum over orders of the conversion;
// the order attaining it is reported in the guarantee.
func (a *RDP) Epsilon(delta float64) (Guarantee, error) {
	if err := checkDelta(delta); err != nil {
		return Guarantee{}, err
	}
	g := Guarantee{Delta: delta, Method: a.conv.String(), Adjacency: a.adj}
	if delta >= 1 {
		return g, nil
	}
	best, bestOrder := math.Inf(1), 0.0
	for i, al := range a.orders {
		var eps float64
		switch {
		case a.rdp[i] == 0: // identical distributions: ε = 0 at any δ
		case delta == 0:
			continue
		case a.conv == Mironov:
			eps = a.rdp[i] + math.Log(1/delta)/(al-1)
		default:
			eps = cksEpsilon(al, a.rdp[i], delta)
		}
		if eps < best {
			best, bestOrder = eps, al
		}
	}
	if math.IsInf(best, 1) || math.IsNaN(best) {
		return g, fmt.Errorf("privacy: RDP accountant: no finite epsilon at delta %g over %d orders", delta, len(a.orders))
	}
	g.Epsilon, g.Order = math.Max(0, best), bestOrder
	return g, nil
}

// Delta implements Accountant: the minimum over orders of the delta each
// order certifies at epsilon.
func (a *RDP) Delta(epsilon float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	best := 0.0 // log delta; delta <= 1 always
	for i, al := range a.orders {
		var ld float64
		if a.conv == Mironov {
			ld = (al - 1) * (a.rdp[i] - epsilon)
		} else {
			ld = cksLogDelta(al, a.rdp[i], epsilon)
		}
		best = math.Min(best, ld)
	}
	return math.Exp(best), nil
}

// cksEpsilon is the CKS conversion of RDP value r at order alpha to epsilon at
// delta in (0, 1). It returns 0 when delta is at least the total variation
// bound min(sqrt(r/2), sqrt(1 - exp(-r))) (Pinsker and Bretagnolle-Huber with
// KL <= D_alpha <= r), and +Inf for alpha <= 1.01 where the formula is
// numerically unstable.
func cksEpsilon(alpha, r, delta float64) float64 {
	if delta*delta+math.Expm1(-r) >= 0 || delta*delta >= r/2 {
		return 0
	}
	if alpha <= 1.01 {
		return math.Inf(1)
	}
	return r + math.Log1p(-1/alpha) - (math.Log(delta)+math.Log(alpha))/(alpha-1)
}

// cksLogDelta is log delta certified by RDP r at order alpha for epsilon: the
// CKS bound (alpha-1)(r - eps + log(1-1/alpha)) - log(alpha), or the total
// variation bound log min(sqrt(r/2), sqrt(1 - exp(-r))), whichever is
// smaller.
func cksLogDelta(alpha, r, eps float64) float64 {
	ld := math.Inf(-1)
	if r > 0 {
		ld = 0.5 * math.Min(math.Log(-math.Expm1(-r)), math.Log(r/2))
	}
	if alpha > 1.01 {
		ld = math.Min(ld, (alpha-1)*(r-eps+math.Log1p(-1/alpha))-math.Log(alpha))
	}
	return math.Min(ld, 0)
}

// SampledGaussianRDP returns the RDP at order alpha > 1 of one step of the
// Poisson-subsampled Gaussian mechanism with sampling probability q and noise
// multiplier sigma (Mironov, Talwar and Zhang 2019): log(A_alpha)/(alpha-1)
// with A_alpha the binomial sum at integer alpha and the two-sided series at
// fractional alpha. q = 1 gives the Gaussian's alpha/(2 sigma^2).
func SampledGaussianRDP(q, sigma, alpha float64) float64 {
	return sampledGaussianRDP(q, sigma, alpha, false)
}

func sampledGaussianRDP(q, sigma, alpha float64, abs bool) float64 {
	switch {
	case q == 0:
		return 0
	case q == 1:
		return alpha / (2 * sigma * sigma)
	case math.IsInf(alpha, 1):
		return math.Inf(1)
	}
	if alpha > rdpMaxSeriesOrder {
		// The sums below would take about alpha terms: the unsampled
		// Gaussian's RDP is an upper bound (sampling never adds to it).
		return alpha / (2 * sigma * sigma)
	}
	var la float64
	if alpha == math.Trunc(alpha) {
		la = logAInt(q, sigma, int(alpha))
	} else {
		var ok bool
		if la, ok = logAFrac(q, sigma, alpha, abs); !ok {
			return alpha / (2 * sigma * sigma) // the series did not settle: the same bound
		}
	}
	r := la / (alpha - 1)
	if la < rdpTinyLogA {
		// A = 1 + (something below float64's resolution near 1): the sums
		// above round it (down to 0 for a large sigma, which would claim
		// identical distributions). Bound it from A − 1 computed directly
		// at the integer order ceil(alpha), whose RDP is at least alpha's
		// (Renyi divergence is non-decreasing in the order).
		n := math.Ceil(alpha)
		if n <= 1<<20 {
			r = math.Max(r, math.Log1p(math.Exp(logAIntMinus1(q, sigma, int(n))))/(n-1))
		} else {
			r = math.Max(r, alpha/(2*sigma*sigma)) // the unsampled Gaussian's, an upper bound
		}
	}
	return r
}

// rdpMaxSeriesOrder is the largest order whose sampled-Gaussian RDP is
// summed term by term (about one term per unit of the order).
const rdpMaxSeriesOrder = 1e6

// rdpTinyLogA is the log A below which sampledGaussianRDP recomputes the
// RDP from A − 1 (where the log-space sums keep under 1e-6 relative
// precision).
const rdpTinyLogA = 1e-10

// logAIntMinus1 is log(A_alpha − 1) for integer alpha >= 2:
// sum_{j=2}^{alpha} C(alpha,j) (1-q)^(alpha-j) q^j expm1((j^2-j)/(2 sigma^2)),
// summed in log space (the terms j = 0, 1 of A − 1 vanish because the
// binomial weights sum to 1).
func logAIntMinus1(q, sigma float64, alpha int) float64 {
	la := math.Inf(-1)
	lq, l1q := math.Log(q), math.Log1p(-q)
	for j := 2; j <= alpha; j++ {
		fj := float64(j)
		x := (fj*fj - fj) / (2 * sigma * sigma)
		le := math.Log(math.Expm1(x))
		if x > 1 {
			le = x + math.Log1p(-math.Exp(-x))
		}
		la = logAdd(la, logBinom(float64(alpha), fj)+fj*lq+float64(alpha-j)*l1q+le)
	}
	return la
}

// logAInt is log A_alpha for integer alpha:
// A = sum_{j=0}^{alpha} C(alpha,j) (1-q)^(alpha-j) q^j exp((j^2-j)/(2 sigma^2)),
// summed in log space.
func logAInt(q, sigma float64, alpha int) float64 {
	la := math.Inf(-1)
	lq, l1q := math.Log(q), math.Log1p(-q)
	for j := 0; j <= alpha; j++ {
		fj := float64(j)
		lc := logBinom(float64(alpha), fj)
		la = logAdd(la, lc+fj*lq+float64(alpha-j)*l1q+(fj*fj-fj)/(2*sigma*sigma))
	}
	return la
}

// logBinom is log C(n, k) for 0 <= k <= n.
func logBinom(n, k float64) float64 {
	a, _ := math.Lgamma(n + 1)
	b, _ := math.Lgamma(k + 1)
	c, _ := math.Lgamma(n - k + 1)
	return a - b - c
}

// slog is a signed number stored as its sign and the log of its magnitude.
type slog struct {
	neg bool
	l   float64 // log |x|; -Inf for zero
}

// add returns x + y for a signed log-space number.
func (x slog) add(neg bool, l float64) slog {
	switch {
	case math.IsInf(l, -1):
		return x
	case math.IsInf(x.l, -1):
		return slog{neg, l}
	case x.neg == neg:
		return slog{neg, logAdd(x.l, l)}
	case x.l >= l:
		return slog{x.neg, logSub(x.l, l)}
	default:
		return slog{neg, logSub(l, x.l)}
	}
}

// logAFrac is log A_alpha for fractional alpha (Mironov, Talwar and Zhang
// 2019, Sec. 3.3): A = A0 + A1, the integrals below and above
// z0 = sigma^2 log(1/q - 1) + 1/2 expanded with generalized binomial
// coefficients C(alpha, i); terms are added until both are below e^-30.
// With abs, the absolute values of the terms are summed (an upper bound).
// ok is false when the terms have not settled after 1e6 of them (the sum
// is then not to be trusted).
func logAFrac(q, sigma, alpha float64, abs bool) (la float64, ok bool) {
	a0, a1 := slog{l: math.Inf(-1)}, slog{l: math.Inf(-1)}
	z0 := sigma*sigma*math.Log(1/q-1) + 0.5
	lq, l1q := math.Log(q), math.Log1p(-q)
	s2 := 2 * sigma * sigma
	for i := 0.0; ; i++ {
		lc, neg := logAbsGenBinom(alpha, i)
		neg = neg && !abs
		j := alpha - i
		lt0 := lc + i*lq + j*l1q
		lt1 := lc + j*lq + i*l1q
		le0 := math.Log(0.5) + logErfc((i-z0)/(math.Sqrt2*sigma))
		le1 := math.Log(0.5) + logErfc((z0-j)/(math.Sqrt2*sigma))
		ls0 := lt0 + (i*i-i)/s2 + le0
		ls1 := lt1 + (j*j-j)/s2 + le1
		a0 = a0.add(neg, ls0)
		a1 = a1.add(neg, ls1)
		if math.Max(ls0, ls1) < -30 {
			break
		}
		if i > 1e6 {
			return 0, false
		}
	}
	s := a0.add(a1.neg, a1.l)
	if s.neg {
		return math.Inf(-1), true // cannot happen for a valid q, sigma; defensive
	}
	return s.l, true
}

// logAbsGenBinom returns log|C(alpha, i)| and whether C(alpha, i) < 0 for the
// generalized binomial coefficient with real alpha and integer i >= 0.
func logAbsGenBinom(alpha, i float64) (float64, bool) {
	// C(alpha, i) = Gamma(alpha+1) / (Gamma(i+1) Gamma(alpha-i+1)).
	a, sa := math.Lgamma(alpha + 1)
	b, sb := math.Lgamma(i + 1)
	c, sc := math.Lgamma(alpha - i + 1)
	return a - b - c, sa*sb*sc < 0
}
