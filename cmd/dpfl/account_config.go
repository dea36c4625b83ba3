package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"

	"dpfl/experiments"
	"dpfl/privacy"
)

// configAccount is dpfl account CONFIG.yaml's answer: the plan's privacy
// report (experiments.Plan.Report) and the file it is of.
type configAccount struct {
	Config string
	// Parameters are the strategy's own (tuned ν, BLT buffers), for
	// correlated-noise aggregators.
	Parameters string
	privacy.Report
	// Adaptive clipping (aggregator.clip_quantile): the target quantile and
	// the noise std on the count of unclipped clients, part of the event.
	ClipQuantile, ClipCountStddev float64
	// BallsInBins is the amplified guarantee of participation
	// balls-in-bins at this sigma (Monte Carlo at 99% confidence; the
	// run reports the unamplified Guarantee), or why there is none.
	BallsInBins string
}

// configForm is its -json form. Strategy, sensitivity_for (the
// participation schema) and sensitivity_method are those of a
// correlated-noise aggregator; the population fields are set under
// privacy.population_scale (sigma and epsilon are this run's clients').
var configForm = privacy.NewForm(configAccount{},
	"config=Config", "aggregator=Mechanism", "clip=Clip", "participation=Participation", "rounds=Steps",
	"max_participations=MaxParticipations", "mean_cohort=MeanCohort", "mean_cohort_fill=MeanFill",
	"min_separation=MinSeparation", "amplified=Amplified", "sensitivity=Sensitivity",
	"strategy=Strategy,omitempty", "sensitivity_for=Schema,omitempty", "sensitivity_method=SensitivityMethod,omitempty",
	"sensitivity_exact=SensitivityExact", "strategy_parameters=Parameters,omitempty", "sigma=NoiseMultiplier", "calibrated=Calibrated", "noise_std=NoiseStd",
	"denominator=Denominator", "epsilon=Epsilon", "delta=Delta", "accountant=Accountant", "order=Order,omitempty",
	"guarantee=Guarantee", "population_scale=PopulationScale,omitempty", "population_sigma=PopulationNoiseMultiplier,omitempty",
	"population_epsilon=PopulationEpsilon,omitempty", "population_guarantee=PopulationGuarantee,omitempty",
	"clip_quantile=ClipQuantile,omitempty", "clip_count_stddev=ClipCountStddev,omitempty",
	"balls_in_bins_guarantee=BallsInBins,omitempty")

// MarshalJSON writes a in its -json form.
func (a configAccount) MarshalJSON() ([]byte, error) { return configForm.Marshal(&a) }

// UnmarshalJSON reads the -json form.
func (a *configAccount) UnmarshalJSON(b []byte) error { return configForm.Unmarshal(b, a) }

