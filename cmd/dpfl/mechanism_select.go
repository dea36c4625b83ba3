package main

import (
	"context"
	"fmt"
	"sort"

	"dpfl/aggregators/strategy"
)

// mechanismSlowFromN is the smallest n at which a comparison leaves out the
// slow exact optimizations unless -all is given: from it on, BandMF's and
// the multi-epoch factorization's iterative optimizations (and their -f
// variants), and ν-FTRL's search for its ν (without -nu), take from a
// quarter of a minute to many minutes each, where the others take seconds.
const mechanismSlowFromN = strategy.CompareMultiEpochMaxN + 1

// slowStrategies are the strategies whose optimization dominates a large
// comparison's time.
var slowStrategies = map[string]bool{"bandmf": true, "bandmf-f": true, "multi-epoch": true, "multi-epoch-f": true, "toeplitz": true}

// comparisonSet splits strategy.Names into the strategies a comparison over n
// rounds evaluates and those it leaves out, with why and how to include
// them. With all, every strategy is evaluated. Otherwise those no run can
// use (offline only: the -f variants and toeplitz) are left out, so that
// the table's first row is one a run can use, and from mechanismSlowFromN
// rounds on so are the slow exact optimizations (nu-ftrl when tuneNu: its ν
// is searched for).
func comparisonSet(n int, tuneNu, all bool) (run []string, skipped map[string]string) {
	skipped = map[string]string{}
	for _, name := range strategy.Names {
		switch {
		case all:
			run = append(run, name)
		case mechanismNameOf(name).Kind == "":
			skipped[name] = "offline only (no run can use it); -all to include"
		case n >= mechanismSlowFromN && name == "nu" && tuneNu:
			skipped[name] = fmt.Sprintf("search for ν slow at n ≥ %d (minutes); -all to include, or give -nu", mechanismSlowFromN)
		case n >= mechanismSlowFromN && slowStrategies[name]:
			skipped[name] = fmt.Sprintf("slow exact optimization at n ≥ %d (minutes); -all to include, or -strategy %s", mechanismSlowFromN, displayName(name))
		default:
			run = append(run, name)
		}
	}
	return run, skipped
}

// skippedError is why a comparison left a strategy out.
type skippedError struct{ why string }

func (e skippedError) Error() string { return e.why }

// compareMechanisms is the comparison's rows best first: every strategy
// (strategy.Compare) when none is skipped, else the others evaluated as
// strategy.Compare does and the skipped ones as rows that say why they
// were left out, after the evaluated ones.
func compareMechanisms(ctx context.Context, cfg strategy.Config, skipped map[string]string, progress func(string)) []strategy.Comparison {
	n := cfg.Workload.N()
	if len(skipped) == 0 {
		return strategy.Compare(ctx, cfg, progress)
	}
	var out []strategy.Comparison
	for _, name := range strategy.Names {
		row := strategy.Comparison{Metrics: strategy.Metrics{Strategy: name, N: n, Participation: cfg.Participation.String()}}
		if why, ok := skipped[name]; ok {
			row.Err = skippedError{why}
			out = append(out, row)
			continue
		}
		if progress != nil {
			progress(name)
		}
		s, err := strategy.Build(ctx, name, cfg)
		if err == nil {
			row.Metrics, err = strategy.EvaluateContext(ctx, s, cfg.Workload, cfg.Participation)
			if o, ok := s.(strategy.Optimized); ok && err == nil {
				st := o.Status()
				row.Status = &st
			}
		}
		if ctx.Err() != nil {
			row.Metrics = strategy.Metrics{Strategy: name, N: n, Participation: cfg.Participation.String()}
			row.Err = ctx.Err()
			out = append(out, row)
			break
		}
		row.Err = err
		out = append(out, row)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Err == nil) != (out[j].Err == nil) {
			return out[i].Err == nil
		}
		return out[i].Metrics.Loss < out[j].Metrics.Loss
	})
	return out
}
