package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"dpfl/privacy"
)

const accountUsage = `Usage:
  dpfl account [-json] CONFIG.yaml
  dpfl account -delta D (-sigma S | -epsilon E) [-steps T | -rounds T]
               [-mechanism gaussian|sampled-gaussian|sampled-without-replacement]
               [-q Q] [-cohort M -population N] [-sensitivity D]
               [-accountant exact|rdp|rdp-mironov|zcdp|zcdp-cks|pld] [-orders LIST]
               [-rdp-series signed|abs] [-tol R] [-json]
  dpfl account -mechanism balls-in-bins -bins B -rounds T -sigma S -delta D
               [-c-col LIST] [-samples N] [-confidence P] [-seed N] [-json]

The first form prints the privacy account of a run configuration without
training. The second is a calculator: the epsilon of T steps of a Gaussian
mechanism (sampled-gaussian: each record included with probability Q, Poisson)
with noise standard deviation S for queries of L2 sensitivity D, or, given
-epsilon, the smallest S that reaches it. sampled-without-replacement is a
cohort of exactly M of N records drawn uniformly without replacement each
round (Wang, Balle and Kasiviswanathan 2019), accounted under replace-one
adjacency: its default D is 2, the replace-one sensitivity of a sum of
updates clipped to norm 1 (one update replaced by another), so S is in units
of the clip norm as for the other mechanisms. The accountant sees the noise
multiplier S/D. Defaults: exact (GDP) for gaussian, rdp (Canonne-Kamath-Steinke
conversion) for the sampled mechanisms; -mechanism defaults to
sampled-gaussian when -q is given and to sampled-without-replacement when
-cohort and -population are. pld is the tightest for sampled-gaussian (tens of milliseconds
per evaluation for thousands of steps); it also prints its optimistic
estimate, a lower bound on the exact epsilon that is not a guarantee, so the
two bracket the exact value. -rdp-series chooses how the RDP accountants
compute fractional orders: signed (the exact Renyi divergence, as TF-Privacy
and Opacus; the default) or abs (the looser bound of current dp_accounting),
to reproduce either library's numbers. Every epsilon is printed with its
method, delta, (RDP) order and, for the sampled mechanisms, the neighbouring
relation it holds under (add/remove for Poisson sampling, replace-one
without replacement).

balls-in-bins (the third form; -bins implies it) assigns every client to
one of B bins uniformly at random and trains each bin in every B-th round;
the mechanism is a banded Toeplitz C with at most B bands (-c-col, its
first column; default 1: DP-FedAvg) and noise std S per round in units of
the clip norm. Its epsilon is a Monte Carlo estimate over the dominating
pair of Choquette-Choo, Ganesh, Haque, Steinke and Thakurta (2024), with an
upper confidence bound on delta: it holds with probability -confidence
(default 0.99), and says so; beside it the unamplified epsilon of the same
turns. Zero-out adjacency.

Flags:
`

// calcForm is the calculator's -json form.
var calcForm = privacy.NewForm(privacy.Report{},
	"mechanism=Mechanism", "q=Q,omitempty", "cohort=Cohort,omitempty", "population=Population,omitempty",
	"steps=Steps", "sensitivity=Sensitivity",
	"sigma=NoiseStd", "noise_multiplier=NoiseMultiplier", "calibrated=Calibrated",
	"target_epsilon=TargetEpsilon,omitempty", "tolerance=Tolerance,omitempty",
	"epsilon=Epsilon", "delta=Delta", "accountant=Accountant", "order=Order,omitempty",
	"orders=Orders,omitempty", "rdp_series=RDPSeries,omitempty", "guarantee=Guarantee", "adjacency=Adjacency,omitempty",
	// pld only: the optimistic PLD estimate at the same sigma and delta.
	"epsilon_optimistic=EpsilonOptimistic,omitempty",
	// balls-in-bins only.
	"bins=Bins,omitempty", "c_col=Bands,omitempty", "samples=Samples,omitempty", "confidence=Confidence,omitempty",
	"seed=Seed,omitempty", "unamplified=Unamplified,omitempty")

