package privacy_test

import (
	"fmt"

	"dpfl/privacy"
)

// The epsilon of DP-FedAvg without amplification: 1000 rounds in which every
// client participates, noise multiplier 30 per round.
func ExampleNewExact() {
	a := privacy.NewExact()
	if err := a.Compose(privacy.Gaussian{NoiseMultiplier: 30}, 1000); err != nil {
		panic(err)
	}
	g, err := a.Epsilon(1e-6)
	if err != nil {
		panic(err)
	}
	fmt.Println(g)
	// Output: ε = 5.189 at δ = 1e-06 (exact-gdp)
}

// DP-SGD with Poisson sampling: the Opacus test vector.
func ExampleNewRDP() {
	a := privacy.NewRDP(nil, privacy.CKS)
	step := privacy.PoissonSampled{Probability: 0.04, Event: privacy.Gaussian{NoiseMultiplier: 1.5}}
	if err := a.Compose(step, 2250); err != nil {
		panic(err)
	}
	g, _ := a.Epsilon(1e-5)
	fmt.Println(g)
	// Output: ε = 7.329 at δ = 1e-05 (rdp-cks, order 3.9; add/remove)
}

// The Choquette-Choo et al. 2023 Table 4 noise multiplier for ε = 1 at δ = 1e-6.
func ExampleCalibrate() {
	factory := func(sigma float64) privacy.Event { return privacy.Gaussian{NoiseMultiplier: sigma} }
	sigma, g, err := privacy.Calibrate(1, 1e-6, factory, privacy.NewExact, 1e-7)
	if err != nil {
		panic(err)
	}
	fmt.Printf("σ = %.5f, %v\n", sigma, g)
	// Output: σ = 4.22468, ε = 1.000 at δ = 1e-06 (exact-gdp)
}

// A zCDP budget for (1, 1e-5)-DP spent by an adaptive algorithm.
func ExampleLedger() {
	l, err := privacy.NewLedgerForTarget(1, 1e-5)
	if err != nil {
		panic(err)
	}
	rho := l.Total() / 10
	for round := 0; l.CanSpend(rho); round++ {
		_ = l.SpendGaussian(round, "gradient", privacy.GaussianSigma(rho))
	}
	fmt.Printf("total ρ = %.5f, %d expenses, remaining %.1g\n", l.Total(), len(l.Expenses()), l.Remaining())
	err = l.Spend(10, "gradient", rho)
	fmt.Println(err != nil)
	// Output:
	// total ρ = 0.02082, 10 expenses, remaining 0
	// true
}
