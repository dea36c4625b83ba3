package strategy_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"dpfl/aggregators/strategy"
	"dpfl/participation"
)

// A strategy added the way a new strategy's file adds itself: its type, its
// own parameters (read from Config.Params), and its registration in init.

// twoBand is C with ones on the diagonal and Decay just below it: the
// smallest banded Toeplitz strategy, under its own name.
type twoBand struct{ *strategy.BandedToeplitz }

func (twoBand) String() string { return "two-band" }

// TwoBandParams are two-band's own parameters (nil Params: the defaults).
type TwoBandParams struct{ Decay float64 }

func init() {
	strategy.Register(strategy.Builder{Name: "two-band", Order: 100, Build: func(_ context.Context, cfg strategy.Config) (strategy.Strategy, error) {
		p := TwoBandParams{Decay: 0.5}
		if cfg.Params != nil {
			p = cfg.Params.(TwoBandParams)
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
	single := participation.Schema{Kind: participation.Single}
	ctx := context.Background()
	var losses []float64
	for _, params := range []any{nil, TwoBandParams{Decay: -0.5}} {
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
	if _, err := strategy.Build(ctx, "two-band", strategy.Config{Workload: w, Participation: single, Params: TwoBandParams{Decay: 2}}); err == nil {
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
