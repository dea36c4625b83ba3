package experiments_test

import (
	"context"
	"fmt"
	"os"

	"dpfl/experiments"
)

const exampleConfig = `
name: example
seed: 1
rounds: 10
data: {dataset: mnist, partition: iid, clients: 1000}
model: {kind: logreg}
client: {batch_size: 10, lr: 0.1, max_examples: 20}
participation: {kind: kb, cohort: 100, k: 5, b: 2}
aggregator: {kind: bandmf, clip: 1.0}
privacy: {epsilon: 4, delta: 1.0e-5}
server: {lr: 1.0, momentum: 0.9}
eval: {every: 5}
`

// Planning without training (what dpfl account prints): the schedule, the
// mechanism and its calibration.
func ExampleNewAccount() {
	cfg, _, err := experiments.Load([]byte(exampleConfig), "example.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := experiments.NewAccount(context.Background(), cfg, experiments.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.RoundsLine())
	fmt.Printf("sensitivity %.4f %s\n", p.Mechanism.Sensitivity.Value, p.SensitivityFor())
	fmt.Printf("sigma %.4f: %v\n", p.Privacy.Sigma, p.Privacy.Final)
	// Output:
	// 10 rounds, mean cohort 100.0 of 100 (fill 1.000), at most 4 participations per client, at least 2 round(s) apart
	// sensitivity 2.2361 for bandmf over 10 rounds under kb(k=5,b=2) (exact)
	// sigma 1.0812: ε = 4.000 at δ = 1e-05 (exact-gdp; zero-out)
}

// A run: planned, trained and written into its folder under OutDir.
func ExampleRun() {
	cfg, _, err := experiments.Load([]byte(exampleConfig), "example.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := os.MkdirTemp("", "dpfl-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(out)
	res, err := experiments.Run(context.Background(), cfg, experiments.Options{OutDir: out})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := res.Summary
	fmt.Printf("%s %s after %d rounds: test accuracy %.4f, ε = %.3g (%s)\n", s.RunID, s.Status, s.Rounds, s.FinalAccuracy, *s.Epsilon, s.EpsilonMethod)
	// Output:
	// 39f6023f3a complete after 10 rounds: test accuracy 0.7242, ε = 4 (exact-gdp)
}
