package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"dpfl/aggregators/strategy"
	"dpfl/participation"
	"dpfl/privacy"
	"dpfl/sim/rng"
)

// privacyRequest is dpfl mechanism's -epsilon section: DP-FedAvg and BandMF
// calibrated for (Epsilon, Delta) on Clients clients with Cohort per round,
// amplified and unamplified side by side.
type privacyRequest struct {
	Epsilon, Delta  float64
	Clients, Cohort int
	schema          participation.Schema // the -participation, k and b
}

// mechanismPrivacyFlags are the section's flags.
type mechanismPrivacyFlags struct {
	epsilon, delta  *float64
	clients, cohort *int
}

func definePrivacyFlags(fs interface {
	Float64(string, float64, string) *float64
	Int(string, int, string) *int
}) mechanismPrivacyFlags {
	return mechanismPrivacyFlags{
		epsilon: fs.Float64("epsilon", 0, "with -delta, -clients and -cohort under -participation kb: calibrate dpfedavg and bandmf for this ε, amplified (kb-poisson, balls-in-bins, sampling without replacement) and unamplified side by side"),
		delta:   fs.Float64("delta", 0, "delta of -epsilon"),
		clients: fs.Int("clients", 0, "population of -epsilon's comparison"),
		cohort:  fs.Int("cohort", 0, "clients per round of -epsilon's comparison"),
	}
}

// check returns the request the flags give (nil when -epsilon is not
// set) or why they are wrong.
func (f mechanismPrivacyFlags) check(set map[string]bool, p participation.Schema, n int, asJSON bool) (*privacyRequest, string) {
	if !set["epsilon"] {
		for _, k := range []string{"delta", "clients", "cohort"} {
			if set[k] {
				return nil, fmt.Sprintf("-%s applies only with -epsilon", k)
			}
		}
		return nil, ""
	}
	r := &privacyRequest{Epsilon: *f.epsilon, Delta: *f.delta, Clients: *f.clients, Cohort: *f.cohort, schema: p}
	switch pat := p.Pattern(); {
	case pat.Groups == 0 || pat.Sampling != 0 || pat.RandomGroups || pat.MaxParticipations == 0:
		return nil, "-epsilon compares amplified and unamplified accounting under -participation kb (its b groups are the turns of kb-poisson and the bins of balls-in-bins)"
	case asJSON:
		return nil, "-epsilon prints a text comparison; it does not apply with -json"
	case !(r.Epsilon > 0) || math.IsInf(r.Epsilon, 1):
		return nil, fmt.Sprintf("-epsilon must be positive and finite, got %g", r.Epsilon)
	case !(r.Delta > 0 && r.Delta < 1):
		return nil, fmt.Sprintf("-epsilon needs -delta in (0, 1), got %g", r.Delta)
	case r.Clients < p.B || r.Cohort < 1 || r.Cohort > r.Clients/p.B:
		return nil, fmt.Sprintf("-epsilon needs -clients >= b = %d and -cohort between 1 and clients/b (a group's size), got %d and %d", p.B, r.Clients, r.Cohort)
	case p.K < (n+p.B-1)/p.B:
		return nil, fmt.Sprintf("-epsilon: -k %d is below the ⌈n/b⌉ = %d turns a client's group has (the amplified schemes give every client all of them)", p.K, (n+p.B-1)/p.B)
	}
	return r, ""
}

// privacyRow is one line of the section.
type privacyRow struct {
	mech, sampling string
	sigma, rmse    float64 // noise std per round (clip units), and the error at it
	how            string  // the guarantee's method and adjacency, or why the row is missing
}

// bibMC is the Monte Carlo setting of the section's balls-in-bins rows.
var bibMC = privacy.MonteCarlo{Confidence: 0.99}

// writePrivacySection calibrates and prints the section.
func writePrivacySection(ctx context.Context, w io.Writer, req mechanismRequest) error {
	pr, p := req.priv, req.priv.schema
	n := req.cfg.Workload.N()
	fmt.Fprintf(w, "\nprivacy at ε = %g, δ = %g: %d clients, cohort %d per round, b = %d; sigma: noise std per round (clip = 1), rmse at it\n",
		pr.Epsilon, pr.Delta, pr.Clients, pr.Cohort, p.B)
	var rows []privacyRow
	for _, name := range []string{"identity", "bandmf"} {
		cfg := req.cfg
		cfg.Bands = min(p.B, n)
		s, err := strategy.Build(ctx, name, cfg)
		if err != nil {
			return err
		}
		m, err := strategy.EvaluateContext(ctx, s, cfg.Workload, p.Pattern())
		if err != nil {
			return err
		}
		rs, err := amplifiedRows(ctx, displayName(name), s, m, pr, p, n)
		if err != nil {
			return err
		}
		rows = append(rows, rs...)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mechanism\tsampling\tsigma\trmse\taccounting")
	for _, r := range rows {
		if r.sigma == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t%s\n", r.mech, r.sampling, r.how)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.5g\t%.5g\t%s\n", r.mech, r.sampling, r.sigma, r.rmse, r.how)
	}
	return tw.Flush()
}

