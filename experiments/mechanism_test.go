package experiments

import (
	"context"
	"encoding/json"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dpfl/aggregators"
	"dpfl/aggregators/strategy"
	"dpfl/privacy"
	"dpfl/results"
	"dpfl/sim/rng"
)

func aggRun(rounds int, part, agg string) string {
	y := strings.Replace(schemaRun, "rounds: 40", "rounds: "+strconv.Itoa(rounds), 1)
	y = strings.Replace(y, "aggregator:\n  clip: 1\n", "aggregator:\n  clip: 1\n"+agg, 1)
	return y + part
}

// TestMechanismSensitivityGlue: the plan's sensitivity for correlated-noise
// aggregators equals closed forms computed here (tree under single
// participation: sqrt(ceil(log2(n+1))); BandMF with b̂ ≤ b under b-min-sep:
// sqrt(min(k, ceil(n/b))), equal unit column norms), the noise std is
// sigma·clip·sensitivity with sigma calibrated for the target, and changing
// the participation changes the sensitivity.
func TestMechanismSensitivityGlue(t *testing.T) {
	single := planOf(t, aggRun(30, "  kind: single\n  cohort: 50\n", "  kind: tree\n  estimator: vanilla\n"))
	if want := math.Sqrt(float64(bits.Len(30))); math.Abs(single.Privacy.Sensitivity-want) > 1e-12 {
		t.Fatalf("tree, single participation: sensitivity %v, want sqrt(ceil(log2(31))) = %v", single.Privacy.Sensitivity, want)
	}
	band := planOf(t, aggRun(30, "  kind: minsep\n  cohort: 50\n  k: 2\n  b: 10\n", "  kind: bandmf\n  bands: 4\n"))
	k := band.Stats.MaxParticipations
	if want := math.Sqrt(float64(min(k, 3))); math.Abs(band.Privacy.Sensitivity-want) > 1e-6 || !band.Mechanism.Sensitivity.Exact {
		t.Fatalf("bandmf: sensitivity %v (%s), want sqrt(%d)", band.Privacy.Sensitivity, band.Mechanism.Sensitivity.Method, min(k, 3))
	}
	for _, p := range []*Plan{single, band} {
		a := p.Privacy
		if e := a.Final.Epsilon; e > 4 || e < 4*(1-1e-4) {
			t.Fatalf("calibrated epsilon %v", e)
		}
		if math.Abs(a.NoiseStd-a.Sigma*a.Sensitivity) > 1e-12 {
			t.Fatalf("noise std %v, sigma %v, sensitivity %v", a.NoiseStd, a.Sigma, a.Sensitivity)
		}
	}
	multi := planOf(t, aggRun(30, "  kind: minsep\n  cohort: 50\n  k: 3\n  b: 10\n", "  kind: tree\n  estimator: vanilla\n"))
	if multi.Privacy.Sensitivity <= single.Privacy.Sensitivity {
		t.Fatalf("tree: 3 participations give sensitivity %v, single %v", multi.Privacy.Sensitivity, single.Privacy.Sensitivity)
	}
}

// TestCorrelatedAggregatorsTrain: short private runs with each correlated
// aggregator learn well above chance on MNIST.
func TestCorrelatedAggregatorsTrain(t *testing.T) {
	t.Parallel()
	for _, agg := range []string{"  kind: tree\n", "  kind: tree\n  restart_every: 4\n", "  kind: bandmf\n", "  kind: nu-ftrl\n  memory: regenerate\n", "  kind: optimal-mf\n", "  kind: blt\n"} {
		y := aggRun(12, "  kind: minsep\n  cohort: 200\n  k: 2\n  b: 5\n", agg+"  cache: "+t.TempDir()+"\n")
		res, dir := runConfig(t, strings.Replace(y, "clients: 2000", "clients: 6000", 1), 2)
		if res.Summary.FinalAccuracy < 0.5 {
			t.Errorf("%q: final accuracy %.3f", agg, res.Summary.FinalAccuracy)
		}
		// Every row's epsilon is the whole run's bound, and says so.
		if r := readMetrics(t, dir)[1]; strings.Join(r[7:11], ",") != "exact-gdp,1e-05,zero-out,whole_run" {
			t.Errorf("%q: epsilon's accountant, delta, adjacency and scope %v", agg, r[7:11])
		}
		checkConfigFile(t, dir, res)
	}
}

