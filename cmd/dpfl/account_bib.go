package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"dpfl/aggregators/strategy"
	"dpfl/experiments"
	"dpfl/privacy"
	"dpfl/sim/rng"
)

// bibMech is the calculator's name of balls-in-bins sampling.
const bibMech = "balls-in-bins"

// Limits of the calculator's Monte Carlo sample count (two float64 losses
// per sample are kept).
const (
	minBIBSamples = 100_000
	maxBIBSamples = 10_000_000
)

// maxBIBWork bounds the arithmetic of one Monte Carlo account (bibWork),
// so that no flag combination runs for long.
const maxBIBWork = 2e10

// bibWork is about the operations of drawing samples losses of each side
// with b bins (the triangular b×b product of each sample).
func bibWork(samples, bins int) float64 {
	return 2 * float64(samples) * (float64(bins)*float64(bins)/2 + 3*float64(bins))
}

// bibFlags are the calculator's balls-in-bins flags.
type bibFlags struct {
	bins       int
	cCol       string
	col        []float64
	samples    int
	confidence float64
	seed       uint64
}

// checkBIB validates -mechanism balls-in-bins (set: the flags given).
func (r *calcRequest) checkBIB(set map[string]bool) string {
	b := &r.bib
	for _, f := range []string{"q", "cohort", "population", "sensitivity", "accountant", "orders", "rdp-series", "epsilon", "tol"} {
		if set[f] {
			return fmt.Sprintf("-%s does not apply to -mechanism balls-in-bins (Monte Carlo accounting of -sigma at -bins, -rounds and -c-col)", f)
		}
	}
	switch {
	case !set["bins"] || b.bins < 1:
		return fmt.Sprintf("-mechanism balls-in-bins needs -bins >= 1, got %d", b.bins)
	case r.steps < b.bins:
		return fmt.Sprintf("-rounds %d is fewer than -bins %d: some bins would never train", r.steps, b.bins)
	case float64(b.bins)*float64(r.steps) > 5e7:
		return fmt.Sprintf("-bins %d over -rounds %d keeps %.2g numbers (a mode of the mechanism per bin), above the limit of 5e7", b.bins, r.steps, float64(b.bins)*float64(r.steps))
	case !(b.confidence > 0 && b.confidence < 1):
		return fmt.Sprintf("-confidence must be in (0, 1), got %g", b.confidence)
	}
	b.col = []float64{1}
	if set["c-col"] {
		b.col = nil
		for _, s := range strings.Split(b.cCol, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || !(v >= 0) || math.IsInf(v, 1) {
				return fmt.Sprintf("bad entry %q in -c-col (want finite numbers >= 0: the first column of a banded Toeplitz C)", s)
			}
			b.col = append(b.col, v)
		}
		switch {
		case len(b.col) > b.bins:
			return fmt.Sprintf("-c-col has %d bands, more than -bins %d (balls-in-bins amplification is proved for at most b bands)", len(b.col), b.bins)
		case !(b.col[0] > 0):
			return "-c-col must start with a positive diagonal entry"
		}
	}
	logInv := math.Log(2 / (1 - b.confidence))
	if !set["samples"] {
		b.samples = int(min(maxBIBSamples, max(minBIBSamples, math.Ceil(10*logInv/r.delta))))
	}
	if b.samples < 1 || b.samples > maxBIBSamples {
		return fmt.Sprintf("-samples must be in [1, %d], got %d", maxBIBSamples, b.samples)
	}
	if work := bibWork(b.samples, b.bins); work > maxBIBWork {
		return fmt.Sprintf("-bins %d with -samples %d is about %.2g operations (b² per sample), above the limit of %.0g: use fewer bins or samples", b.bins, b.samples, work, maxBIBWork)
	}
	if need := logInv / r.delta; float64(b.samples) <= need {
		return fmt.Sprintf("-samples %d cannot certify -delta %g at -confidence %g (need more than log(2/(1-confidence))/delta = %.3g)", b.samples, r.delta, b.confidence, need)
	}
	return ""
}

// bibMechanism is the request's mechanism for privacy.BallsInBinsEpsilon.
func (r *calcRequest) bibMechanism() privacy.BallsInBins {
	col := r.bib.col
	return privacy.BallsInBins{Bins: r.bib.bins, Rounds: r.steps, NoiseMultiplier: r.sigma, Bands: len(col),
		Entry: func(i, j int) float64 {
			if i-j < len(col) {
				return col[i-j]
			}
			return 0
		}}
}

