package strategy_test

import (
	"context"
	"fmt"

	"dpfl/aggregators/strategy"

	"dpfl/participation"
)

// Losses of three strategies for 64 rounds of prefix sums under single
// participation (σ = 1); the values are the closed forms and reference
// reference losses in the package documentation (2080, 1351, 282.2014).
func ExampleEvaluate() {
	w := strategy.Prefix(64)
	single := participation.AtMostOnce
	opt, err := strategy.OptimalSingle(context.Background(), w, strategy.FixedPointOptions{Gap: 1e-9})
	if err != nil {
		panic(err)
	}
	for _, s := range []strategy.Strategy{strategy.NewIdentity(64), strategy.NewTree(64, strategy.TreeVanilla), opt} {
		m, err := strategy.Evaluate(s, w, single)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-8s sens %.4f loss %.4f\n", m.Strategy, m.Sensitivity.Value, m.Loss)
	}
	// Output:
	// identity sens 1.0000 loss 2080.0000
	// tree     sens 2.6458 loss 1351.0000
	// optimal  sens 1.0000 loss 282.2014
}

// The sensitivity of DP-SGD and of the tree under (k,b)-participation with
// n = 2052, k = 6, b = 342 (√6 and √118).
func ExampleSensitivityOf() {
	p := participation.Turns(6, 342)
	for _, s := range []strategy.Strategy{strategy.NewIdentity(2052), strategy.NewTree(2052, strategy.TreeVanilla)} {
		sens, err := strategy.SensitivityOf(s.Gram(), p)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %.4f, %s\n", s.String(), sens.Value, sens.Method)
	}
	// Output:
	// identity: 2.4495, (k,b) patterns, diagonal blocks (exact)
	// tree: 10.8628, (k,b) patterns, X>=0 (exact)
}