// checkConfigFile: a run's config.yaml reads back as the run's
// configuration (its run ID), and states the values the plan chose for keys
// left unset: nu-ftrl's tuned ν (summary.json's nu), bandmf's bands and
// blt's buffers (participation.b = 5 here), as a comment on the key.
func checkConfigFile(t *testing.T, dir string, res *Outcome) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load(b, "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if id := RunID(cfg, res.Summary.Inputs); id != res.Summary.RunID {
		t.Errorf("config.yaml reads back as run %s, the run is %s", id, res.Summary.RunID)
	}
	want := map[string]string{}
	switch cfg.Aggregator.Kind {
	case "nu-ftrl":
		want["nu: null"] = fmtFloat(*res.Summary.Nu)
	case "bandmf":
		want["bands: 0"] = "5"
	case "blt":
		want["buffers: 0"] = "4"
	}
	for key, v := range want {
		if line := "    " + key + " # used: " + v + "\n"; !strings.Contains(string(b), line) {
			t.Errorf("%s: config.yaml has no line %q:\n%s", cfg.Aggregator.Kind, line, b)
		}
	}
	if len(want) == 0 && strings.Contains(string(b), "# used:") {
		t.Errorf("%s: config.yaml comments a key:\n%s", cfg.Aggregator.Kind, b)
	}
}

func TestMemoryBudgetRefused(t *testing.T) {
	cfg, _, err := Load([]byte(aggRun(40, "  kind: single\n  cohort: 40\n", "  kind: optimal-mf\n  memory_budget_mb: 0.01\n")), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(t.Context(), cfg, Options{OutDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "over aggregator.memory_budget_mb = 0") || !strings.Contains(err.Error(), "memory: regenerate") {
		t.Fatalf("error %v", err)
	}
}

// TestBandedMemoryBudget: banded noise (BandMF) honours the memory budget:
// 63 past noise vectors of the 1.2M-parameter cnn-large do not fit in 100
// MB, and planning says so with the figures; memory: regenerate (O(d)) and a
// budget that fits are accepted.
func TestBandedMemoryBudget(t *testing.T) {
	cache := t.TempDir()
	for _, c := range []struct {
		agg string
		err string
	}{
		{"  memory_budget_mb: 100\n", "banded noise (64 bands) keeps its last 63 noise vectors of 1199882 parameters = 577 MB, over the budget of 100 MB; use fewer bands (at most 11 fit)"},
		{"  memory_budget_mb: 100\n  memory: regenerate\n", ""},
		{"  memory_budget_mb: 600\n", ""},
	} {
		y := aggRun(128, "  kind: kb\n  cohort: 20\n  k: 2\n  b: 64\n", "  kind: bandmf\n  bands: 64\n  cache: "+cache+"\n"+c.agg)
		y = strings.Replace(y, "kind: logreg", "kind: cnn-large", 1)
		cfg, _, err := Load([]byte(y), "m.yaml")
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewPlan(t.Context(), cfg, Options{})
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: %v; want %q", c.agg, err, c.err)
		}
	}
}

// TestTreeRestartsPlan: restarting the tree every (k,b) epoch (restart:
// epoch, or restart_every: b) makes each client take part once per tree:
// sens² = k·⌈log₂(b+1)⌉ = 4·4 at b = 10, below the single tree's; the
// calibrated epsilon stays on target; restart mistakes name their key.
func TestTreeRestartsPlan(t *testing.T) {
	part := "  kind: kb\n  cohort: 50\n  k: 4\n  b: 10\n"
	var sens []float64
	for _, agg := range []string{"  kind: tree\n  restart: epoch\n", "  kind: tree\n  restart_every: 10\n", "  kind: tree\n"} {
		p := accountOf(t, aggRun(40, part, agg))
		sens = append(sens, p.Privacy.Sensitivity)
		if e := p.Privacy.Final.Epsilon; e > 4 || e < 4*(1-1e-4) {
			t.Fatalf("%q: calibrated epsilon %v", agg, e)
		}
	}
	if math.Abs(sens[0]-4) > 1e-12 || sens[1] != sens[0] || !(sens[2] > sens[0]) {
		t.Fatalf("sensitivities (epoch, every 10, none): %v, want 4, 4, more", sens)
	}
	bad := map[string]string{
		"  kind: tree\n  restart: epoch\n  restart_every: 5\n": "aggregator.restart_every: set either restart: epoch or restart_every",
		"  kind: bandmf\n  restart_every: 5\n":                 "aggregator.restart_every: only aggregator kind tree uses it",
		"  kind: tree\n  restart: daily\n":                     `aggregator.restart: unknown value "daily"`,
	}
	for agg, msg := range bad {
		if _, _, err := Load([]byte(aggRun(40, part, agg)), "p.yaml"); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want %q", agg, err, msg)
		}
	}
	if _, _, err := Load([]byte(aggRun(40, "  kind: single\n  cohort: 10\n", "  kind: tree\n  restart: epoch\n")), "p.yaml"); err == nil ||
		!strings.Contains(err.Error(), "aggregator.restart: epoch needs participation kind kb or minsep") {
		t.Errorf("epoch restart under single participation: %v", err)
	}
}

