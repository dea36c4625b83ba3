package privacy

import (
	"context"
	"fmt"
	"math"
	"sort"
)

// Method names of guarantees from the PLD accountant.
const (
	// MethodPLD is the pessimistic PLD estimate: an upper bound on epsilon.
	MethodPLD = "pld"
	// MethodPLDOptimistic is the optimistic PLD estimate: a lower bound on
	// the exact epsilon of the events, not a privacy guarantee.
	MethodPLDOptimistic = "pld-optimistic"
)

// pldMinDelta is the smallest delta the pessimistic PLD accountant tries
// to certify.
const pldMinDelta = 1e-50

// DefaultPLDDiscretization is the default largest loss grid step of the PLD
// accountant.
const DefaultPLDDiscretization = 1e-3

// PLDConfig sets the discretization of the PLD accountant.
type PLDConfig struct {
	// Discretization is the largest grid step of the privacy loss (default
	// DefaultPLDDiscretization). The step actually used is the largest
	// Discretization/2^m that is at most 1/64 of the standard deviation of
	// every composed step's loss, which bounds the relative error of the
	// composed variance by about 1/(6·64²) whatever the number of steps (see
	// the package documentation); a smaller Discretization only matters for
	// steps with a wide loss distribution, and costs time.
	Discretization float64
	// Optimistic selects the lower estimate (Method "pld-optimistic") instead
	// of the default upper bound. The optimistic epsilon is not a privacy
	// guarantee: it shows how far the pessimistic bound can be from the
	// exact value.
	Optimistic bool
	// MaxSize caps the FFT length (default 1 << 24).
	MaxSize int
	// perSD is the grid resolution in points per standard deviation of a
	// step's loss (0: pldPointsPerSD); the calibration pilot uses fewer.
	perSD float64
	// maxPoints (0: pldStepMax) is the grid size beyond which a step's
	// grid is coarsened; the calibration pilot uses fewer.
	maxPoints float64
}

// PLD is a privacy-loss-distribution accountant (Koskela, Jälkö and Honkela
// 2020; Doroshenko et al. 2022; dp_accounting's pld package) under add/remove
// adjacency. It accounts Gaussians, PureDP events
// (through randomized response, which dominates every ε-DP mechanism) and
// their Poisson-sampled versions. Each distinct step is discretized on a
// uniform loss grid (connect-the-dots for the pessimistic estimate,
// order-preserving merging for the optimistic one; see the package
// documentation, "PLD accountant"), the steps are composed by one FFT
// power per distinct step, and delta is the hockey-stick divergence of the
// result, the larger of the remove and add directions. Compose only
// records; the work happens in Epsilon and Delta and is cached until the
// next Compose. A PLD is not safe for concurrent use.
type PLD struct {
	cfg   PLDConfig
	adj   Adjacency // of the events composed
	steps map[pldKey]int
	cache []*pldDist // composed distributions; nil after Compose
	// ctx, when set (during epsilonContext), is checked between and
	// during the long steps of composing.
	ctx context.Context
}

// pldKey identifies a step: a Gaussian (rr false, param = sigma) or
// randomized response (rr true, param = epsilon) on a Poisson sample with
// probability q (q = 1: no sampling).
type pldKey struct {
	rr       bool
	q, param float64
}

var _ Accountant = (*PLD)(nil)

// NewPLD returns an empty PLD accountant; zero fields of cfg take their
// defaults. It panics on a negative or NaN discretization or a MaxSize below
// 2 (programmer errors).
func NewPLD(cfg PLDConfig) Accountant {
	if cfg.Discretization == 0 {
		cfg.Discretization = DefaultPLDDiscretization
	}
	if cfg.MaxSize == 0 {
		cfg.MaxSize = 1 << 24
	}
	if !(cfg.Discretization > 0) || math.IsInf(cfg.Discretization, 1) || cfg.MaxSize < 2 {
		panic(fmt.Sprintf("privacy: bad PLD config %+v", cfg))
	}
	return &PLD{cfg: cfg, steps: map[pldKey]int{}}
}

func init() {
	RegisterAccountant(AccountantKind{Name: MethodPLD, New: func(AccountantOptions) Accountant { return NewPLD(PLDConfig{}) }})
}

// Supports implements Accountant: Gaussians and PureDP events,
// Poisson-sampled Gaussians (or compositions of Gaussians inside a sample)
// and Poisson-sampled PureDP events.
func (a *PLD) Supports(e Event) error {
	if err := Validate(e); err != nil {
		return err
	}
	return pldSteps(map[pldKey]int{}, e, 1)
}

// HasBracket reports whether PLDBracket can bracket the epsilon of acct:
// whether acct is a PLD accountant.
func HasBracket(acct Accountant) bool {
	_, ok := acct.(*PLD)
	return ok
}

func (a *PLD) method() string {
	if a.cfg.Optimistic {
		return MethodPLDOptimistic
	}
	return MethodPLD
}

