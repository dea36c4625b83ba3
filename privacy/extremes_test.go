package privacy

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// The extremes of the inputs the accountants and the calibration must
// answer (or refuse in one line) quickly and soundly.
var (
	extremeSigmas = []float64{1e-8, 1e-3, 1, 1e3, 1e8}
	extremeSteps  = []int{1, 1000, 1_000_000_000}
	extremeDeltas = []float64{1e-300, 1e-6, 1 - 1e-6}
	extremeEps    = []float64{1e-8, 1e-3, 1, 1e3, 1e5}
)

// extremeCallLimit bounds every single accountant call (and every
// calibration but the PLD's): generous for a loaded 2-core machine.
const extremeCallLimit = 2 * time.Second

// checkRefusal: an error is one line starting "privacy: ".
func checkRefusal(t *testing.T, what string, err error) {
	t.Helper()
	if msg := err.Error(); !strings.HasPrefix(msg, "privacy: ") || strings.Contains(msg, "\n") {
		t.Errorf("%s: refusal %q is not one line starting \"privacy: \"", what, msg)
	}
}

// logSurvival is log P(N(0,1) > z), with a lower bound where erfc
// underflows (P(N > z) >= φ(z) z/(1+z²)).
func logSurvival(z float64) float64 {
	if s := 0.5 * math.Erfc(z/math.Sqrt2); s > 1e-300 {
		return math.Log(s)
	}
	return -z*z/2 - 0.5*math.Log(2*math.Pi) + math.Log(z/(1+z*z))
}

// sampledGaussianDelta is the exact hockey-stick divergence at eps >= 0 of
// one Poisson-sampled Gaussian (probability q, noise multiplier sigma), the
// larger of the two directions, from its closed form (written out here, not
// taken from the accountants). Where a term underflows it errs upward.
func sampledGaussianDelta(q, sigma, eps float64) float64 {
	s2 := sigma * sigma
	// Remove: P = (1-q)N(0,σ²) + qN(1,σ²), Q = N(0,σ²); the loss exceeds
	// eps above x = σ²(eps + log(1 − (1−q)e^-eps) − log q) + 1/2, and
	// δ = q P(N(1,σ²) > x) − (e^eps − (1−q)) P(N(0,σ²) > x).
	x := s2*(eps+math.Log1p(-(1-q)*math.Exp(-eps))-math.Log(q)) + 0.5
	rem := q*math.Exp(logSurvival((x-1)/sigma)) - math.Exp(eps+math.Log1p(-(1-q)*math.Exp(-eps))+logSurvival(x/sigma))
	if q == 1 {
		return math.Max(0, rem)
	}
	// Add: P = N(0,σ²), Q the mixture; the loss exceeds eps below
	// x = σ² log((e^-eps − (1−q))/q) + 1/2 (nowhere when e^-eps <= 1−q).
	add := 0.0
	if v := math.Exp(-eps) - (1 - q); v > 0 {
		x := s2*math.Log(v/q) + 0.5
		c0, c1 := 0.5*math.Erfc(-x/sigma/math.Sqrt2), 0.5*math.Erfc(-(x-1)/sigma/math.Sqrt2)
		add = c0 - math.Exp(eps)*((1-q)*c0+q*c1)
	}
	return math.Max(0, math.Max(rem, add))
}