// TestTreeSegmentsPlan: restart_segments restarts the tree on an irregular
// schedule. Under single participation the sensitivity is the levels of the
// longest segment's tree (√⌈log₂(25+1)⌉ = √5 for [10, 25, 5], below the
// unrestarted tree's √6 over 40 rounds); at a fixed noise multiplier σ the
// epsilon is that of one Gaussian with multiplier σ (exact accountant) and
// the noise std σ·clip·sens is smaller than the unrestarted tree's;
// mistakes name the key.
func TestTreeSegmentsPlan(t *testing.T) {
	part := "  kind: single\n  cohort: 50\n"
	fixed := func(y string) string { return strings.Replace(y, "  epsilon: 4\n", "", 1) }
	p := accountOf(t, fixed(aggRun(40, part, "  kind: tree\n  restart_segments: [10, 25, 5]\n  noise_multiplier: 2\n")))
	if math.Abs(p.Privacy.Sensitivity-math.Sqrt(5)) > 1e-12 || p.Mechanism.Strategy.(*strategy.TreeRestarts).Segments()[1] != 25 {
		t.Fatalf("sensitivity %v (%s), want √5", p.Privacy.Sensitivity, p.Mechanism.Strategy.String())
	}
	e := privacy.NewExact()
	_ = e.Compose(privacy.Gaussian{NoiseMultiplier: 2}, 1)
	want, _ := e.Epsilon(p.Config.Privacy.Delta)
	if math.Abs(p.Privacy.Final.Epsilon-want.Epsilon) > 1e-9 || math.Abs(p.Privacy.NoiseStd-2*math.Sqrt(5)) > 1e-12 {
		t.Fatalf("ε %v (want %v), noise std %v (want 2√5)", p.Privacy.Final, want, p.Privacy.NoiseStd)
	}
	one := accountOf(t, fixed(aggRun(40, part, "  kind: tree\n  noise_multiplier: 2\n")))
	if math.Abs(one.Privacy.Sensitivity-math.Sqrt(6)) > 1e-12 || !(one.Privacy.NoiseStd > p.Privacy.NoiseStd) {
		t.Fatalf("unrestarted tree: sensitivity %v, noise std %v; segments %v, %v", one.Privacy.Sensitivity, one.Privacy.NoiseStd, p.Privacy.Sensitivity, p.Privacy.NoiseStd)
	}
	bad := map[string]string{
		"  kind: tree\n  restart_segments: [10, 20]\n":                     "aggregator.restart_segments: segments [10 20] sum to 30 rounds, but rounds is 40",
		"  kind: tree\n  restart_segments: [40, 0]\n":                      "aggregator.restart_segments: segment lengths must be positive",
		"  kind: tree\n  restart_segments: [20, 20]\n  restart_every: 5\n": "aggregator.restart_segments: set one of restart: epoch, restart_every and restart_segments",
		"  kind: bandmf\n  restart_segments: [20, 20]\n":                   "aggregator.restart_segments: only aggregator kind tree uses it",
	}
	for agg, msg := range bad {
		if _, _, err := Load([]byte(aggRun(40, part, agg)), "p.yaml"); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want %q", agg, err, msg)
		}
	}
}