// computeBIB is the Monte Carlo account of balls-in-bins, with the
// unamplified guarantee of the same turns (a client in every b-th round of
// a fixed group: one Gaussian mechanism, μ the largest ‖C·1_bin‖/σ).
func (r *calcRequest) computeBIB() (privacy.Report, error) {
	m := r.bibMechanism()
	res := privacy.Report{Mechanism: bibMech, Steps: r.steps, Sensitivity: 1, Delta: r.delta, Bins: r.bib.bins,
		NoiseStd: r.sigma, NoiseMultiplier: r.sigma, Samples: r.bib.samples, Confidence: r.bib.confidence, Seed: r.bib.seed}
	if len(r.bib.col) > 1 || r.bib.col[0] != 1 {
		res.Bands = r.bib.col
	}
	modes, err := m.Modes()
	if err != nil {
		return res, err
	}
	var worst float64
	for _, v := range modes {
		var sq float64
		for _, x := range v {
			sq += x * x
		}
		worst = max(worst, sq)
	}
	a := privacy.NewExact()
	if err := a.Compose(privacy.Neighbouring{Relation: privacy.ZeroOut, Event: privacy.Gaussian{NoiseMultiplier: r.sigma / math.Sqrt(worst)}}, 1); err != nil {
		return res, err
	}
	un, err := a.Epsilon(r.delta)
	if err != nil {
		return res, err
	}
	res.Unamplified = un.String()
	g, err := privacy.BallsInBinsEpsilon(m, r.delta, privacy.MonteCarlo{Samples: r.bib.samples, Confidence: r.bib.confidence},
		rng.New(r.bib.seed).Stream("account/balls-in-bins"))
	if err != nil {
		return res, err
	}
	res.SetGuarantee(g)
	return res, nil
}

// writeBIBText prints the calculator's balls-in-bins answer.
func writeBIBText(w interface{ Write([]byte) (int, error) }, res privacy.Report) {
	c := "C = I (DP-FedAvg)"
	if res.Bands != nil {
		c = fmt.Sprintf("banded Toeplitz C, first column %v", res.Bands)
	}
	fmt.Fprintf(w, "mechanism    balls-in-bins (%d bins: each client in every turn of a uniformly random bin; %s)\n", res.Bins, c)
	fmt.Fprintf(w, "rounds       %d\n", res.Steps)
	fmt.Fprintf(w, "sigma        %g (noise std per round in units of the clip norm)\n", res.NoiseStd)
	fmt.Fprintf(w, "accountant   Monte Carlo over the dominating pair (%d samples each side, seed %d; holds with probability %g)\n", res.Samples, res.Seed, res.Confidence)
	fmt.Fprintf(w, "epsilon      %s\n", res.Guarantee)
	fmt.Fprintf(w, "unamplified  %s (the same turns with fixed groups)\n", res.Unamplified)
}

// checkBIBRequest validates a balls-in-bins calculator request: -sigma,
// -delta and -rounds as for the other mechanisms, then its own flags.
func (r *calcRequest) checkBIBRequest(set map[string]bool) string {
	r.mech = bibMech
	switch {
	case !set["sigma"]:
		return "-mechanism balls-in-bins needs -sigma (Monte Carlo accounting does not calibrate; -epsilon does not apply)"
	case !(r.sigma > 0 && !math.IsInf(r.sigma, 1)):
		return fmt.Sprintf("-sigma must be positive and finite, got %g", r.sigma)
	case !set["delta"]:
		return "-delta is required"
	case !(r.delta > 0 && r.delta < 1):
		return fmt.Sprintf("-delta must be in (0, 1), got %g", r.delta)
	case set["steps"] && set["rounds"]:
		return "give -steps or -rounds, not both"
	}
	return r.checkBIB(set)
}

// configBIB is the amplified Monte Carlo guarantee of a run configured with
// participation balls-in-bins, at the run's noise (the run itself reports
// the unamplified one): C is the run's strategy factor, the noise std per
// round its sigma·sensitivity in units of the clip norm. ok is false for
// other participation kinds, and for runs whose own guarantee is already
// this one (privacy.amplification: balls-in-bins).
func configBIB(plan *experiments.Plan, cfg *experiments.Config, out privacy.Report) (g privacy.Guarantee, samples int, ok bool, err error) {
	pc := cfg.Participation
	if !pc.Kind.Pattern().RandomGroups || !plan.Privacy.Private || out.Clip <= 0 || plan.Privacy.MonteCarlo != nil {
		return g, 0, false, nil
	}
	s := plan.Mechanism.Strategy
	f, err := s.Factor()
	if err != nil {
		return g, 0, true, err
	}
	n, bands := s.N(), s.N()
	if bd, isB := s.(strategy.Banded); isB && bd.Bands() > 0 {
		bands = bd.Bands()
	}
	if ind, isI := s.(strategy.Independent); isI && ind.Independent() {
		bands = 1
	}
	need := math.Log(2/(1-0.99)) / cfg.Privacy.Delta
	samples = int(min(maxBIBSamples, max(minBIBSamples, math.Ceil(10*need))))
	if w := bibWork(samples, pc.B); w > maxBIBWork {
		return g, samples, true, fmt.Errorf("Monte Carlo with %d bins and %d samples is about %.2g operations, above the limit of %.0g (dpfl account -mechanism balls-in-bins -samples sets fewer)", pc.B, samples, w, maxBIBWork)
	}
	m := privacy.BallsInBins{Bins: pc.B, Rounds: n, NoiseMultiplier: out.NoiseStd / out.Clip, Entry: f.At, Bands: bands}
	g, err = privacy.BallsInBinsEpsilon(m, cfg.Privacy.Delta, privacy.MonteCarlo{Samples: samples, Confidence: 0.99}, rng.New(1).Stream("account/balls-in-bins"))
	return g, samples, true, err
}
