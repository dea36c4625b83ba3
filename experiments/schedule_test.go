package experiments

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"dpfl/aggregators/strategy"
)

func accountOf(t *testing.T, yml string) *Plan {
	t.Helper()
	cfg, _, err := Load([]byte(yml), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewAccount(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLRScheduleConfig: a linear cooldown gets final_lr_fraction 0.05 by
// default and gives the server the LinearCooldown factors (to 1e-15); the
// default schedule is constant; mistakes name their key.
func TestLRScheduleConfig(t *testing.T) {
	y := strings.Replace(schemaRun, "server:\n  lr: 1\n", "server:\n  lr: 1\n  lr_schedule: linear\n  cooldown_rounds: 10\n", 1) + "  kind: single\n  cohort: 10\n"
	cfg, _, err := Load([]byte(y), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.FinalLRFraction == nil || *cfg.Server.FinalLRFraction != 0.05 {
		t.Fatalf("final_lr_fraction default: %v", cfg.Server.FinalLRFraction)
	}
	want := strategy.LinearCooldown(40, 10, 0.05)
	for r, f := range cfg.lrSchedule().Factors() {
		if math.Abs(f-want[r]) > 1e-15 {
			t.Fatalf("round %d: factor %v, want %v", r, f, want[r])
		}
	}
	plain, _, err := Load([]byte(schemaRun+"  kind: single\n  cohort: 10\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if plain.Server.LRSchedule != "constant" || plain.lrSchedule().Factors() != nil {
		t.Fatalf("default schedule %q", plain.Server.LRSchedule)
	}
	bad := map[string]string{
		"  lr_schedule: linear\n": "server.lr_schedule: linear needs warmup_rounds or cooldown_rounds",
		"  warmup_rounds: 3\n":    "server.warmup_rounds: only lr_schedule linear or cosine has a warmup",
		"  lr_schedule: cosine\n  warmup_rounds: 30\n  cooldown_rounds: 20\n":   "server.cooldown_rounds: warmup_rounds 30 + cooldown_rounds 20 exceed rounds = 40",
		"  lr_schedule: linear\n  cooldown_rounds: 5\n  final_lr_fraction: 2\n": "server.final_lr_fraction: 2 must be in [0, 1]",
		"  lr_schedule: linear\n  warmup_rounds: 5\n  final_lr_fraction: 0\n":   "server.final_lr_fraction: only a cooldown",
		"  lr_schedule: step\n": `server.lr_schedule: unknown value "step"`,
	}
	for block, msg := range bad {
		y := strings.Replace(schemaRun, "server:\n  lr: 1\n", "server:\n  lr: 1\n"+block, 1) + "  kind: single\n  cohort: 10\n"
		if _, _, err := Load([]byte(y), "p.yaml"); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want %q", block, err, msg)
		}
	}
	if _, _, err := Load([]byte(aggRun(40, "  kind: single\n  cohort: 10\n", "  kind: tree\n  workload: server\n")), "p.yaml"); err == nil ||
		!strings.Contains(err.Error(), "aggregator.workload: only aggregator kinds optimal-mf and bandmf") {
		t.Errorf("workload on a tree: %v", err)
	}
}

// TestServerWorkload: with aggregator.workload: server the optimal MF is
// optimized for the server's momentum and cooldown, A = S·diag(η)·M_β: on
// that workload its loss is below (by more than 10%) that of the
// prefix-optimized factorization, which in turn wins on prefix sums.
func TestServerWorkload(t *testing.T) {
	server := "server:\n  lr: 1\n  momentum: 0.9\n  lr_schedule: linear\n  cooldown_rounds: 10\n"
	mk := func(workload string) *Plan {
		y := aggRun(40, "  kind: single\n  cohort: 10\n", "  kind: optimal-mf\n  workload: "+workload+"\n  cache: "+t.TempDir()+"\n")
		return accountOf(t, strings.Replace(y, "server:\n  lr: 1\n", server, 1))
	}
	ps, pp := mk("server"), mk("prefix")
	wl := strategy.Momentum(40, 0.9, strategy.LinearCooldown(40, 10, 0.05))
	loss := func(p *Plan, w *strategy.Workload) float64 {
		m, err := strategy.Evaluate(p.Mechanism.Strategy, w, p.Mechanism.Pattern)
		if err != nil {
			t.Fatal(err)
		}
		return m.Loss
	}
	if ls, lp := loss(ps, wl), loss(pp, wl); !(ls < 0.9*lp) {
		t.Fatalf("momentum+cooldown workload: server-optimized loss %v, prefix-optimized %v", ls, lp)
	}
	if ls, lp := loss(ps, strategy.Prefix(40)), loss(pp, strategy.Prefix(40)); !(lp < ls) {
		t.Fatalf("prefix workload: server-optimized loss %v, prefix-optimized %v", ls, lp)
	}
}

// TestPopulationScale: privacy.population_scale S calibrates sigma for the
// larger population (the same sigma as the unscaled config, to 1e-12), adds
// 1/S of its noise, and reports this run's clients' epsilon: equal (to
// 1e-9) to that of the unscaled config given noise_multiplier sigma/S, and
// far above the target. DP-FedAvg (sqrt(k) sensitivity) and BandMF
// (strategy sensitivity) both; bad values name the key.
func TestPopulationScale(t *testing.T) {
	for _, agg := range []string{"aggregator:\n  clip: 1\n", "aggregator:\n  kind: bandmf\n  bands: 4\n  clip: 1\n"} {
		base := strings.Replace(schemaRun, "aggregator:\n  clip: 1\n", agg, 1) + "  kind: minsep\n  cohort: 20\n  k: 2\n  b: 10\n"
		plain := accountOf(t, base)
		scaled := accountOf(t, strings.Replace(base, "  delta: 1.0e-5\n", "  delta: 1.0e-5\n  population_scale: 10\n", 1))
		a, s := plain.Privacy, scaled.Privacy
		if math.Abs(s.PopulationSigma-a.Sigma) > 1e-12*a.Sigma || math.Abs(s.Sigma-a.Sigma/10) > 1e-12*a.Sigma {
			t.Fatalf("%s: sigma %v, population sigma %v; unscaled %v", agg, s.Sigma, s.PopulationSigma, a.Sigma)
		}
		if math.Abs(s.Population.Epsilon-4) > 1e-4 || math.Abs(s.NoiseStd-a.NoiseStd/10) > 1e-12*a.NoiseStd || s.Denominator != a.Denominator {
			t.Fatalf("%s: population ε %v, noise std %v vs %v, denominator %v vs %v", agg, s.Population.Epsilon, s.NoiseStd, a.NoiseStd, s.Denominator, a.Denominator)
		}
		given := strings.Replace(strings.Replace(base, "  epsilon: 4\n", "", 1), "  clip: 1\n", fmt.Sprintf("  clip: 1\n  noise_multiplier: %v\n", s.Sigma), 1)
		g := accountOf(t, given).Privacy
		if math.Abs(g.Final.Epsilon-s.Final.Epsilon) > 1e-9*g.Final.Epsilon || s.Final.Epsilon < 20 {
			t.Fatalf("%s: this run's ε %v, oracle (noise_multiplier σ/10) %v", agg, s.Final.Epsilon, g.Final.Epsilon)
		}
	}
	bad := map[string]string{
		"  population_scale: 0.5\n": "privacy.population_scale: 0.5 must be at least 1",
		"  population_scale: -2\n":  "privacy.population_scale: -2 must be at least 1",
	}
	for block, msg := range bad {
		y := strings.Replace(schemaRun, "  delta: 1.0e-5\n", "  delta: 1.0e-5\n"+block, 1) + "  kind: single\n  cohort: 10\n"
		if _, _, err := Load([]byte(y), "p.yaml"); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want %q", block, err, msg)
		}
	}
	y := strings.Replace(schemaRun, "  delta: 1.0e-5\n", "  delta: 1.0e-5\n  population_scale: 10\n", 1) + "  kind: poisson\n  q: 0.01\n"
	if _, _, err := Load([]byte(y), "p.yaml"); err == nil || !strings.Contains(err.Error(), "cannot scale poisson sampling") {
		t.Errorf("poisson: error %v", err)
	}
	y = strings.Replace(strings.Replace(schemaRun, "  epsilon: 4\n", "  population_scale: 10\n", 1), "  clip: 1\n", "  clip: 1\n  noise_multiplier: 0\n", 1) + "  kind: single\n  cohort: 10\n"
	if _, _, err := Load([]byte(y), "p.yaml"); err == nil || !strings.Contains(err.Error(), "has no effect without noise") {
		t.Errorf("no noise: error %v", err)
	}
}
