package aggregators_test

import (
	"fmt"
	"slices"

	"dpfl/aggregators"
	"dpfl/aggregators/strategy"
	"dpfl/participation"
	"dpfl/privacy"
	"dpfl/sim/rng"
)

// A mechanism planned on a realized schedule: the tree's sensitivity is
// computed for the schema containing the schedule's participation, the
// noise multiplier calibrated for a target epsilon on the mechanism's
// event, and the aggregator adds the calibrated noise.
func ExampleNewMechanism() {
	const rounds = 16
	declared := participation.Schema{Kind: participation.MinSep, K: 2, B: 8}
	planner := participation.Planner{Schema: declared, Cohort: 5}
	sched, err := planner.Plan(40, rounds, rng.New(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	st := sched.Stats()
	part := aggregators.ContainingPattern(declared, st)
	s := strategy.NewTree(rounds, strategy.TreeOnline) // strategy.NewIdentity(rounds) for DP-FedAvg
	m, err := aggregators.NewMechanism(s, declared, sched, st)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("schema:", part)
	fmt.Printf("sensitivity %.4f %s\n", m.Sensitivity.Value, m.SensitivityFor())

	sigma, g, err := privacy.Calibrate(2, 1e-5, m.Event, func() privacy.Accountant { return privacy.NewExact() }, 1e-6)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("sigma %.4f: %v\n", sigma, g)

	root := rng.New(1)
	noise, err := m.Noise(root, 3, aggregators.Store)
	if err != nil {
		fmt.Println(err)
		return
	}
	agg := m.Aggregator(1, sigma, noise)
	dst := make([]float32, 3)
	rep, err := agg.Aggregate(dst, 0, slices.Values([][]float32{{3, 4, 0}, {0, 0.5, 0}}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("round 0: %d deltas, %d clipped, noise std %.4f on the sum, divided by %g\n", rep.Clients, rep.Clipped, rep.NoiseStd, m.Denominator)
	// Output:
	// schema: minsep(k=2,b=8)
	// sensitivity 3.4641 for tree-online over 16 rounds under minsep(k=2,b=8) (exact)
	// sigma 1.9938: ε = 2.000 at δ = 1e-05 (exact-gdp; zero-out)
	// round 0: 2 deltas, 1 clipped, noise std 6.9068 on the sum, divided by 5
}