// Compose implements Accountant. Accepted: Gaussians, PureDP events,
// Poisson-sampled Gaussians (or compositions of Gaussians inside a sample),
// Poisson-sampled PureDP events, and self- and plain compositions of these.
func (a *PLD) Compose(e Event, count int) error {
	if err := checkCompose(e, count); err != nil {
		return err
	}
	add := map[pldKey]int{}
	if err := pldSteps(add, e, count); err != nil {
		return err
	}
	adj, err := mergeAdjacency(a.adj, e)
	if err != nil {
		return err
	}
	for k, c := range add {
		if c > math.MaxInt-a.steps[k] {
			return fmt.Errorf("privacy: PLD accountant: more than %d compositions of one step", math.MaxInt)
		}
	}
	for k, c := range add {
		a.steps[k] += c
		a.cache = nil
	}
	if count > 0 {
		a.adj = adj
	}
	return nil
}

func pldSteps(dst map[pldKey]int, e Event, count int) error {
	if count == 0 {
		return nil
	}
	switch e := e.(type) {
	case Gaussian:
		if !math.IsInf(e.NoiseMultiplier, 1) {
			return addSteps(dst, pldKey{q: 1, param: e.NoiseMultiplier}, count)
		}
		return nil
	case PureDP:
		if e.Epsilon > 0 {
			return addSteps(dst, pldKey{rr: true, q: 1, param: e.Epsilon}, count)
		}
		return nil
	case SelfComposed:
		if e.Count > 0 && count > math.MaxInt/e.Count {
			return fmt.Errorf("privacy: PLD accountant: %d × %d compositions overflow", count, e.Count)
		}
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
		if e.Probability == 1 {
			return pldSteps(dst, e.Event, count)
		}
		if p, ok := e.Event.(PureDP); ok {
			if p.Epsilon > 0 {
				return addSteps(dst, pldKey{rr: true, q: e.Probability, param: p.Epsilon}, count)
			}
			return nil
		}
		sigma, ok := gaussianEquivalent(e.Event)
		if !ok {
			return errUnsupported("PLD", e, "Poisson sampling is supported for a Gaussian (or Gaussians) or one PureDP event")
		}
		if !math.IsInf(sigma, 1) {
			return addSteps(dst, pldKey{q: e.Probability, param: sigma}, count)
		}
		return nil
	case SampledWithoutReplacement:
		return pldWORSteps(dst, e, count)
	case Neighbouring:
		return pldSteps(dst, e.Event, count)
	}
	return errUnsupported("PLD", e, "only Gaussians and PureDP events, Poisson-sampled or not")
}

// pldWORSteps adds the steps of a Gaussian on a sample drawn without
// replacement (replace-one adjacency). With γ = m/n and the Gaussian's noise
// multiplier σ relative to the replace-one sensitivity, the pair
// ((1−γ)N(0,σ²) + γN(1,σ²), N(0,σ²)) and its reverse dominate it (Zhu, Dong
// and Wang 2022, the dominating pair of subsampling without replacement
// under replace-one; the pair is attained in one dimension by datasets whose
// other records all sit at one end of the clipping range), so the step is
// the Poisson-sampled Gaussian's PLD in both directions at q = γ. A PLD
// accountant never holds both kinds of steps (their adjacencies differ).
func pldWORSteps(dst map[pldKey]int, e SampledWithoutReplacement, count int) error {
	switch e.SampleSize {
	case 0:
		return nil
	case e.PopulationSize:
		return pldSteps(dst, e.Event, count)
	}
	sigma, ok := gaussianEquivalent(e.Event)
	if !ok {
		return errUnsupported("PLD", e, "sampling without replacement is supported for a Gaussian (or Gaussians)")
	}
	if !math.IsInf(sigma, 1) {
		return addSteps(dst, pldKey{q: e.Ratio(), param: sigma}, count)
	}
	return nil
}

// addSteps adds count repetitions of the step k to dst, refusing a total
// beyond int.
func addSteps(dst map[pldKey]int, k pldKey, count int) error {
	if count > math.MaxInt-dst[k] {
		return fmt.Errorf("privacy: PLD accountant: more than %d compositions of one step", math.MaxInt)
	}
	dst[k] += count
	return nil
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
	g := Guarantee{Delta: delta, Method: a.method(), Adjacency: a.adj}
	if len(a.steps) == 0 || delta >= 1 {
		return g, nil
	}
	if delta < pldMinDelta && !a.cfg.Optimistic {
		// Each step's grid leaves up to 1e-21 of its mass (times its
		// sampling probability) at infinite loss: no δ this small can be
		// certified, whatever the events; say so before composing.
		return g, fmt.Errorf("privacy: PLD accountant: no finite ε: δ = %g is below %g, smaller than the mass its grids leave at infinite loss", delta, pldMinDelta)
	}
	dists, err := a.distributions()
	if err != nil {
		return g, err
	}
	// delta(eps) is the larger of the directions' deltas, so the answer is
	// the larger of their epsilons.
	for _, c := range dists {
		eps, err := c.epsilon(delta)
		if err != nil {
			return g, fmt.Errorf("privacy: PLD accountant: no finite ε: %w", err)
		}
		g.Epsilon = math.Max(g.Epsilon, eps)
	}
	return g, nil
}

