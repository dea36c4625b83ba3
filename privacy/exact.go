package privacy

import (
	"fmt"
	"math"
)

// Exact is the accountant for compositions of non-sampled Gaussian mechanisms
// (Gaussian differential privacy). It holds mu^2 = sum 1/sigma_i^2 and converts
// with the analytic Gaussian formula of Balle and Wang (2018):
//
//	delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu),
//
// which is tight. It is the right accountant for DP-FedAvg without
// amplification and for every matrix-factorization mechanism (one Gaussian with
// multiplier sigma/sens). PoissonSampled events with 0 < q < 1 and PureDP
// events are refused. The zero value is an empty accountant.
type Exact struct {
	mu2 float64
	adj Adjacency // of the events composed
}

var _ Accountant = (*Exact)(nil)

// NewExact returns an empty exact (GDP) accountant.
func NewExact() Accountant { return &Exact{} }

func init() {
	RegisterAccountant(AccountantKind{Name: "exact", Aliases: []string{MethodExactGDP},
		New: func(AccountantOptions) Accountant { return NewExact() }})
}

// Supports implements Accountant: (compositions of) Gaussians, not sampled
// with 0 < q < 1 and without PureDP events.
func (a *Exact) Supports(e Event) error {
	if err := Validate(e); err != nil {
		return err
	}
	if _, ok := gaussianMu2(e); !ok {
		return errExactUnsupported(e)
	}
	return nil
}

func errExactUnsupported(e Event) error {
	return errUnsupported("exact", e, "only non-sampled Gaussians; use the RDP accountant for Poisson sampling, RDP or PLD for sampling without replacement")
}

// Mu returns the GDP parameter mu = sqrt(sum 1/sigma_i^2) of what a holds.
func (a *Exact) Mu() float64 { return math.Sqrt(a.mu2) }

// Compose implements Accountant.
func (a *Exact) Compose(e Event, count int) error {
	if err := checkCompose(e, count); err != nil {
		return err
	}
	m, ok := gaussianMu2(e)
	if !ok {
		return errExactUnsupported(e)
	}
	adj, err := mergeAdjacency(a.adj, e)
	if err != nil {
		return err
	}
	a.mu2 += float64(count) * m
	a.adj = adj
	return nil
}

// Delta implements Accountant.
func (a *Exact) Delta(epsilon float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	return gdpDelta(a.Mu(), epsilon), nil
}

// Epsilon implements Accountant. It fails when delta = 0 and mu > 0 (no finite
// epsilon exists).
func (a *Exact) Epsilon(delta float64) (Guarantee, error) {
	if err := checkDelta(delta); err != nil {
		return Guarantee{}, err
	}
	g := Guarantee{Delta: delta, Method: MethodExactGDP, Adjacency: a.adj}
	mu := a.Mu()
	if math.IsInf(mu, 1) {
		return g, fmt.Errorf("privacy: exact accountant: infinite mu, no finite epsilon at delta %g", delta)
	}
	if mu == 0 || gdpDelta(mu, 0) <= delta {
		return g, nil
	}
	if delta == 0 {
		return g, fmt.Errorf("privacy: exact accountant: no finite epsilon at delta 0 for mu = %g", mu)
	}
	eps, err := solveDecreasing(func(e float64) float64 { return gdpDelta(mu, e) }, delta, 0)
	if err != nil {
		return g, fmt.Errorf("privacy: exact accountant: epsilon at delta %g: %w", delta, err)
	}
	g.Epsilon = eps
	return g, nil
}

// gdpDelta is delta(eps) of mu-GDP, computed with the second term in log space
// so that large epsilon does not overflow.
func gdpDelta(mu, eps float64) float64 {
	if mu == 0 {
		return 0
	}
	a := phi(mu/2 - eps/mu)
	b := math.Exp(eps + logPhi(-mu/2-eps/mu))
	d := a - b
	if d < 0 {
		return 0
	}
	return d
}

// solveDecreasing finds x >= lo with f(x) = target for a non-increasing f with
// f(lo) > target, by bracketing and bisection to relative precision 1e-13.
func solveDecreasing(f func(float64) float64, target, lo float64) (float64, error) {
	hi := math.Max(1, 2*lo)
	for f(hi) > target {
		lo = hi
		hi *= 2
		if hi > 1e300 {
			return 0, fmt.Errorf("no solution below %g", hi)
		}
	}
	for i := 0; i < 200 && hi-lo > 1e-13*hi; i++ {
		mid := lo + (hi-lo)/2
		if f(mid) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}
