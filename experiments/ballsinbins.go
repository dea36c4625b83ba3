package experiments

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"dpfl/aggregators"
	"dpfl/privacy"
	"dpfl/sim/rng"
)

// Runs amplified by balls-in-bins (privacy.amplification: balls-in-bins).
//
// The mechanism is the run's strategy C (the identity for dpfedavg) on the
// balls-in-bins schedule, in units of the clip norm: its dominating pair
// has noise multiplier σ·sensitivity (the noise std on the clipped sum over
// the clip), and privacy.BallsInBinsGuarantee estimates its epsilon by
// Monte Carlo. A calibrated run:
//  1. calibrates the unamplified noise as every other run does (each turn
//     of a bin composed); that noise always suffices in truth, and is where
//     the search starts;
//  2. searches, with common random numbers from the stream of the run's
//     root labelled "accounting/balls-in-bins/calibrate" (one per chunk
//     of samples), for the smallest noise whose upper confidence bound on
//     δ at the target ε, plus a margin of bibMargin standard errors, is at
//     most δ (privacy.BallsInBinsCalibrate, relative tolerance bibRelTol);
//  3. estimates the guarantee at that noise from independent samples, the
//     stream labelled "accounting/balls-in-bins/epsilon", at confidence
//     bibConfidence: that is the epsilon every output reports. Were it above
//     the target (the margin makes that rare), it is reported as it is, with
//     a warning.
//
// A run with aggregator.noise_multiplier skips 1 and 2. The chunks' streams
// make the account the same bit for bit whatever the number of workers.

// Constants of a balls-in-bins run's Monte Carlo account.
const (
	bibConfidence = 0.99
	bibMargin     = 2
	bibRelTol     = 1e-3
)

// MonteCarloAccount is how a run's guarantee was estimated by Monte Carlo
// (privacy.amplification: balls-in-bins).
type MonteCarloAccount struct {
	Samples    int     // drawn from each side of the dominating pair
	Confidence float64 // the probability with which the guarantee holds
	// Unamplified is the guarantee of the same noise with each turn of a
	// bin composed (what the run would report without amplification), and
	// UnamplifiedSigma the noise multiplier that would meet the target so.
	Unamplified      privacy.Guarantee
	UnamplifiedSigma float64
}

// monteCarloSamples is privacy.monte_carlo_samples or its default: four
// times the fewest samples that can certify δ at bibConfidence.
func (c *Config) monteCarloSamples() int {
	if n := c.Privacy.MonteCarloSamples; n > 0 {
		return n
	}
	return int(math.Ceil(4 * math.Log(2/(1-bibConfidence)) / c.Privacy.Delta))
}

// bibMechanism is the plan's mechanism as a privacy.BallsInBins (noise
// multiplier unset), refused when its C has more bands than bins.
func (p *Plan) bibMechanism() (privacy.BallsInBins, error) {
	s, bins := p.Mechanism.Strategy, p.Config.Participation.B
	bands := s.N()
	if w := aggregators.BandedWidth(s); w > 0 {
		bands = w
	}
	if p.Mechanism.Independent() {
		bands = 1
	}
	if bands > bins {
		return privacy.BallsInBins{}, fmt.Errorf("experiments: privacy.amplification: balls-in-bins needs C with at most participation.b = %d bands, and %s has %d", bins, s, bands)
	}
	f, err := s.Factor()
	if err != nil {
		return privacy.BallsInBins{}, fmt.Errorf("experiments: privacy.amplification: %w", err)
	}
	return privacy.BallsInBins{Bins: bins, Rounds: s.N(), Entry: f.At, Bands: bands}, nil
}

// bibStreams are the streams of the chunks of the Monte Carlo account
// labelled label.
func bibStreams(root rng.Root, label string) privacy.Streams {
	return func(i int) *rand.Rand { return root.Stream("accounting/balls-in-bins/"+label, uint64(i)) }
}

// amplifyBIB replaces the plan's unamplified accounting (a.Sigma, a.Final)
// by the Monte Carlo account of balls-in-bins (see above).
func (p *Plan) amplifyBIB(ctx context.Context, root rng.Root, workers int) error {
	cfg, a := p.Config, &p.Privacy
	m, err := p.bibMechanism()
	if err != nil {
		return err
	}
	mc := privacy.MonteCarlo{Samples: cfg.monteCarloSamples(), Confidence: bibConfidence}
	acc := &MonteCarloAccount{Samples: mc.Samples, Confidence: mc.Confidence, Unamplified: a.Final, UnamplifiedSigma: a.Sigma}
	sens := a.Sensitivity
	if eps := cfg.Privacy.Epsilon; eps != nil {
		t := privacy.BallsInBinsTarget{Epsilon: *eps, Delta: cfg.Privacy.Delta, MC: mc, Margin: bibMargin, Hint: a.Sigma * sens, RelTol: bibRelTol}
		s, err := privacy.BallsInBinsCalibrate(ctx, m, t, bibStreams(root, "calibrate"), workers)
		if err != nil {
			return fmt.Errorf("experiments: privacy.amplification: %w", err)
		}
		a.Sigma = s / sens
	}
	m.NoiseMultiplier = a.Sigma * sens
	g, err := privacy.BallsInBinsGuarantee(ctx, m, cfg.Privacy.Delta, mc, bibStreams(root, "epsilon"), workers)
	if err != nil {
		return fmt.Errorf("experiments: privacy.amplification: %w", err)
	}
	if eps := cfg.Privacy.Epsilon; eps != nil && g.Epsilon > *eps {
		p.Warnings = append(p.Warnings, fmt.Sprintf("privacy.epsilon: the Monte Carlo estimate at the calibrated noise, %s, is above the target %g by its sampling error (it is the one reported); privacy.monte_carlo_samples raises the samples", g, *eps))
	}
	a.Final, a.MonteCarlo = g, acc
	a.Amplified, a.WholeRun = true, true
	return nil
}