// TestNuCoefficientsPlan: nu_coefficients truncates ν-DP-FTRL's C: the
// plan's sensitivity is the truncated strategy's (exact, banded VecSens
// under min-sep), its noise streams through the banded recurrence, and a
// count outside [1, rounds] names the key.
func TestNuCoefficientsPlan(t *testing.T) {
	p := accountOf(t, aggRun(30, "  kind: minsep\n  cohort: 50\n  k: 2\n  b: 10\n", "  kind: nu-ftrl\n  nu: 0.05\n  nu_coefficients: 4\n"))
	want, err := strategy.NewNuBanded(30, 0.05, 4).Sensitivity(p.Mechanism.Pattern)
	if err != nil {
		t.Fatal(err)
	}
	if p.Mechanism.Strategy.String() != "nu-b4" || math.Abs(p.Privacy.Sensitivity-want.Value) > 1e-12 || !p.Mechanism.Sensitivity.Exact {
		t.Fatalf("strategy %s sensitivity %v (%s), want %v", p.Mechanism.Strategy.String(), p.Privacy.Sensitivity, p.Mechanism.Sensitivity.Method, want.Value)
	}
	src, err := p.Mechanism.Noise(rng.New(1), 10, p.Config.Aggregator.Mode())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.(*aggregators.Banded); !ok {
		t.Fatalf("noise source %T, want the banded recurrence", src)
	}
	for _, agg := range []string{"  kind: nu-ftrl\n  nu_coefficients: 31\n", "  kind: bandmf\n  nu_coefficients: 3\n"} {
		if _, _, err := Load([]byte(aggRun(30, "  kind: minsep\n  cohort: 50\n  k: 2\n  b: 10\n", agg)), "p.yaml"); err == nil || !strings.Contains(err.Error(), "aggregator.nu_coefficients") {
			t.Errorf("%q: error %v", agg, err)
		}
	}
}

