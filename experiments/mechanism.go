package experiments

import (
	"context"
	"dpfl/privacy"
	"fmt"
	"sync"

	"gonum.org/v1/gonum/mat"

	"dpfl/aggregators"
	"dpfl/aggregators/strategy"
	"dpfl/aggregators/strategy/filecache"
	"dpfl/sim/rng"

	"dpfl/participation"
)

// aggregatorRun is what the aggregator section depends on in the rest of
// the configuration.
func (c *Config) aggregatorRun() aggregators.Run {
	return aggregators.Run{Rounds: c.Rounds, Participation: c.Participation.schema(), Momentum: c.Server.Momentum, LR: c.lrSchedule()}
}

// schema is the declared participation schema.
func (p ParticipationConfig) schema() participation.Schema {
	return participation.Schema{Kind: p.Kind, K: p.K, B: p.B, Q: p.Q}
}

// buildMechanism builds the aggregator's strategy (strategy.Identity for
// dpfedavg) for the schema that contains the realized participation, and
// plans the mechanism on the realized schedule (see
// aggregators.NewMechanism).
func (p *Plan) buildMechanism(ctx context.Context, declared participation.Schema, cacheDir string) error {
	s, err := p.buildStrategy(ctx, aggregators.ContainingPattern(declared, p.Stats), cacheDir)
	if err != nil {
		return err
	}
	// The mechanism's sensitivity may be one long dense computation (the
	// Gram matrix of an n×n factor): it runs aside (aside).
	m, err := aside(ctx, func() (*aggregators.Mechanism, error) {
		return aggregators.NewMechanism(s, declared, p.Schedule, p.Stats)
	})
	if err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	if ag := p.Config.Aggregator; ag.Adaptive() {
		// Adaptive clipping's count is released every round: its noise is
		// part of the mechanism's privacy event (without noise on the
		// update, nothing is private and the count's noise is kept for the
		// same clip trajectory's sake).
		std := ag.ClipCountStddev
		if std == 0 {
			std = m.Denominator / 20
		}
		p.Privacy.ClipCountStd = std
		if p.Config.Private() {
			if m, err = m.WithClipCount(std); err != nil {
				return fmt.Errorf("experiments: aggregator.clip_quantile: %w", err)
			}
		}
	}
	if p.Config.Privacy.Amplification == AmplificationWOR {
		if m, err = m.WithoutReplacement(p.Schedule); err != nil {
			return fmt.Errorf("experiments: privacy.amplification: %w", err)
		}
	}
	p.Mechanism = m
	return nil
}

// adaptiveClip wraps the mechanism's aggregator in adaptive clipping when
// the configuration asks for it.
func (p *Plan) adaptiveClip(inner *aggregators.Correlated, root rng.Root) (aggregators.Aggregator, error) {
	ag := p.Config.Aggregator
	if !ag.Adaptive() {
		return inner, nil
	}
	a, err := aggregators.NewAdaptiveClip(inner, ag.Clip, p.Mechanism.NoiseStd(1, p.Privacy.Sigma), ag.ClipQuantile, ag.ClipLR,
		p.Privacy.ClipCountStd, p.Mechanism.Denominator, root)
	if err != nil {
		return nil, fmt.Errorf("experiments: aggregator.clip_quantile: %w", err)
	}
	return a, nil
}

// buildStrategy optimizes (or loads from the cache) the aggregator's strategy
// for the run's rounds and the participation schema part.
func (p *Plan) buildStrategy(ctx context.Context, part participation.Pattern, cacheDir string) (strategy.Strategy, error) {
	cfg := p.Config
	ag := cfg.Aggregator
	dir := ag.Cache
	if dir == "" {
		dir = cacheDir
	}
	// The build may go on in a goroutine of its own after ctx is done
	// (strategy.Build returns at once then): its warnings are collected
	// under a lock and kept only when it returned.
	var (
		mu    sync.Mutex
		warns []string
		cache *strategy.Cache
	)
	if dir != "" {
		cache = &strategy.Cache{Store: filecache.Dir(dir), Warn: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			warns = append(warns, fmt.Sprintf("aggregator.cache: %v", err))
		}}
	}
	scfg := ag.StrategyConfig(cfg.aggregatorRun(), part, cache)
	s, err := strategy.Build(ctx, ag.StrategyName(), scfg)
	if err != nil {
		return nil, fmt.Errorf("experiments: aggregator %s: %w", ag.Kind, err)
	}
	mu.Lock()
	p.Warnings = append(p.Warnings, warns...)
	mu.Unlock()
	if note := notConverged(s); note != "" {
		p.NotConverged = note
		p.Warnings = append(p.Warnings, fmt.Sprintf("aggregator.kind %s: the %s", ag.Kind, note))
	}
	return s, nil
}

// notConverged says how the optimizer of s stopped short of its optimum
// ("" when s converged or is not optimized): its method and iterations,
// and its message (why it stopped, and the certified gap to the optimum
// when it has one).
// The privacy account is exact either way; the noise may be larger.
func notConverged(s strategy.Strategy) string {
	o, ok := s.(strategy.Optimized)
	if !ok {
		return ""
	}
	st := o.Status()
	if st.Converged {
		return ""
	}
	note := fmt.Sprintf("strategy's optimizer did not converge (%s, %d iterations", st.Method, st.Iterations)
	if st.Message != "" {
		note += ": " + st.Message
	}
	return note + "). The privacy account is exact for the strategy used; its noise may be larger than the optimum's (dpfl mechanism shows the optimizer's progress)"
}

