package strategy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"dpfl/participation"
)

// Names lists the strategy names Build accepts, in the order of the issue
// (the comparison's order): those registered below, then any strategy
// registered by its own file (Register). The "-f" variants drop the
// equal-column-norm constraint (Choquette-Choo et al. 2023 App. B, the "F" rows of Table 2) and
// need (k,b) or b-min-sep participation for b.
var Names []string

// Builder is how Build makes one named strategy: Build returns build(ctx,
// cfg), after checking the memory estimate (nil Memory: eight dense n×n
// matrices of float64) against cfg.MemoryLimit.
type Builder struct {
	Name   string
	Order  int // position in Names
	Build  func(ctx context.Context, cfg Config) (Strategy, error)
	Memory func(n, bands float64) float64 // bytes for n rounds and b̂ bands
}

var builders = map[string]Builder{}

// Register adds a strategy to Build and Names (from an init function of the
// strategy's file); it panics on a name registered twice.
func Register(b Builder) {
	if _, dup := builders[b.Name]; dup {
		panic("strategy: " + b.Name + " registered twice")
	}
	builders[b.Name] = b
	Names = append(Names, b.Name)
	sort.SliceStable(Names, func(i, j int) bool { return builders[Names[i]].Order < builders[Names[j]].Order })
}

// Config is what Build needs besides the strategy name.
type Config struct {
	Workload      *Workload
	Participation participation.Schema
	// Bands is b̂ for bandmf; 0 means Participation.B under kb/minsep (the
	// optimum without amplification) and is an error under single.
	Bands int
	// Nu is ν for ν-DP-FTRL; negative means tune it on a 0.0005 grid by the
	// single-participation prefix-sum loss (Choquette-Choo et al. 2024 §4).
	Nu float64
	// NuBands, if positive, truncates ν-DP-FTRL's C to its first NuBands
	// Toeplitz coefficients (NewNuBanded; ν is still tuned untruncated).
	NuBands int
	// Buffers is the number of BLT buffers; 0 means b̂ − 1, the noise memory
	// of BandMF with b̂ = Bands bands (Participation.B under kb/minsep when
	// Bands is 0), at most 8, at least 1; under single participation
	// without Bands it is an error.
	Buffers int
	// RestartEvery, if positive, restarts the tree strategies (tree,
	// tree-online, tree-full) every RestartEvery rounds (TreeRestarts).
	RestartEvery int
	// RestartSegments, if not empty, restarts the tree strategies at the
	// start of each segment (NewTreeSegments); the lengths must sum to the
	// workload's rounds. Exclusive with RestartEvery.
	RestartSegments []int
	// Gap is the fixed point's target relative gap (0: 1e-6).
	Gap float64
	// LBFGS controls bandmf and multi-epoch.
	LBFGS LBFGSOptions
	// Cache, if not nil, stores and reuses optimized strategies.
	Cache *Cache
	// Params are the own parameters of a strategy that has no field above:
	// a value of the type its file defines, set by its aggregator kind
	// (aggregators.Kinds) and read by its Builder (nil: its defaults), so
	// that a new strategy adds no field here.
	Params any
	// MemoryLimit, if positive, refuses a strategy whose MemoryBytes
	// estimate is above it (bytes), before anything is allocated.
	MemoryLimit float64
}

// Build returns the named strategy for cfg. Errors are usage problems
// (unknown name, missing parameter) or numerical failures.
func Build(ctx context.Context, name string, cfg Config) (Strategy, error) {
	b, ok := builders[name]
	if !ok {
		return nil, fmt.Errorf("strategy: unknown strategy %q", name)
	}
	n := cfg.Workload.N()
	bands := cfg.Bands
	if bands == 0 {
		bands = min(max(cfg.Participation.B, 1), n)
	}
	need := MemoryBytes(name, n, bands)
	if name == "multi-epoch" || name == "multi-epoch-f" { // the workload decides the method
		need = meLBFGSMemory(float64(n))
		if useMEDual(cfg.Workload, cfg.Participation.B) {
			need = meDualMemory(float64(n))
		}
	}
	if err := checkNeed(name, n, need, cfg.MemoryLimit); err != nil {
		return nil, err
	}
	// Some strategies' construction is one long dense factorization:
	// return on cancellation whatever step it is in (withContext).
	return withContext(ctx, func() (Strategy, error) { return b.Build(ctx, cfg) })
}