// TestBLTPlan: kind blt builds the BLT optimized for the run (buffers
// default to participation.b − 1, at most 8), with an exact sensitivity equal
// to the strategy's own for the realized schema, streams its noise through
// its buffers, reports θ and ω; buffers is required under single
// participation and must be positive.
func TestBLTPlan(t *testing.T) {
	p := accountOf(t, aggRun(30, "  kind: minsep\n  cohort: 50\n  k: 2\n  b: 4\n", "  kind: blt\n"))
	blt, ok := p.Mechanism.Strategy.(*strategy.BLT)
	if !ok || blt.String() != "blt-m3" || !p.Mechanism.Sensitivity.Exact {
		t.Fatalf("strategy %s, sensitivity %+v", p.Mechanism.Strategy.String(), p.Mechanism.Sensitivity)
	}
	want, err := blt.Sensitivity(p.Mechanism.Pattern)
	if err != nil || want.Value != p.Privacy.Sensitivity {
		t.Fatalf("sensitivity %v, strategy's %v (%v)", p.Privacy.Sensitivity, want.Value, err)
	}
	if th := p.Mechanism.Parameters().Theta; len(th) != 3 {
		t.Fatalf("parameters %+v", p.Mechanism.Parameters())
	}
	src, err := p.Mechanism.Noise(rng.New(1), 10, p.Config.Aggregator.Mode())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.(*aggregators.BLTNoise); !ok {
		t.Fatalf("noise source %T, want the BLT buffers", src)
	}
	if two := accountOf(t, aggRun(30, "  kind: single\n  cohort: 50\n", "  kind: blt\n  buffers: 2\n")); two.Mechanism.Strategy.String() != "blt-m2" {
		t.Fatalf("buffers 2: %s", two.Mechanism.Strategy.String())
	}
	for agg, msg := range map[string]string{
		"  kind: blt\n":                              "aggregator.buffers",
		"  kind: blt\n  buffers: -1\n":               "must be positive",
		"  kind: bandmf\n  bands: 2\n  buffers: 2\n": "only aggregator kind blt uses it",
	} {
		if _, _, err := Load([]byte(aggRun(30, "  kind: single\n  cohort: 50\n", agg)), "p.yaml"); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want %q", agg, err, msg)
		}
	}
}

// TestStrategyNotConverged: a strategy whose optimizer stopped at its
// iteration limit gives a note (a planning warning and summary.json's
// strategy_not_converged) saying so, with the optimizer's method and
// iterations; the same optimization run to convergence, a closed-form
// strategy and the runs of every aggregator kind give none, and summary.json leaves
// the field out then (so summaries of converged runs keep their bytes).
func TestStrategyNotConverged(t *testing.T) {
	ctx := context.Background()
	w := strategy.Prefix(24)
	short, err := strategy.BandMF(ctx, w, 4, strategy.LBFGSOptions{MaxIter: 2})
	if err != nil {
		t.Fatal(err)
	}
	if short.Status().Converged {
		t.Fatal("2 L-BFGS iterations reported converged")
	}
	note := notConverged(short)
	for _, want := range []string{"did not converge", "L-BFGS", "2 iterations", "iteration limit", "privacy account is exact"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	full, err := strategy.BandMF(ctx, w, 4, strategy.LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !full.Status().Converged || notConverged(full) != "" {
		t.Errorf("converged BandMF: status %+v, note %q", full.Status(), notConverged(full))
	}
	if n := notConverged(strategy.NewIdentity(24)); n != "" {
		t.Errorf("identity: note %q", n)
	}
	// Every kind a run can use, with its optimizer converged or no
	// optimizer: no note, no warning.
	for _, agg := range []string{"  kind: bandmf\n  bands: 4\n", "  kind: optimal-mf\n", "  kind: optimal-mf\n  multi_epoch: true\n",
		"  kind: blt\n", "  kind: nu-ftrl\n", "  kind: tree\n", "  kind: dpfedavg\n"} {
		p := planOf(t, aggRun(30, "  kind: minsep\n  cohort: 50\n  k: 2\n  b: 10\n", agg))
		if p.NotConverged != "" || p.Summary().StrategyNotConverged != "" {
			t.Errorf("%q: note %q", agg, p.NotConverged)
		}
		for _, w := range p.Warnings {
			if strings.Contains(w, "did not converge") {
				t.Errorf("%q: warns %s", agg, w)
			}
		}
	}
	b, err := json.Marshal(results.Summary{StrategyNotConverged: note})
	if err != nil {
		t.Fatal(err)
	}
	var back results.Summary
	if err := json.Unmarshal(b, &back); err != nil || back.StrategyNotConverged != note || !strings.Contains(string(b), `"strategy_not_converged"`) {
		t.Errorf("summary.json with the note: %s (read back %q, %v)", b, back.StrategyNotConverged, err)
	}
	if b, _ := json.Marshal(results.Summary{}); strings.Contains(string(b), "strategy_not_converged") {
		t.Errorf("summary.json of a converged run names the field: %s", b)
	}
}