// epsilonContext implements contextual.
func (a *PLD) epsilonContext(ctx context.Context, delta float64) (Guarantee, error) {
	a.ctx = ctx
	defer func() { a.ctx = nil }()
	return a.Epsilon(delta)
}

// canceled returns the error of the accountant's context, if it is done.
func (a *PLD) canceled() error {
	if a.ctx == nil {
		return nil
	}
	if err := a.ctx.Err(); err != nil {
		return fmt.Errorf("privacy: PLD accountant: %w", err)
	}
	return nil
}

// distributions composes all steps in the remove direction and (if any
// step is sampled or randomized response with sampling) the add direction.
func (a *PLD) distributions() ([]*pldDist, error) {
	if a.cache != nil {
		return a.cache, nil
	}
	keys := make([]pldKey, 0, len(a.steps))
	sampled := false
	for k := range a.steps {
		keys = append(keys, k)
		sampled = sampled || k.q < 1
	}
	// A fixed order makes the result independent of map iteration.
	sort.Slice(keys, func(i, j int) bool {
		x, y := keys[i], keys[j]
		if x.rr != y.rr {
			return !x.rr
		}
		if x.q != y.q {
			return x.q < y.q
		}
		return x.param < y.param
	})
	dirs := []bool{false}
	if sampled {
		dirs = append(dirs, true)
	}
	var out []*pldDist
	pess := !a.cfg.Optimistic
	for _, add := range dirs {
		lps := make([]lossPair, len(keys))
		for i, k := range keys {
			if k.rr {
				lps[i] = rrLoss{q: k.q, eps: k.param, add: add}
			} else {
				lps[i] = gaussLoss{q: k.q, sigma: k.param, add: add}
			}
		}
		perSD := a.cfg.perSD
		if perSD == 0 {
			perSD = pldPointsPerSD
		}
		if err := a.canceled(); err != nil {
			return nil, err
		}
		maxPoints := a.cfg.maxPoints
		if maxPoints == 0 {
			maxPoints = pldStepMax
		}
		step := pldStep(lps, a.cfg.Discretization, perSD, maxPoints)
		counts := make([]int, len(keys))
		for i, k := range keys {
			counts[i] = a.steps[k]
		}
		if err := tooWide(lps, counts, step, a.cfg.MaxSize); err != nil {
			return nil, err
		}
		parts := make([]distCount, len(keys))
		for i, k := range keys {
			if err := a.canceled(); err != nil {
				return nil, err
			}
			parts[i] = distCount{stepDist(lps[i], step, pess), a.steps[k]}
		}
		c, err := composeDists(parts, a.cfg.MaxSize, pess, a.canceled)
		if err != nil {
			return nil, err
		}
		c.prepare()
		out = append(out, c)
	}
	a.cache = out
	return out, nil
}

// pilot implements piloted: a coarse PLD accountant (8 grid points per
// standard deviation, grid step up to 1e-2, at most 2^16 points per step
// and 2^20 per composition) whose calibration lands within about 1e-3 of
// this one's, at a small fraction of the cost; nil for a pilot itself.
func (a *PLD) pilot() Accountant {
	if a.cfg.perSD != 0 {
		return nil
	}
	cfg := a.cfg
	cfg.perSD = 8
	cfg.Discretization = math.Max(cfg.Discretization, 1e-2)
	cfg.maxPoints = 1 << 16
	cfg.MaxSize = min(cfg.MaxSize, 1<<20) // a pilot that big is not worth its time
	return NewPLD(cfg)
}

// PLDBracketContext is PLDBracket ending early with ctx's error (wrapped)
// when ctx is done.
func PLDBracketContext(ctx context.Context, acct Accountant, delta float64) (lower, upper Guarantee, err error) {
	if a, ok := acct.(*PLD); ok {
		a.ctx = ctx
		defer func() { a.ctx = nil }()
	}
	return PLDBracket(acct, delta)
}

// PLDBracket returns the optimistic and pessimistic PLD epsilons of the
// events composed into acct (which must be a PLD accountant) at delta, with
// acct's discretization: the exact epsilon of the events lies between them.
// Only the upper one is a guarantee.
func PLDBracket(acct Accountant, delta float64) (lower, upper Guarantee, err error) {
	a, ok := acct.(*PLD)
	if !ok {
		return lower, upper, fmt.Errorf("privacy: PLDBracket needs a PLD accountant, got %T", acct)
	}
	pess, opt := *a, *a
	pess.cfg.Optimistic, opt.cfg.Optimistic = false, true
	pess.cache, opt.cache = nil, nil
	if !a.cfg.Optimistic {
		pess.cache = a.cache
	}
	if upper, err = pess.Epsilon(delta); err != nil {
		return lower, upper, err
	}
	if !a.cfg.Optimistic && a.cache == nil {
		a.cache = pess.cache
	}
	lower, err = opt.Epsilon(delta)
	return lower, upper, err
}