func init() {
	dense := func(k float64) func(n, b float64) float64 {
		return func(n, b float64) float64 { return k * (8 * n * n) }
	}
	lbfgs := func(vars float64) float64 { return 2 * 20 * 8 * vars } // Store 20
	Register(Builder{Name: "identity", Order: 0, Memory: dense(3), Build: func(_ context.Context, cfg Config) (Strategy, error) {
		return NewIdentity(cfg.Workload.N()), nil
	}})
	for i, est := range []TreeEstimator{TreeVanilla, TreeOnline, TreeFull} {
		Register(Builder{Name: [...]string{"tree", "tree-online", "tree-full"}[i], Order: 1 + i, Memory: dense([...]float64{3, 4, 8}[i]),
			Build: func(_ context.Context, cfg Config) (Strategy, error) { return buildTree(cfg, est) }})
	}
	Register(Builder{Name: "optimal", Order: 4, Memory: dense(8), Build: func(ctx context.Context, cfg Config) (Strategy, error) {
		return cfg.Cache.Optimal(ctx, cfg.Workload, FixedPointOptions{Gap: cfg.Gap})
	}})
	multiEpoch := func(n, b float64) float64 { // b: the participation's b (MemoryBytes' bands)
		if meDualShapeF(n, b) {
			return meDualMemory(n)
		}
		return meLBFGSMemory(n)
	}
	for i, name := range []string{"multi-epoch", "multi-epoch-f"} {
		Register(Builder{Name: name, Order: 5 + i, Memory: multiEpoch, Build: func(ctx context.Context, cfg Config) (Strategy, error) {
			return buildMultiEpoch(ctx, name, cfg)
		}})
	}
	bandMem := func(n, b float64) float64 { return 6*(8*n*n) + lbfgs(n*math.Min(math.Max(b, 1), n)) }
	for i, name := range []string{"bandmf", "bandmf-f"} {
		Register(Builder{Name: name, Order: 7 + i, Memory: bandMem, Build: func(ctx context.Context, cfg Config) (Strategy, error) {
			return buildBandMF(ctx, name, cfg)
		}})
	}
	Register(Builder{Name: "nu", Order: 9, Memory: dense(6), Build: func(_ context.Context, cfg Config) (Strategy, error) { return buildNu(cfg) }})
	Register(Builder{Name: "blt", Order: 10, Memory: dense(6), Build: buildBLT})
	Register(Builder{Name: "toeplitz", Order: 11, Memory: dense(6), Build: func(ctx context.Context, cfg Config) (Strategy, error) {
		b := cfg.Bands
		if b == 0 {
			if cfg.Participation.Kind == participation.Single {
				return nil, errors.New("strategy: toeplitz under single participation needs a band count")
			}
			b = min(cfg.Participation.B, cfg.Workload.N())
		}
		return OptimizeBandedToeplitz(ctx, cfg.Workload, b, cfg.Participation, cfg.LBFGS)
	}})
}

// BLTDefaultMaxBuffers caps the default number of BLT buffers (Config.Buffers
// 0): BandMF's memory b̂ − 1 when that is small, else this.
const BLTDefaultMaxBuffers = 8

// BLTMaxBuffers is the most buffers OptimizeBLT takes: it optimizes every
// count from 1 up, each over 2m parameters, so its work grows at least as
// m², and the prefix-sum loss stops improving after a few buffers (1,000
// rounds: 9301.2558 from 8 to 64 buffers).
const BLTMaxBuffers = 64

// BLTBuffers is the number of buffers Build gives a BLT for cfg (see
// Config.Buffers), or an error.
func BLTBuffers(cfg Config) (int, error) {
	if cfg.Buffers < 0 {
		return 0, fmt.Errorf("strategy: blt needs buffers ≥ 1, got %d", cfg.Buffers)
	}
	if cfg.Buffers > BLTMaxBuffers {
		return 0, fmt.Errorf("strategy: blt takes at most %d buffers, got %d", BLTMaxBuffers, cfg.Buffers)
	}
	if cfg.Buffers > 0 {
		return cfg.Buffers, nil
	}
	b := cfg.Bands
	if b == 0 {
		if cfg.Participation.Kind == participation.Single {
			return 0, errors.New("strategy: blt under single participation needs a buffer count (or bands, whose BandMF memory it matches)")
		}
		b = min(cfg.Participation.B, cfg.Workload.N())
	}
	return min(max(b-1, 1), BLTDefaultMaxBuffers), nil
}

func buildBLT(ctx context.Context, cfg Config) (Strategy, error) {
	m, err := BLTBuffers(cfg)
	if err != nil {
		return nil, err
	}
	return OptimizeBLT(ctx, cfg.Workload, m, cfg.Participation, cfg.LBFGS)
}

func buildTree(cfg Config, est TreeEstimator) (Strategy, error) {
	n := cfg.Workload.N()
	if len(cfg.RestartSegments) > 0 {
		sum := 0
		for _, l := range cfg.RestartSegments {
			if l <= 0 {
				return nil, fmt.Errorf("strategy: tree segment lengths must be positive, got %v", cfg.RestartSegments)
			}
			sum += l
		}
		if sum != n || cfg.RestartEvery > 0 {
			return nil, fmt.Errorf("strategy: tree segments %v sum to %d rounds, the workload has %d (and RestartEvery must be 0)", cfg.RestartSegments, sum, n)
		}
		return NewTreeSegments(cfg.RestartSegments, est), nil
	}
	if cfg.RestartEvery > 0 {
		return NewTreeRestarts(n, cfg.RestartEvery, est), nil
	}
	return NewTree(n, est), nil
}