// checkNoiseMemory refuses, at planning, a noise source that would hold
// more than aggregator.memory_budget_mb between rounds for models of
// dimension d: the banded recurrence's last b−1 outputs, or the latents a
// store-mode Linear source keeps alive at its peak plus its batch's outputs.
func (p *Plan) checkNoiseMemory(ctx context.Context, d int) error {
	ag := p.Config.Aggregator
	s := p.Mechanism.Strategy
	if p.Mechanism.Independent() || ag.Mode() != aggregators.Store {
		return nil
	}
	mb := func(vectors int) float64 { return float64(vectors) * float64(d) * 8 / (1 << 20) }
	if bs, ok := s.(strategy.Buffered); ok {
		theta, _ := bs.Buffers()
		if need := mb(len(theta)); need > ag.MemoryBudgetMB {
			return fmt.Errorf("experiments: aggregator.memory_budget_mb: BLT noise keeps %d buffers of %d parameters = %.0f MB, over the budget of %.0f MB; use fewer buffers or raise the budget",
				len(theta), d, need, ag.MemoryBudgetMB)
		}
		return nil
	}
	if b := aggregators.BandedWidth(s); b > 0 {
		if need := mb(b - 1); need > ag.MemoryBudgetMB {
			fit := int(ag.MemoryBudgetMB*(1<<20)/(float64(d)*8)) + 1
			return fmt.Errorf("experiments: aggregator.memory_budget_mb: banded noise (%d bands) keeps its last %d noise vectors of %d parameters = %.0f MB, over the budget of %.0f MB; use fewer bands (at most %d fit), raise the budget, or set aggregator.memory: regenerate (O(d) memory, but each round redraws every earlier latent: about %d noise vectors per round on average, much slower)",
				b, b-1, d, need, ag.MemoryBudgetMB, max(1, fit), (p.Config.Rounds+1)/2)
		}
		return nil
	}
	w, err := aside(ctx, func() (*mat.Dense, error) { return aggregators.NoiseWeights(s) }) // a dense triangular inverse
	if err != nil {
		return err
	}
	lin := aggregators.NewLinear(w, "noise", rng.New(0), d, aggregators.Store) // holds no vector yet
	if held := lin.PeakLatents() + lin.Outputs(); mb(held) > ag.MemoryBudgetMB {
		return fmt.Errorf("experiments: aggregator.memory: store mode would keep up to %d noise vectors of %d parameters = %.0f MB, over aggregator.memory_budget_mb = %.0f; use memory: regenerate (O(d) memory, about %d noise vectors redrawn per round) or raise the budget",
			held, d, mb(held), ag.MemoryBudgetMB, lin.NonZeros())
	}
	return nil
}

// aside returns f(), or ctx's error as soon as ctx is done: planning steps
// that are one long dense computation, which does not look at ctx, run in a
// goroutine so that a signal ends planning at once (the abandoned
// computation's result is dropped).
func aside[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// serverOptimizer builds the configured server optimizer (the default one
// for a name validation refuses).
func (c *Config) serverOptimizer() aggregators.ServerOptimizer {
	k, ok := aggregators.LookupServerOptimizer(c.Server.Optimizer)
	if !ok {
		k, _ = aggregators.LookupServerOptimizer(aggregators.DefaultServerOptimizer)
	}
	return k.New(c.Server.params(), c.lrSchedule())
}

// lrSchedule is the server's learning-rate schedule.
func (c *Config) lrSchedule() aggregators.LRSchedule { return c.Server.Schedule(c.Rounds) }

// Schedule is the learning-rate schedule the (valid) keys describe for a
// run of the given rounds.
func (sv ServerConfig) Schedule(rounds int) aggregators.LRSchedule {
	shape := map[string]aggregators.LRShape{"linear": aggregators.LinearLR, "cosine": aggregators.CosineLR}[sv.LRSchedule]
	s := aggregators.LRSchedule{Shape: shape, Rounds: rounds, Warmup: sv.WarmupRounds, Cooldown: sv.CooldownRounds}
	if sv.FinalLRFraction != nil {
		s.Final = *sv.FinalLRFraction
	}
	return s
}

// newAGD builds DP-AGD's controller with a fresh ledger of the plan's
// budget.
func (p *Plan) newAGD(root rng.Root) (*aggregators.AGD, error) {
	ag, rho := p.Config.Aggregator, p.Privacy.AGDBudget
	ledger, err := privacy.NewLedger(rho)
	if err != nil {
		return nil, fmt.Errorf("experiments: privacy.epsilon: %w", err)
	}
	a := &aggregators.AGD{Clip: ag.Clip, LossClip: ag.LossClip, RhoNG: ag.GradientShare * rho, RhoMax: ag.SelectShare * rho,
		Growth: ag.BudgetGrowth, Steps: ag.StepCandidates, MaxStep: ag.MaxStep, StepEvery: ag.StepEvery, Ledger: ledger, Root: root}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("experiments: aggregator: %w", err)
	}
	return a, nil
}
