package strategy

import (
	"context"
	"fmt"
	"sort"

	"dpfl/participation"
	"dpfl/sim/registry"
)

// Names lists the strategy names Build accepts, in the comparison's order:
// each strategy's file registers it (Register), its Builder's Order placing
// it. The "-f" variants drop the
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

// builders are the registered strategies, in Names' order.
var (
	builders []Builder
	table    = registry.Table[Builder]{List: &builders, Name: func(b Builder) string { return b.Name }, Order: func(b Builder) int { return b.Order }}
)

// Register adds a strategy to Build and Names (from an init function of the
// strategy's file); it panics on a name registered twice.
func Register(b Builder) {
	table.Register(b)
	Names = table.Names(nil)
}

// DefaultBands is the band count b̂ a banded strategy (bandmf, toeplitz,
// and the BLT's default buffers) takes for n rounds when none is given: the
// participation's b (the optimum without amplification), at most n.
func DefaultBands(b, n int) int { return min(b, n) }

// Config is what Build needs besides the strategy name.
type Config struct {
	Workload      *Workload
	Participation participation.Pattern
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
	// GapProgress, if not nil, is called after each iteration of the
	// optimal fixed point with its primal and dual objectives (progress).
	GapProgress func(iter int, primal, dual float64) `json:"-"`
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
	b, ok := table.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("strategy: unknown strategy %q", name)
	}
	n := cfg.Workload.N()
	bands := cfg.Bands
	if bands == 0 {
		bands = max(DefaultBands(cfg.Participation.Separation(), n), 1)
	}
	need := MemoryBytes(name, n, bands)
	if name == "multi-epoch" || name == "multi-epoch-f" { // the workload decides the method
		need = meLBFGSMemory(float64(n))
		if useMEDual(cfg.Workload, cfg.Participation.Separation()) {
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
		if (name == "multi-epoch" || name == "multi-epoch-f") && cfg.Workload.N() > CompareMultiEpochMaxN && !useMEDual(cfg.Workload, cfg.Participation.Separation()) {
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