// label is a guarantee's method and adjacency, e.g. "rdp-cks (order 9.5);
// zero-out", with its epsilon when it differs from the target.
func label(g privacy.Guarantee, target float64) string {
	s := strings.TrimSuffix(strings.SplitN(g.String(), "(", 2)[1], ")")
	if math.Abs(g.Epsilon-target) > 1e-3*target {
		s = fmt.Sprintf("ε = %.4g: %s", g.Epsilon, s)
	}
	return s
}

// amplifiedRows are one mechanism's rows: (k,b) unamplified, kb-poisson,
// balls-in-bins and, for DP-FedAvg, uniform cohorts unamplified and
// sampled without replacement.
func amplifiedRows(ctx context.Context, mech string, s strategy.Strategy, m strategy.Metrics, pr *privacyRequest, p participation.Schema, n int) ([]privacyRow, error) {
	perStd := math.Sqrt(m.FrobB2 / float64(n)) // rmse per unit of noise std
	exact := func() privacy.Accountant { return privacy.NewExact() }
	rdp, err := privacy.NewByName("rdp", nil)
	if err != nil {
		return nil, err
	}
	zero := func(e privacy.Event) privacy.Event { return privacy.Neighbouring{Relation: privacy.ZeroOut, Event: e} }
	row := func(sampling string, sens float64, ev func(z float64) privacy.Event, acct func() privacy.Accountant) (privacyRow, error) {
		z, g, err := privacy.CalibrateContext(ctx, pr.Epsilon, pr.Delta, ev, acct, 1e-6)
		if err != nil {
			return privacyRow{}, err
		}
		return privacyRow{mech, sampling, z * sens, perStd * z * sens, label(g, pr.Epsilon)}, nil
	}
	var rows []privacyRow
	r, err := row(fmt.Sprintf("kb(k=%d,b=%d), cohort %d of a group", p.K, p.B, pr.Cohort), m.Sensitivity.Value,
		func(z float64) privacy.Event { return zero(privacy.Gaussian{NoiseMultiplier: z}) }, exact)
	if err != nil {
		return nil, err
	}
	rows = append(rows, r)
	q := float64(pr.Cohort) * float64(p.B) / float64(pr.Clients)
	turns := (n + p.B - 1) / p.B
	if r, err = row(fmt.Sprintf("kb-poisson(b=%d,q=%.4g)", p.B, q), m.SingleSensitivity, func(z float64) privacy.Event {
		return zero(privacy.SelfComposed{Event: privacy.PoissonSampled{Probability: q, Event: privacy.Gaussian{NoiseMultiplier: z}}, Count: turns})
	}, rdp); err != nil {
		return nil, err
	}
	rows = append(rows, r)
	rows = append(rows, bibRow(ctx, mech, s, perStd, pr, p, n, rows[0].sigma))
	if mech != "dpfedavg" {
		return rows, nil
	}
	sched, err := participation.Planner{Schema: participation.Schema{Kind: participation.Uniform}, Cohort: pr.Cohort}.PlanContext(ctx, pr.Clients, n, rng.New(1))
	if err != nil {
		return nil, err
	}
	k := sched.Stats().MaxParticipations
	if r, err = row(fmt.Sprintf("uniform cohort %d of %d (at most %d per client, seed 1)", pr.Cohort, pr.Clients, k), math.Sqrt(float64(k)),
		func(z float64) privacy.Event { return zero(privacy.Gaussian{NoiseMultiplier: z}) }, exact); err != nil {
		return nil, err
	}
	rows = append(rows, r)
	if r, err = row(fmt.Sprintf("the same, without replacement (%d of %d)", pr.Cohort, pr.Clients), 2, func(z float64) privacy.Event {
		return privacy.SelfComposed{Event: privacy.SampledWithoutReplacement{PopulationSize: pr.Clients, SampleSize: pr.Cohort, Event: privacy.Gaussian{NoiseMultiplier: z}}, Count: n}
	}, rdp); err != nil {
		return nil, err
	}
	return append(rows, r), nil
}