// TestExtremesEpsilon: every accountant, every event at the extremes (σ
// from 1e-8 to 1e8, up to 1e9 steps, sampled or not), ε at δ from 1e-300
// to 1 − 1e-6 and δ at ε from 1e-8 to 1e5: each call answers or refuses in
// one line within extremeCallLimit, never NaN; ε is non-increasing in δ and
// in σ, δ non-increasing in ε; no accountant's ε is below the exact one
// (GDP, tight) for unsampled events; and for one sampled step the exact
// divergence at the reported ε (closed form) is at most δ.
func TestExtremesEpsilon(t *testing.T) {
	accts := []string{"exact", "rdp", "rdp-mironov", "zcdp", "zcdp-cks", "pld"}
	if testing.Short() {
		accts = accts[:5]
		t.Log("-short: the PLD accountant's extremes are skipped (several seconds)")
	}
	for _, name := range accts {
		newAcct, err := NewByName(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		sigmas := extremeSigmas
		if name == "pld" {
			sigmas = []float64{1e-8, 1e-3, 1, 1e8} // σ = 1e3 with sampling costs a second
		}
		for _, q := range []float64{1, 0.01} {
			for _, T := range extremeSteps {
				prevEps := map[float64]float64{} // by δ, at the previous (smaller) σ
				for _, sigma := range sigmas {
					what := fmt.Sprintf("%s, q = %g, σ = %g, %d steps", name, q, sigma, T)
					a := newAcct()
					var e Event = Gaussian{sigma}
					if q < 1 {
						e = PoissonSampled{q, e}
					}
					if err := a.Compose(SelfComposed{e, T}, 1); err != nil {
						checkRefusal(t, what, err)
						continue
					}
					last := math.Inf(1)
					for _, delta := range extremeDeltas {
						var g Guarantee
						var err error
						within(t, extremeCallLimit, what+fmt.Sprintf(", ε at δ = %g", delta), func() { g, err = a.Epsilon(delta) })
						if err != nil {
							checkRefusal(t, what, err)
							continue
						}
						eps := g.Epsilon
						if math.IsNaN(eps) || eps < 0 || g.Delta != delta {
							t.Errorf("%s: %v at δ = %g", what, g, delta)
							continue
						}
						if eps > last*(1+1e-9) {
							t.Errorf("%s: ε = %g at δ = %g above the ε = %g at a smaller δ", what, eps, delta, last)
						}
						last = eps
						if p, ok := prevEps[delta]; ok && eps > p*(1+1e-6)+1e-12 {
							t.Errorf("%s: ε = %g at δ = %g above the ε = %g of a smaller σ", what, eps, delta, p)
						}
						prevEps[delta] = eps
						if q == 1 && name != "exact" {
							x := NewExact()
							_ = x.Compose(SelfComposed{Gaussian{sigma}, T}, 1)
							if ge, err := x.Epsilon(delta); err == nil && eps < ge.Epsilon*(1-1e-6) {
								t.Errorf("%s: ε = %g at δ = %g below the exact %g", what, eps, delta, ge.Epsilon)
							}
						}
						if T == 1 && delta > 1e-250 {
							if d := sampledGaussianDelta(q, sigma, eps); d > delta*(1+1e-6) {
								t.Errorf("%s: ε = %g at δ = %g, but the exact δ there is %g", what, eps, delta, d)
							}
						}
					}
					lastDelta := 1.0
					for _, eps := range extremeEps {
						var d float64
						var err error
						within(t, extremeCallLimit, what+fmt.Sprintf(", δ at ε = %g", eps), func() { d, err = a.Delta(eps) })
						if err != nil {
							checkRefusal(t, what, err)
							continue
						}
						if !(d >= 0 && d <= 1) || d > lastDelta*(1+1e-9) {
							t.Errorf("%s: δ = %g at ε = %g (at a smaller ε %g)", what, d, eps, lastDelta)
						}
						lastDelta = d
					}
				}
			}
		}
	}
}

// TestExtremesCalibrate: σ from ε at the extremes (ε from 1e-8 to 1e5, δ
// from 1e-300 to 1 − 1e-6, up to 1e9 steps), for every accountant, at the
// default and the finest tolerance: an answer within the limit whose ε
// meets the target (and is what the accountant gives at that σ), or a
// one-line refusal; σ is non-increasing in the target ε. PLD calibrations
// (tens of evaluations of up to a few tenths of a second at these
// extremes) take a subset and twice the bound, and are skipped with -short.
func TestExtremesCalibrate(t *testing.T) {
	type acct struct {
		name    string
		qs      []float64
		eps     []float64
		deltas  []float64
		steps   []int
		tols    []float64
		limit   time.Duration
		skipped bool
	}
	all := extremeEps
	accts := []acct{
		{"exact", []float64{1}, all, extremeDeltas, extremeSteps, []float64{1e-6, 1e-15}, extremeCallLimit, false},
		{"rdp", []float64{1, 0.01}, all, extremeDeltas, extremeSteps, []float64{1e-6}, extremeCallLimit, false},
		{"rdp-mironov", []float64{0.01}, all, extremeDeltas, extremeSteps, []float64{1e-6}, extremeCallLimit, false},
		{"zcdp", []float64{1}, all, extremeDeltas, extremeSteps, []float64{1e-6}, extremeCallLimit, false},
		{"zcdp-cks", []float64{1}, all, extremeDeltas, extremeSteps, []float64{1e-6, 1e-15}, extremeCallLimit, false},
		{"pld", []float64{1, 0.01}, []float64{1e-8, 1e5}, []float64{1e-300, 1e-6}, []int{1, 1_000_000_000}, []float64{1e-6}, 2 * extremeCallLimit, testing.Short()},
	}
	for _, c := range accts {
		if c.skipped {
			t.Logf("-short: %s calibrations at the extremes skipped (several seconds)", c.name)
			continue
		}
		newAcct, err := NewByName(c.name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range c.qs {
			for _, T := range c.steps {
				f := func(s float64) Event {
					var e Event = Gaussian{s}
					if q < 1 {
						e = PoissonSampled{q, e}
					}
					return SelfComposed{e, T}
				}
				for _, delta := range c.deltas {
					for _, tol := range c.tols {
						lastSigma := math.Inf(1)
						for _, eps := range c.eps {
							what := fmt.Sprintf("%s, q = %g, %d steps: σ for ε = %g at δ = %g, tol %g", c.name, q, T, eps, delta, tol)
							var s float64
							var g Guarantee
							var err error
							start := time.Now()
							within(t, c.limit, what, func() { s, g, err = Calibrate(eps, delta, f, newAcct, tol) })
							if testing.Verbose() {
								t.Logf("%s: %v", what, time.Since(start))
							}
							if err != nil {
								checkRefusal(t, what, err)
								continue
							}
							a := newAcct()
							_ = a.Compose(f(s), 1)
							again, err := a.Epsilon(delta)
							if err != nil || g.Epsilon > eps || again.Epsilon != g.Epsilon || math.IsNaN(s) {
								t.Errorf("%s: σ = %g, %v (again %v, %v)", what, s, g, again, err)
							}
							if s > lastSigma*(1+2*tol) {
								t.Errorf("%s: σ = %g above the σ = %g of a smaller ε", what, s, lastSigma)
							}
							lastSigma = s
						}
					}
				}
			}
		}
	}
}

// TestPLDLargeLosses: steps whose losses run into the hundreds and beyond
// (small σ), where e^loss overflows and e^-loss underflows. The reported ε
// is finite and sound (the exact divergence of the step there, from its
// closed form, is at most δ), and the optimistic estimate is not above it.
// (Before: NaN at σ = 0.02; 0.011 for q = 0.01, σ = 0.01, whose exact
// divergence at 0.011 is 0.01; the optimistic "lower bound" 1238.5 above
// the guarantee 1000 at q = 0.01, σ = 0.024237.)
func TestPLDLargeLosses(t *testing.T) {
	const delta = 1e-6
	for _, c := range []struct{ q, sigma float64 }{{1, 0.02}, {0.01, 0.01}, {0.01, 0.024237}} {
		a := NewPLD(PLDConfig{Discretization: 1e-2}) // coarse, to be quick; the losses are the same
		if err := a.Compose(PoissonSampled{c.q, Gaussian{c.sigma}}, 1); err != nil {
			t.Fatal(err)
		}
		lo, hi, err := PLDBracket(a, delta)
		if err != nil {
			t.Errorf("q = %g, σ = %g: %v", c.q, c.sigma, err)
			continue
		}
		if math.IsNaN(hi.Epsilon) || math.IsNaN(lo.Epsilon) || lo.Epsilon > hi.Epsilon {
			t.Errorf("q = %g, σ = %g: optimistic %v, pessimistic %v", c.q, c.sigma, lo, hi)
		}
		if d := sampledGaussianDelta(c.q, c.sigma, hi.Epsilon); d > delta*(1+1e-6) {
			t.Errorf("q = %g, σ = %g: ε = %g, but the exact δ there is %g > %g", c.q, c.sigma, hi.Epsilon, d, delta)
		}
	}
	// Composed: 2,000 Gaussians of σ = 0.7 are exactly GDP (μ = √2000/0.7);
	// the PLD must not report less than that (it reported 1454.1 for 2344.5).
	a, x := NewPLD(PLDConfig{}), NewExact()
	_ = a.Compose(SelfComposed{Gaussian{0.7}, 2000}, 1)
	_ = x.Compose(SelfComposed{Gaussian{0.7}, 2000}, 1)
	gp, err := a.Epsilon(delta)
	ge, _ := x.Epsilon(delta)
	if err != nil || !(gp.Epsilon >= ge.Epsilon) {
		t.Errorf("2000 × σ = 0.7: PLD %v (%v), exact %v", gp, err, ge)
	}
}

// TestSmoothSizeFactors: the FFT lengths chosen are factorable by gonum's
// FFT (at most 13 factors as it counts them: 4s, then a 2, 3s and 5s);
// 10,628,820 = 4·3^12·5 has 14 and panicked in its plan.
func TestSmoothSizeFactors(t *testing.T) {
	for _, m := range []int{2, 1000, 10_600_000, 10_628_000, 10_628_820, 14_000_000, 1 << 24} {
		n := smoothSize(m)
		if n < m {
			t.Errorf("smoothSize(%d) = %d", m, n)
		}
		a, b, c, r := 0, 0, 0, n
		for ; r%2 == 0; r /= 2 {
			a++
		}
		for ; r%3 == 0; r /= 3 {
			b++
		}
		for ; r%5 == 0; r /= 5 {
			c++
		}
		if r != 1 || a == 0 || a/2+a%2+b+c > 13 {
			t.Errorf("smoothSize(%d) = %d = 2^%d 3^%d 5^%d · %d", m, n, a, b, c, r)
		}
	}
}

// TestSampledGaussianRDPLargeSigma: at large σ the RDP of the sampled
// Gaussian is tiny, and log A rounds near 0 (it came out 0 or negative:
// ε = 0 at δ = 1e-300 for q = 0.01, σ = 1e8). At order 2 it has the closed
// form log(1 + q²(e^{1/σ²} − 1)); RDP never decreases with the order.
func TestSampledGaussianRDPLargeSigma(t *testing.T) {
	const q = 0.01
	for _, sigma := range []float64{1e4, 1e6, 1e8} {
		want := math.Log1p(q * q * math.Expm1(1/(sigma*sigma)))
		if got := SampledGaussianRDP(q, sigma, 2); !(got >= want*(1-1e-9)) || got > want*(1+1e-6) {
			t.Errorf("σ = %g: RDP at order 2 = %g, want %g", sigma, got, want)
		}
		if got := SampledGaussianRDP(q, sigma, 2.5); !(got >= want*(1-1e-9)) {
			t.Errorf("σ = %g: RDP at order 2.5 = %g below the order-2 %g", sigma, got, want)
		}
		a := NewRDP(nil, CKS)
		_ = a.Compose(PoissonSampled{q, Gaussian{sigma}}, 1)
		if g, err := a.Epsilon(1e-300); err != nil || !(g.Epsilon > 0) {
			t.Errorf("σ = %g: %v, %v at δ = 1e-300 (the pair is not identical)", sigma, g, err)
		}
	}
}

// TestCountOverflowAndHugeOrders: compositions whose count overflows int
// are refused by the PLD accountant (its step counts are ints; the product
// wrapped around to a negative count), and an RDP order of 1e9 (a sum of
// about 1e9 terms) answers at once with a bound no smaller than the
// unsampled Gaussian's.
func TestCountOverflowAndHugeOrders(t *testing.T) {
	big := SelfComposed{SelfComposed{Gaussian{1}, 1 << 40}, 1 << 40}
	if err := NewPLD(PLDConfig{}).Compose(big, 1); err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Errorf("2^80 compositions: %v", err)
	}
	a := NewPLD(PLDConfig{})
	_ = a.Compose(SelfComposed{Gaussian{1}, math.MaxInt - 1}, 1)
	if err := a.Compose(SelfComposed{Gaussian{1}, 2}, 1); err == nil {
		t.Error("a total beyond MaxInt compositions was accepted")
	}
	for _, order := range []float64{1e9, 1e9 + 0.5} {
		var r float64
		within(t, extremeCallLimit, fmt.Sprintf("RDP at order %g", order), func() { r = SampledGaussianRDP(0.01, 1, order) })
		if !(r >= order/2*(1-1e-12)) {
			t.Errorf("order %g: RDP %g", order, r)
		}
	}
}

// TestPLDPureDPLargeEpsilon: randomized response with ε beyond 745, where
// e^-ε underflows. One step's ε at δ is at least its exact value
// l + log(1 − δ/p), l the loss of the outcome P favours and p its P-mass
// (sampled: l = log(q·e^ε + 1 − q), p ≈ q); it used to panic (makeslice
// with a length from an infinite loss) or refuse.
func TestPLDPureDPLargeEpsilon(t *testing.T) {
	const eps0, delta = 800.0, 1e-6
	for _, q := range []float64{1, 0.01} {
		a := NewPLD(PLDConfig{Discretization: 1e-2})
		if err := a.Compose(PoissonSampled{q, PureDP{eps0}}, 1); err != nil {
			t.Fatal(err)
		}
		var g Guarantee
		var err error
		within(t, extremeCallLimit, fmt.Sprintf("PLD of PoissonSampled(%g, PureDP(%g))", q, eps0), func() { g, err = a.Epsilon(delta) })
		l := eps0 + math.Log(q) + math.Log1p((1-q)*math.Exp(-eps0)/q)
		want := l + math.Log1p(-delta/q)
		if err != nil || math.IsNaN(g.Epsilon) || g.Epsilon < want-1e-9*want || g.Epsilon > eps0 {
			t.Errorf("q = %g: %v (%v), exact %g", q, g, err, want)
		}
	}
}
