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
	"dpfl/participation"
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

// TestRegisteredStrategy: a strategy registered from another file is in
// Names at its Order (after the built-in ones, whose order is unchanged),
// Build makes it with its default and its own parameters, and Compare and
// MemoryBytes treat it as any other.
func TestRegisteredStrategy(t *testing.T) {
	want := []string{"identity", "tree", "tree-online", "tree-full", "optimal", "multi-epoch", "multi-epoch-f", "bandmf", "bandmf-f", "nu", "blt", "toeplitz", "two-band"}
	if !slices.Equal(strategy.Names, want) {
		t.Fatalf("Names = %v, want %v", strategy.Names, want)
	}
	w := strategy.Prefix(16)
	single := participation.AtMostOnce
	ctx := context.Background()
	var losses []float64
	for _, params := range []any{nil, twoBandParams{Decay: -0.5}} {
		s, err := strategy.Build(ctx, "two-band", strategy.Config{Workload: w, Participation: single, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		m, err := strategy.Evaluate(s, w, single)
		if err != nil || m.Strategy != "two-band" || !(m.Loss > 0) {
			t.Fatalf("params %v: %+v, %v", params, m, err)
		}
		losses = append(losses, m.Loss)
	}
	if losses[0] == losses[1] {
		t.Errorf("the decay is not read: losses %v", losses)
	}
	if _, err := strategy.Build(ctx, "two-band", strategy.Config{Workload: w, Participation: single, Params: twoBandParams{Decay: 2}}); err == nil {
		t.Error("decay 2 accepted")
	}
	if got, dense := strategy.MemoryBytes("two-band", 100, 1), 8*(8*100.0*100); got != dense {
		t.Errorf("MemoryBytes = %g, want the default %g", got, dense)
	}
	found := false
	for _, c := range strategy.Compare(ctx, strategy.Config{Workload: w, Participation: single}, nil) {
		found = found || c.Metrics.Strategy == "two-band" && c.Err == nil
	}
	if !found {
		t.Error("Compare did not evaluate two-band")
	}
	defer func() {
		if recover() == nil {
			t.Error("a name registered twice did not panic")
		}
	}()
	strategy.Register(strategy.Builder{Name: "two-band"})
}
