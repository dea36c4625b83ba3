package extension

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"dpfl/aggregators"
	"dpfl/aggregators/strategy"
	"dpfl/experiments"
)

// A new aggregator kind, added as CONTRIBUTING.md's recipe adds one: its
// strategy (a type, its own parameters and its registration), and its kind
// registered by name.

// twoBand is C with ones on the diagonal and Decay just below it, a banded
// Toeplitz strategy under its own name.
type twoBand struct{ *strategy.BandedToeplitz }

func (twoBand) String() string { return "two-band" }

// twoBandParams are two-band's own parameters (nil Params: the defaults).
type twoBandParams struct{ Decay float64 }

func init() {
	strategy.Register(strategy.Builder{Name: "two-band", Order: 100, Build: func(_ context.Context, cfg strategy.Config) (strategy.Strategy, error) {
		p := twoBandParams{Decay: 0.5}
		if cfg.Params != nil {
			p = cfg.Params.(twoBandParams)
		}
		if !(p.Decay > -1 && p.Decay < 1) {
			return nil, errors.New("two-band: decay outside (-1, 1)")
		}
		t, err := strategy.NewBandedToeplitz(cfg.Workload.N(), []float64{1, p.Decay})
		if err != nil {
			return nil, err
		}
		return twoBand{t}, nil
	}})
	aggregators.Register(aggregators.Kind{Name: "two-band", Doc: "a two-band Toeplitz C (a test's kind)", Correlated: true, Strategy: "two-band"})
}

const twoBandRun = `
name: two-band
seed: 3
rounds: 2
data: {dataset: mnist, partition: iid, clients: 40}
model: {kind: logreg}
client: {batch_size: 10, lr: 0.1, max_examples: 20}
participation: {kind: kb, cohort: 10, k: 1, b: 2}
aggregator: {kind: two-band, clip: 1.0, noise_multiplier: 1}
privacy: {delta: 1.0e-3}
server: {lr: 1}
`

// TestRegisteredAggregatorKind: a kind registered from a test file is known
// by name (Kinds, Names), a configuration that uses it validates, and a
// run with it trains two rounds with its strategy, whose sensitivity the
// privacy report states.
func TestRegisteredAggregatorKind(t *testing.T) {
	if aggregators.Lookup("two-band") == nil || !slices.Contains(aggregators.KindNames(), "two-band") {
		t.Fatalf("two-band is not a kind: %v", aggregators.KindNames())
	}
	if n, ok := aggregators.MechanismName("two-band"); !ok || n.Kind != "two-band" || n.Strategy != "two-band" {
		t.Errorf("mechanism name %+v, %v", n, ok)
	}
	cfg, _, err := experiments.Load([]byte(twoBandRun), "two-band.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Aggregator.StrategyName(); got != "two-band" || cfg.Aggregator.Memory != "store" {
		t.Errorf("strategy %q, memory %q", got, cfg.Aggregator.Memory)
	}
	out, err := experiments.Run(context.Background(), cfg, experiments.Options{OutDir: t.TempDir(), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if s.Status != "complete" || s.Rounds != 2 || s.Mechanism != "two-band" || s.Strategy != "two-band" {
		t.Errorf("summary: status %q, rounds %d, mechanism %q, strategy %q", s.Status, s.Rounds, s.Mechanism, s.Strategy)
	}
	// Under kb(k=1) a client takes part once: the sensitivity is C's
	// largest column norm, √(1 + 0.5²).
	if want := math.Sqrt(1.25); math.Abs(s.Sensitivity-want) > 1e-12 {
		t.Errorf("sensitivity %v, want %v", s.Sensitivity, want)
	}
}