// bibRow is the balls-in-bins row: the noise std calibrated on fixed Monte
// Carlo samples (secantSigma from the unamplified std, upper), then
// certified on fresh ones at the std found (the ε printed is that
// certificate's, at 99% confidence). Its cohort is a whole bin, about
// clients/b.
func bibRow(ctx context.Context, mech string, s strategy.Strategy, perStd float64, pr *privacyRequest, p participation.Schema, n int, upper float64) privacyRow {
	r := privacyRow{mech: mech, sampling: fmt.Sprintf("balls-in-bins(b=%d), whole bins of about %d", p.B, pr.Clients/p.B)}
	f, err := s.Factor()
	if err != nil {
		r.how = "not accounted: " + oneLine(err)
		return r
	}
	bands := n
	if bd, ok := s.(strategy.Banded); ok && bd.Bands() > 0 {
		bands = bd.Bands()
	}
	if ind, ok := s.(strategy.Independent); ok && ind.Independent() {
		bands = 1
	}
	// The search draws twice the fewest samples that can certify δ; the
	// certificate, ten times.
	need := math.Log(2/(1-bibMC.Confidence)) / pr.Delta
	if work := bibWork(int(min(maxBIBSamples, max(minBIBSamples, math.Ceil(10*need)))), p.B); 6*work > maxBIBWork {
		r.how = fmt.Sprintf("not accounted: Monte Carlo with %d bins is too long here (b² operations per sample); see dpfl account -bins", p.B)
		return r
	}
	eps := func(sigma float64, seed uint64, times float64) (privacy.Guarantee, error) {
		mc := bibMC
		mc.Samples = int(min(maxBIBSamples, max(minBIBSamples, math.Ceil(times*need))))
		mech := privacy.BallsInBins{Bins: p.B, Rounds: n, NoiseMultiplier: sigma, Entry: f.At, Bands: bands}
		return privacy.BallsInBinsEpsilon(mech, pr.Delta, mc, rng.New(seed).Stream("mechanism/balls-in-bins"))
	}
	if _, err := eps(upper, 1, 2); err != nil {
		r.how = "not accounted: " + strings.TrimPrefix(oneLine(err), "privacy: ")
		return r
	}
	hi, err := secantSigma(ctx, upper, pr.Epsilon, func(sigma float64) (float64, error) {
		g, err := eps(sigma, 1, 4)
		return g.Epsilon, err
	})
	if err != nil {
		r.how = "not accounted: " + oneLine(err)
		return r
	}
	g, err := eps(hi, 2, 10)
	if err != nil {
		r.how = "not accounted: " + oneLine(err)
		return r
	}
	r.sigma, r.rmse, r.how = hi, perStd*hi, label(g, pr.Epsilon)
	return r
}

// privacySection prints the -epsilon section when it was asked for.
func privacySection(ctx context.Context, stdout, stderr io.Writer, req mechanismRequest) int {
	if req.priv == nil {
		return exitOK
	}
	if err := writePrivacySection(ctx, stdout, req); err != nil {
		return mechFail(ctx, stderr, err)
	}
	return exitOK
}

// secantSigma searches the noise std whose epsilon (eps, decreasing in it)
// is at most target and close to it: secant steps on log ε against log σ
// from start, five evaluations at most; it returns the smallest std
// evaluated whose epsilon is at most target (start or above when none is:
// the std is raised until one is).
func secantSigma(ctx context.Context, start, target float64, eps func(float64) (float64, error)) (float64, error) {
	x0, e0 := start, 0.0
	var err error
	if e0, err = eps(x0); err != nil {
		return 0, err
	}
	best := math.Inf(1)
	if e0 <= target {
		best = x0
	}
	x1 := x0 * e0 / target // ε is about proportional to 1/σ
	for i := 0; i < 5 || math.IsInf(best, 1); i++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if i > 12 {
			return 0, fmt.Errorf("no noise std up to %g reaches ε = %g", x1, target)
		}
		e1, err := eps(x1)
		if err != nil {
			return 0, err
		}
		if e1 <= target {
			best = math.Min(best, x1)
		}
		slope := math.Log(e1/e0) / math.Log(x1/x0)
		x2 := x1 * math.Exp(math.Log(target/e1)/slope)
		if !(slope < 0) || math.IsNaN(x2) || math.IsInf(x2, 0) {
			x2 = x1 * e1 / target
		}
		if e1 > target {
			x2 = math.Max(x2, x1*1.001)
		}
		x0, e0, x1 = x1, e1, x2
	}
	return best, nil
}