// calcRequest is a parsed calculator command line (dpfl account without a
// config file).
type calcRequest struct {
	mech        string // gaussian, sampled-gaussian or sampled-without-replacement
	sigma       float64
	epsilon     float64 // target (calibrate) when set
	calibrate   bool
	steps       int
	q           float64
	cohort      int // sampled-without-replacement: records drawn each round
	population  int // sampled-without-replacement: records drawn from
	sensitivity float64
	delta       float64
	accountant  string
	orders      []float64
	series      string
	rdp         bool // the accountant is over RDP orders (-orders, -rdp-series)
	newAcct     func() privacy.Accountant
	tol         float64
	json        bool
	bib         bibFlags // -mechanism balls-in-bins
}

// cmdAccount is dpfl's privacy calculator: with one positional
// argument it prints the account of a run configuration (accountConfig),
// otherwise it answers a question about a (sampled) Gaussian mechanism.
func cmdAccount(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	req, config, code, ok := parseAccount(args, stderr)
	if !ok {
		return code
	}
	if config != "" {
		return accountConfig(ctx, config, req.json, stdout, stderr)
	}
	res, err := req.compute(ctx)
	if err != nil || ctx.Err() != nil {
		return failed(ctx, stderr, "account", err)
	}
	if req.json {
		b, err := calcForm.Marshal(&res)
		if err != nil {
			fmt.Fprintf(stderr, "dpfl account: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	writeAccountText(stdout, res)
	return exitOK
}

// parseAccount parses the command line: a config file (config), or the
// calculator's flags (req); ok is false when the command is done (help, or
// a usage error already reported, with its exit code).
func parseAccount(args []string, stderr io.Writer) (req calcRequest, config string, code int, ok bool) {
	fs := flag.NewFlagSet("account", flag.ContinueOnError)
	var ordersFlag string
	fs.StringVar(&req.mech, "mechanism", "", "gaussian, sampled-gaussian or sampled-without-replacement (default gaussian; sampled-gaussian when -q is set, sampled-without-replacement when -cohort is)")
	fs.Float64Var(&req.sigma, "sigma", 0, "noise standard deviation in units of the clip norm (or give -epsilon)")
	fs.Float64Var(&req.epsilon, "epsilon", 0, "target epsilon: calibrate the smallest sigma that reaches it")
	fs.IntVar(&req.steps, "steps", 1, "number of steps (rounds) composed")
	fs.IntVar(&req.steps, "rounds", 1, "the same as -steps")
	fs.IntVar(&req.cohort, "cohort", 0, "sampled-without-replacement: records (clients) drawn each round")
	fs.IntVar(&req.population, "population", 0, "sampled-without-replacement: records (clients) the cohort is drawn from")
	fs.Float64Var(&req.q, "q", 0, "Poisson sampling probability of sampled-gaussian, in (0, 1]")
	fs.Float64Var(&req.sensitivity, "sensitivity", 1, "L2 sensitivity of each step's query, in units of the clip norm (default 2 for sampled-without-replacement: replace-one)")
	fs.Float64Var(&req.delta, "delta", 0, "delta of the guarantee, in (0, 1) (required)")
	fs.StringVar(&req.accountant, "accountant", "", "exact, rdp (CKS conversion), rdp-mironov, zcdp (rho + 2 sqrt(rho log 1/delta)), zcdp-cks or pld (privacy-loss distribution, slower)")
	fs.StringVar(&ordersFlag, "orders", "", "comma-separated RDP orders (default privacy.DefaultOrders: 1.1..10.9 step 0.1, 11..63, 128, 256, 512)")
	fs.StringVar(&req.series, "rdp-series", "signed", "fractional-order RDP of the sampled Gaussian: signed (exact; TF-Privacy, Opacus) or abs (upper bound; current dp_accounting)")
	fs.Float64Var(&req.tol, "tol", 1e-6, "relative tolerance of the sigma calibration, in [2.2e-16, 1)")
	fs.BoolVar(&req.json, "json", false, "print one JSON object")
	fs.IntVar(&req.bib.bins, "bins", 0, "balls-in-bins: number of bins b (each client trains in every turn of a uniformly random bin)")
	fs.StringVar(&req.bib.cCol, "c-col", "", "balls-in-bins: comma-separated first column of a banded Toeplitz C with at most b bands (default 1: C = I)")
	fs.IntVar(&req.bib.samples, "samples", 0, "balls-in-bins: Monte Carlo samples per side (default 10·log(2/(1-confidence))/delta, within [1e5, 1e7])")
	fs.Float64Var(&req.bib.confidence, "confidence", 0.99, "balls-in-bins: probability with which the Monte Carlo guarantee holds")
	fs.Uint64Var(&req.bib.seed, "seed", 1, "balls-in-bins: seed of the Monte Carlo samples")
	pos, code, ok := parseInterleaved(fs, args, accountUsage, stderr)
	if !ok {
		return req, "", code, false
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	usageErr := func(format string, a ...any) (calcRequest, string, int, bool) {
		fmt.Fprintf(stderr, "dpfl account: "+format+"\n", a...)
		return req, "", exitUsage, false
	}
	switch {
	case len(pos) > 1:
		return usageErr("want at most one CONFIG.yaml, got %d arguments (%s)", len(pos), strings.Join(pos, " "))
	case len(pos) == 1:
		for name := range set {
			if name != "json" {
				return usageErr("-%s does not apply to a config file (only -json does)", name)
			}
		}
		return req, pos[0], exitOK, true
	case len(set) == 0 || (len(set) == 1 && set["json"]):
		return usageErr("give a CONFIG.yaml or calculator flags (-delta and -sigma or -epsilon); see dpfl account -h")
	}
	if msg := req.check(set, ordersFlag); msg != "" {
		return usageErr("%s", msg)
	}
	return req, "", exitOK, true
}

// check validates the calculator's flags (set: those given) and fills the
// defaults; it returns why they are wrong ("" when they are not).
func (r *calcRequest) check(set map[string]bool, ordersFlag string) string {
	if r.mech == bibMech || (r.mech == "" && set["bins"]) {
		return r.checkBIBRequest(set)
	}
	for _, f := range []string{"bins", "c-col", "samples", "confidence", "seed"} {
		if set[f] {
			return fmt.Sprintf("-%s applies to -mechanism balls-in-bins only", f)
		}
	}
	switch {
	case set["sigma"] == set["epsilon"]:
		return "give exactly one of -sigma and -epsilon"
	case set["sigma"] && !(r.sigma > 0 && !math.IsInf(r.sigma, 1)):
		return fmt.Sprintf("-sigma must be positive and finite, got %g", r.sigma)
	case set["epsilon"] && !(r.epsilon > 0 && !math.IsInf(r.epsilon, 1)):
		return fmt.Sprintf("-epsilon must be positive and finite, got %g", r.epsilon)
	case !set["delta"]:
		return "-delta is required"
	case !(r.delta > 0 && r.delta < 1):
		return fmt.Sprintf("-delta must be in (0, 1), got %g", r.delta)
	case set["steps"] && set["rounds"]:
		return "give -steps or -rounds, not both"
	case r.steps < 1:
		return fmt.Sprintf("-steps must be at least 1, got %d", r.steps)
	case !(r.sensitivity > 0 && !math.IsInf(r.sensitivity, 1)):
		return fmt.Sprintf("-sensitivity must be positive and finite, got %g", r.sensitivity)
	case !(r.tol >= privacy.MinCalibrateTolerance && r.tol < 1):
		return fmt.Sprintf("-tol must be in [%.2g, 1) (float64 cannot resolve sigma more finely), got %g", privacy.MinCalibrateTolerance, r.tol)
	}
	r.calibrate = set["epsilon"]
	if r.mech == "" {
		r.mech = "gaussian"
		if set["q"] {
			r.mech = "sampled-gaussian"
		} else if set["cohort"] || set["population"] {
			r.mech = worMech
		}
	}
	if msg := r.checkMechanism(set); msg != "" {
		return msg
	}
	if r.accountant == "" {
		r.accountant = privacy.DefaultAccountant(r.amplified(), false)
	}
	return r.checkAccountant(set, ordersFlag)
}

// worMech is the calculator's name of sampling without replacement.
const worMech = "sampled-without-replacement"

// amplified reports whether the request's sampling amplifies (draws less
// than everyone).
func (r *calcRequest) amplified() bool {
	return (r.mech == "sampled-gaussian" && r.q < 1) || (r.mech == worMech && r.cohort < r.population)
}

// checkMechanism validates the mechanism and its sampling flags.
func (r *calcRequest) checkMechanism(set map[string]bool) string {
	if r.mech != worMech && (set["cohort"] || set["population"]) {
		return "-cohort and -population apply to -mechanism sampled-without-replacement only"
	}
	switch r.mech {
	case "gaussian":
		if set["q"] {
			return "-q applies to -mechanism sampled-gaussian only"
		}
	case "sampled-gaussian":
		if !set["q"] {
			return "-mechanism sampled-gaussian needs -q"
		}
		if !(r.q > 0 && r.q <= 1) {
			return fmt.Sprintf("-q must be in (0, 1], got %g", r.q)
		}
	case worMech:
		switch {
		case set["q"]:
			return "-q applies to -mechanism sampled-gaussian only (sampled-without-replacement takes -cohort and -population)"
		case !set["cohort"] || !set["population"]:
			return "-mechanism sampled-without-replacement needs -cohort and -population"
		case r.population < 1 || r.cohort < 1 || r.cohort > r.population:
			return fmt.Sprintf("-cohort must be between 1 and -population (at least 1), got %d of %d", r.cohort, r.population)
		}
		if !set["sensitivity"] {
			r.sensitivity = 2
		}
	default:
		return fmt.Sprintf("unknown -mechanism %q (want gaussian, sampled-gaussian, %s or %s)", r.mech, worMech, bibMech)
	}
	return ""
}

// checkAccountant validates the accountant flags and builds the accountant.
func (r *calcRequest) checkAccountant(set map[string]bool, ordersFlag string) string {
	kind, _ := privacy.LookupAccountant(r.accountant)
	r.rdp = kind.RDP
	if set["orders"] {
		if !r.rdp {
			return "-orders applies to the rdp accountants only"
		}
		for _, s := range strings.Split(ordersFlag, ",") {
			o, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || !(o > 1) || math.IsInf(o, 1) {
				return fmt.Sprintf("bad RDP order %q in -orders (want numbers > 1)", s)
			}
			r.orders = append(r.orders, o)
		}
	}
	frac, ok := privacy.RDPSeriesNames[r.series]
	if !ok {
		return fmt.Sprintf("unknown -rdp-series %q (want signed or abs)", r.series)
	}
	if set["rdp-series"] && !r.rdp {
		return "-rdp-series applies to the rdp accountants only"
	}
	newAcct, err := privacy.NewByNameSeries(r.accountant, r.orders, frac)
	if err != nil {
		names := privacy.AccountantNames()
		return fmt.Sprintf("unknown -accountant %q (want %s or %s)", r.accountant, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
	}
	if r.mech == "sampled-gaussian" && r.q < 1 && newAcct().Supports(r.event(r.sensitivity)) != nil {
		return fmt.Sprintf("the %s accountant cannot amplify by sampling (q = %g); use -accountant rdp", r.accountant, r.q)
	}
	if r.mech == worMech && r.amplified() && newAcct().Supports(r.event(r.sensitivity)) != nil {
		return fmt.Sprintf("the %s accountant cannot account sampling without replacement (cohort %d of %d); use -accountant rdp or pld", r.accountant, r.cohort, r.population)
	}
	r.newAcct = newAcct
	return ""
}

// event is the event of the whole run for a noise standard deviation s.
func (r *calcRequest) event(s float64) privacy.Event {
	var step privacy.Event = privacy.Gaussian{NoiseMultiplier: s / r.sensitivity}
	switch r.mech {
	case "sampled-gaussian":
		step = privacy.PoissonSampled{Probability: r.q, Event: step}
	case worMech:
		step = privacy.SampledWithoutReplacement{PopulationSize: r.population, SampleSize: r.cohort, Event: step}
	}
	return privacy.SelfComposed{Event: step, Count: r.steps}
}

// compute answers the calculator's question. The noise standard deviation
// the calculator calls sigma (in units of the clip norm) is the report's
// NoiseStd; the accountant sees the noise multiplier NoiseStd/Sensitivity.
func (r *calcRequest) compute(ctx context.Context) (privacy.Report, error) {
	if r.mech == bibMech {
		return r.computeBIB()
	}
	res := privacy.Report{Mechanism: r.mech, Steps: r.steps, Sensitivity: r.sensitivity, Delta: r.delta}
	switch r.mech {
	case "sampled-gaussian":
		res.Q = r.q
	case worMech:
		res.Cohort, res.Population = r.cohort, r.population
	}
	var g privacy.Guarantee
	if r.calibrate {
		// Calibrate the noise multiplier s/D, then report s.
		nm, got, err := privacy.CalibrateContext(ctx, r.epsilon, r.delta, func(m float64) privacy.Event { return r.event(m * r.sensitivity) }, r.newAcct, r.tol)
		if err != nil {
			return res, err
		}
		g = got
		res.NoiseStd, res.NoiseMultiplier, res.Calibrated = nm*r.sensitivity, nm, true
		res.TargetEpsilon, res.Tolerance = &r.epsilon, &r.tol
	} else {
		a := r.newAcct()
		if err := a.Compose(r.event(r.sigma), 1); err != nil {
			return res, err
		}
		got, err := privacy.EpsilonContext(ctx, a, r.delta)
		if err != nil {
			return res, err
		}
		g = got
		res.NoiseStd, res.NoiseMultiplier = r.sigma, r.sigma/r.sensitivity
	}
	res.SetGuarantee(g)
	if r.rdp {
		if r.orders == nil {
			r.orders = privacy.DefaultOrders()
		}
		res.Orders = len(r.orders)
		res.RDPSeries = r.series
	}
	if a := r.newAcct(); privacy.HasBracket(a) {
		// The optimistic estimate at the same sigma: the exact epsilon lies
		// between it and the guarantee.
		if err := a.Compose(r.event(res.NoiseStd), 1); err == nil && ctx.Err() == nil {
			if lo, _, err := privacy.PLDBracketContext(ctx, a, r.delta); err == nil {
				res.EpsilonOptimistic = &lo.Epsilon
			}
		}
	}
	return res, nil
}

// writeAccountText prints the calculator's answer.
func writeAccountText(w io.Writer, res privacy.Report) {
	if res.Mechanism == bibMech {
		writeBIBText(w, res)
		return
	}
	m := res.Mechanism
	if res.Q > 0 {
		m += fmt.Sprintf(" (Poisson, q = %g)", res.Q)
	}
	if res.Population > 0 {
		m += fmt.Sprintf(" (cohort %d of %d each step, uniform without replacement)", res.Cohort, res.Population)
	}
	fmt.Fprintf(w, "mechanism    %s\n", m)
	fmt.Fprintf(w, "steps        %d\n", res.Steps)
	fmt.Fprintf(w, "sensitivity  %g\n", res.Sensitivity)
	if res.Calibrated {
		fmt.Fprintf(w, "sigma        %.6g (calibrated for ε = %g at δ = %g, relative tolerance %g; noise multiplier %.6g)\n",
			res.NoiseStd, *res.TargetEpsilon, res.Delta, *res.Tolerance, res.NoiseMultiplier)
	} else {
		fmt.Fprintf(w, "sigma        %g (noise multiplier %g)\n", res.NoiseStd, res.NoiseMultiplier)
	}
	a := res.Accountant
	if res.Orders > 0 {
		a += fmt.Sprintf(" (%d orders, %s fractional series)", res.Orders, res.RDPSeries)
	}
	fmt.Fprintf(w, "accountant   %s\n", a)
	fmt.Fprintf(w, "epsilon      %s\n", res.Guarantee)
	if res.EpsilonOptimistic != nil {
		fmt.Fprintf(w, "             exact ε in [%.6g, %.6g] (optimistic and pessimistic PLD; only the upper end is a guarantee)\n", *res.EpsilonOptimistic, *res.Epsilon)
	}
}
