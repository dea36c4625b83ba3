package experiments

import (
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
	p, err := NewAccount(cfg, "")
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
		m, err := strategy.Evaluate(p.Strategy, w, p.StrategyPart)
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