// accountConfig prints the privacy account of a run configuration without
// training (dpfl account CONFIG.yaml): it plans and audits the schedule the
// run would realize, computes the mechanism's sensitivity for it, calibrates
// sigma when the config sets a target epsilon, and reports epsilon at the
// config's delta with the method used.
func accountConfig(ctx context.Context, path string, asJSON bool, stdout, stderr io.Writer) int {
	data := dataLoader()
	cfg, _, err := experiments.Limits{Data: data}.LoadFile(path) // Data: the δ bound counts a population the data decides
	if err != nil {
		fmt.Fprintf(stderr, "dpfl account: invalid config:\n%v\n", err)
		return exitFailure
	}
	plan, err := experiments.NewAccount(ctx, cfg, experiments.Options{BaseDir: filepath.Dir(path), Data: data, StrategyCache: strategyCache(), Workers: runtime.NumCPU()}) // Workers: a Monte Carlo account's goroutines (its result does not depend on them)
	if err != nil {
		return failed(ctx, stderr, "account", err)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(stderr, "dpfl account: warning: %s\n", w)
	}
	out := configAccount{Config: path, Report: plan.Report(), ClipQuantile: cfg.Aggregator.ClipQuantile, ClipCountStddev: plan.Privacy.ClipCountStd}
	correlated := !plan.Mechanism.Independent() // DP-FedAvg's strategy (C = I) is not listed
	if correlated {
		out.Parameters = plan.Mechanism.Parameters().String()
	}
	if g, samples, ok, err := configBIB(plan, cfg, out.Report); ok && err != nil {
		out.BallsInBins = "not accounted: " + oneLine(err)
	} else if ok {
		out.BallsInBins = fmt.Sprintf("%s (amplified by the random bins: Monte Carlo, %d samples each side, seed 1)", g, samples)
	}
	if asJSON {
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	fmt.Fprintf(stdout, "config:         %s\n", path)
	if out.ClipQuantile > 0 {
		fmt.Fprintf(stdout, "aggregator:     %s (adaptive clip from %g to the %g-quantile of the update norms; count noise std %g)\n", out.Mechanism, out.Clip, out.ClipQuantile, out.ClipCountStddev)
	} else {
		fmt.Fprintf(stdout, "aggregator:     %s (clip %g)\n", out.Mechanism, out.Clip)
	}
	fmt.Fprintf(stdout, "participation:  %s\n", out.Participation)
	fmt.Fprintf(stdout, "rounds:         %s\n", plan.RoundsLine())
	if out.Parameters != "" {
		fmt.Fprintf(stdout, "strategy:       %s (%s)\n", out.Strategy, out.Parameters)
	}
	if correlated {
		fmt.Fprintf(stdout, "sensitivity:    %.6g (%s: %s)\n", out.Sensitivity, out.SensitivityFor, out.SensitivityMethod)
	} else {
		fmt.Fprintf(stdout, "sensitivity:    %.6g (%s)\n", out.Sensitivity, out.SensitivityFor)
	}
	if !plan.Privacy.Private {
		fmt.Fprintln(stdout, "sigma:          0 (no privacy)")
		return exitOK
	}
	how := "given"
	if out.Calibrated {
		how = fmt.Sprintf("calibrated for ε = %g at δ = %g", *cfg.Privacy.Epsilon, cfg.Privacy.Delta)
	}
	if s := out.PopulationScale; s > 1 {
		how = fmt.Sprintf("the simulated population's σ = %.6g (%s) divided by privacy.population_scale = %g", out.PopulationNoiseMultiplier, how, s)
	}
	if out.ClipQuantile > 0 {
		how += "; the update's multiplier: with the clip count's release the pair meets ε"
	}
	if cfg.Aggregator.Kind == "dp-agd" {
		how = fmt.Sprintf("dp-agd's first gradient: 1/√(2·%g·ρ), ρ = %.6g the zCDP budget of ε = %g at δ = %g by %s",
			cfg.Aggregator.GradientShare, plan.Privacy.AGDBudget, *cfg.Privacy.Epsilon, cfg.Privacy.Delta, cfg.Privacy.Accountant)
	}
	fmt.Fprintf(stdout, "sigma:          %.6g (%s)\n", out.NoiseMultiplier, how)
	if cfg.Aggregator.Kind == "dp-agd" {
		fmt.Fprintf(stdout, "noise std:      %.6g on the clipped sum of the first gradient (dp-agd normalizes the noisy sum and picks its step by noisy max; the rounds are those the budget pays for)\n", out.NoiseStd)
	} else {
		fmt.Fprintf(stdout, "noise std:      %.6g on the clipped sum, %.6g on the average (divided by %g)", out.NoiseStd, out.NoiseStd/out.Denominator, out.Denominator)
		if out.ClipQuantile > 0 {
			fmt.Fprint(stdout, " at the initial clip; it follows the clip norm")
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stdout, "epsilon:        %s (this run's clients)\n", out.Guarantee)
	if out.BallsInBins != "" {
		fmt.Fprintf(stdout, "amplified:      %s\n", out.BallsInBins)
	}
	if mc := plan.Privacy.MonteCarlo; mc != nil {
		fmt.Fprintf(stdout, "accountant:     Monte Carlo over balls-in-bins' dominating pair (%d samples each side, holds with probability %g)\n", mc.Samples, mc.Confidence)
		if out.Calibrated {
			fmt.Fprintf(stdout, "unamplified:    σ = %.6g for the same target, each turn of a bin composed (%s)\n", mc.UnamplifiedSigma, mc.Unamplified)
		} else {
			fmt.Fprintf(stdout, "unamplified:    %s at this noise, each turn of a bin composed\n", mc.Unamplified)
		}
	}
	if out.PopulationScale > 1 {
		fmt.Fprintf(stdout, "population:     %s for a population %g times larger with %g times the cohort and the same participation pattern\n",
			out.PopulationGuarantee, out.PopulationScale, out.PopulationScale)
	}
	return exitOK
}