func buildNu(cfg Config) (Strategy, error) {
	n := cfg.Workload.N()
	nu, tuned := cfg.Nu, cfg.Nu < 0
	if tuned {
		nu = TuneNu(n, 0.0005)
	}
	if !(nu < 1) {
		return nil, fmt.Errorf("strategy: nu %v outside [0,1)", nu)
	}
	var s *Nu
	if cfg.NuBands > 0 {
		s = NewNuBanded(n, nu, cfg.NuBands)
	} else {
		s = NewNu(n, nu)
	}
	s.tuned = tuned
	return s, nil
}

func buildMultiEpoch(ctx context.Context, name string, cfg Config) (Strategy, error) {
	p := cfg.Participation
	if p.Kind == participation.Single {
		return nil, fmt.Errorf("strategy: %s needs kb or minsep participation (use optimal for single)", name)
	}
	if name == "multi-epoch-f" {
		return cfg.Cache.MultiEpochUnequal(ctx, cfg.Workload, p.B, cfg.LBFGS)
	}
	return cfg.Cache.MultiEpoch(ctx, cfg.Workload, p.B, cfg.LBFGS)
}

func buildBandMF(ctx context.Context, name string, cfg Config) (Strategy, error) {
	n, p := cfg.Workload.N(), cfg.Participation
	b := cfg.Bands
	if b == 0 {
		if p.Kind == participation.Single {
			return nil, fmt.Errorf("strategy: %s under single participation needs a band count", name)
		}
		b = min(p.B, n)
	}
	if b < 1 || b > n {
		return nil, fmt.Errorf("strategy: bands %d outside [1,%d]", b, n)
	}
	if name == "bandmf-f" {
		if p.Kind == participation.Single {
			return nil, fmt.Errorf("strategy: bandmf-f needs kb or minsep participation (its diagonal is constrained per (k,b) pattern)")
		}
		if b > p.B {
			return nil, fmt.Errorf("strategy: bandmf-f needs bands ≤ b (%d > %d)", b, p.B)
		}
		return cfg.Cache.BandMFUnequal(ctx, cfg.Workload, b, p.B, cfg.LBFGS)
	}
	return cfg.Cache.BandMF(ctx, cfg.Workload, b, cfg.LBFGS)
}

// Comparison is one row of Compare: the metrics, or why the strategy was
// skipped.
type Comparison struct {
	Metrics Metrics
	Status  *Status // optimizer status, nil for closed forms
	Err     error
}

// CompareMultiEpochMaxN is the largest n for which Compare optimizes the
// multi-epoch MF by dense L-BFGS (O(n³) per evaluation); above it Compare
// skips it with a note (Build still computes it on request), unless it goes
// through the dual (useMEDual: seconds at n = 2052).
const CompareMultiEpochMaxN = 512

// Compare builds and evaluates every strategy in Names for cfg and returns
// them best (lowest loss) first; strategies that cannot be built for cfg come
// last with their error. progress, if not nil, is called before each one.
func Compare(ctx context.Context, cfg Config, progress func(name string)) []Comparison {
	var out []Comparison
	for _, name := range Names {
		if progress != nil {
			progress(name)
		}
		var s Strategy
		var err error
		if (name == "multi-epoch" || name == "multi-epoch-f") && cfg.Workload.N() > CompareMultiEpochMaxN && !useMEDual(cfg.Workload, cfg.Participation.B) {
			err = fmt.Errorf("strategy: %s skipped in the comparison for n > %d (dense optimization; ask for it with -strategy %s)", name, CompareMultiEpochMaxN, name)
		} else {
			s, err = Build(ctx, name, cfg)
		}
		if err != nil {
			out = append(out, Comparison{Metrics: Metrics{Strategy: name, N: cfg.Workload.N(), Participation: cfg.Participation.String()}, Err: err})
			if ctx.Err() != nil {
				break
			}
			continue
		}
		m, err := EvaluateContext(ctx, s, cfg.Workload, cfg.Participation)
		if ctx.Err() != nil {
			out = append(out, Comparison{Metrics: Metrics{Strategy: name, N: cfg.Workload.N(), Participation: cfg.Participation.String()}, Err: ctx.Err()})
			break
		}
		c := Comparison{Metrics: m, Err: err}
		if o, ok := s.(Optimized); ok {
			st := o.Status()
			c.Status = &st
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Err == nil) != (out[j].Err == nil) {
			return out[i].Err == nil
		}
		return out[i].Metrics.Loss < out[j].Metrics.Loss
	})
	return out
}
