package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"dpfl/experiments"
)

// configAccount is the -json form of dpfl account CONFIG.yaml.
type configAccount struct {
	Config            string   `json:"config"`
	Aggregator        string   `json:"aggregator"`
	Clip              float64  `json:"clip"`
	Participation     string   `json:"participation"`
	Rounds            int      `json:"rounds"`
	MaxParticipations int      `json:"max_participations"`
	MeanCohort        float64  `json:"mean_cohort"`
	MeanFill          float64  `json:"mean_cohort_fill"`
	MinSeparation     int      `json:"min_separation"`
	Amplified         bool     `json:"amplified"`
	Sensitivity       float64  `json:"sensitivity"`
	Strategy          string   `json:"strategy,omitempty"`           // correlated-noise aggregators
	SensitivityFor    string   `json:"sensitivity_for,omitempty"`    // the participation it is computed for
	SensitivityMethod string   `json:"sensitivity_method,omitempty"` // how (exact, or an upper bound)
	SensitivityExact  bool     `json:"sensitivity_exact"`
	Parameters        string   `json:"strategy_parameters,omitempty"` // the strategy's own (tuned ν, BLT buffers)
	Sigma             float64  `json:"sigma"`
	Calibrated        bool     `json:"calibrated"`
	NoiseStd          float64  `json:"noise_std"`
	Denominator       float64  `json:"denominator"`
	Epsilon           *float64 `json:"epsilon"` // null without noise
	Delta             float64  `json:"delta"`
	Accountant        string   `json:"accountant"`
	Order             float64  `json:"order,omitempty"`
	Guarantee         string   `json:"guarantee"`
	// privacy.population_scale: the simulated larger population's noise
	// multiplier and guarantee (Sigma and Epsilon are this run's clients').
	PopulationScale     float64  `json:"population_scale,omitempty"`
	PopulationSigma     float64  `json:"population_sigma,omitempty"`
	PopulationEpsilon   *float64 `json:"population_epsilon,omitempty"`
	PopulationGuarantee string   `json:"population_guarantee,omitempty"`
}

// accountConfig prints the privacy account of a run configuration without
// training (dpfl account CONFIG.yaml): it plans and audits the schedule the
// run would realize, computes the mechanism's sensitivity for it, calibrates
// sigma when the config sets a target epsilon, and reports epsilon at the
// config's delta with the method used.
func accountConfig(ctx context.Context, path string, asJSON bool, stdout, stderr io.Writer) int {
	cfg, _, err := experiments.LoadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "dpfl account: invalid config:\n%v\n", err)
		return exitFailure
	}
	plan, err := experiments.NewAccount(ctx, cfg, experiments.Options{BaseDir: filepath.Dir(path), Data: dataLoader(), StrategyCache: strategyCache()})
	if err != nil {
		return failed(ctx, stderr, "account", err)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(stderr, "dpfl account: warning: %s\n", w)
	}
	a, st := plan.Privacy, plan.Stats
	out := configAccount{
		Config: path, Aggregator: cfg.Aggregator.Kind, Clip: cfg.Aggregator.Clip,
		Participation: plan.Summary().Participation, Rounds: cfg.Rounds,
		MaxParticipations: st.MaxParticipations, MeanCohort: st.MeanCohort, MeanFill: st.MeanFill, MinSeparation: st.MinSeparation,
		Amplified: a.Amplified, Sensitivity: a.Sensitivity, Sigma: a.Sigma, Calibrated: cfg.Privacy.Epsilon != nil,
		NoiseStd: a.NoiseStd, Denominator: a.Denominator, Delta: cfg.Privacy.Delta, Accountant: cfg.Privacy.Accountant,
		Guarantee: "none (no noise: ε = ∞)", SensitivityExact: true,
	}
	m := plan.Mechanism
	correlated := !m.Independent() // DP-FedAvg's strategy (C = I) is not listed
	if correlated {
		out.Strategy, out.SensitivityFor = m.Strategy.String(), m.Schema.String()
		out.SensitivityMethod, out.SensitivityExact = m.Sensitivity.Method, m.Sensitivity.Exact
		out.Parameters = m.Parameters().String()
	}
	if a.Private {
		e := a.Final.Epsilon
		out.Epsilon, out.Order, out.Guarantee, out.Accountant = &e, a.Final.Order, a.Final.String(), a.Final.Method
		if a.PopulationScale > 1 {
			pe := a.Population.Epsilon
			out.PopulationScale, out.PopulationSigma, out.PopulationEpsilon, out.PopulationGuarantee = a.PopulationScale, a.PopulationSigma, &pe, a.Population.String()
		}
	}
	if asJSON {
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	fmt.Fprintf(stdout, "config:         %s\n", path)
	fmt.Fprintf(stdout, "aggregator:     %s (clip %g)\n", out.Aggregator, out.Clip)
	fmt.Fprintf(stdout, "participation:  %s\n", out.Participation)
	fmt.Fprintf(stdout, "rounds:         %s\n", plan.RoundsLine())
	if out.Parameters != "" {
		fmt.Fprintf(stdout, "strategy:       %s (%s)\n", out.Strategy, out.Parameters)
	}
	if correlated {
		fmt.Fprintf(stdout, "sensitivity:    %.6g (%s: %s)\n", out.Sensitivity, plan.SensitivityFor(), out.SensitivityMethod)
	} else {
		fmt.Fprintf(stdout, "sensitivity:    %.6g (%s)\n", out.Sensitivity, plan.SensitivityFor())
	}
	if !a.Private {
		fmt.Fprintln(stdout, "sigma:          0 (no privacy)")
		return exitOK
	}
	how := "given"
	if out.Calibrated {
		how = fmt.Sprintf("calibrated for ε = %g at δ = %g", *cfg.Privacy.Epsilon, cfg.Privacy.Delta)
	}
	if s := out.PopulationScale; s > 1 {
		how = fmt.Sprintf("the simulated population's σ = %.6g (%s) divided by privacy.population_scale = %g", out.PopulationSigma, how, s)
	}
	fmt.Fprintf(stdout, "sigma:          %.6g (%s)\n", out.Sigma, how)
	fmt.Fprintf(stdout, "noise std:      %.6g on the clipped sum, %.6g on the average (divided by %g)\n", out.NoiseStd, out.NoiseStd/out.Denominator, out.Denominator)
	fmt.Fprintf(stdout, "epsilon:        %s (this run's clients)\n", out.Guarantee)
	if out.PopulationScale > 1 {
		fmt.Fprintf(stdout, "population:     %s for a population %g times larger with %g times the cohort and the same participation pattern\n",
			out.PopulationGuarantee, out.PopulationScale, out.PopulationScale)
	}
	return exitOK
}
