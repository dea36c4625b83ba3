package experiments

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dpfl/results"
)

// agdRun is a short DP-AGD run: 500 MNIST clients, all in every round,
// logistic regression, a budget that pays for a few rounds.
const agdRun = `name: agd
seed: 3
rounds: 50
data:
  dataset: mnist
  clients: 500
model:
  kind: logreg
client:
  batch_size: 5
  lr: 0.2
participation:
  cohort: 500
aggregator:
  kind: dp-agd
  clip: 1
  gradient_share: 0.2
  select_share: 0.1
  budget_growth: 0.5
  step_candidates: 3
privacy:
  epsilon: 2
  delta: 1.0e-5
  accountant: zcdp
eval:
  every: 2
`

// TestAGDAccounting: a short DP-AGD run's accounting against a hand
// computation. The budget is the standard conversion's closed form
// ρ = (√(ε + ln(1/δ)) − √(ln(1/δ)))² (ε = 2, δ = 1e-5) and summary.json
// reports ε = ρ + 2√(ρ ln(1/δ)) = 2 (1e-9). ledger.csv replays the rule
// by hand: each round opens with a gradient at the current ρ_ng (0.2ρ,
// times 1.5 after each re-measurement), each noisy max costs 0.1ρ, each
// re-measurement 0.5·ρ_ng; the running total never exceeds ρ, the run
// stopped only because the next round (ρ_ng + 0.1ρ) did not fit, and the
// spending in summary.json is the ledger's total. The rounds are those the
// ledger has, and the last one was evaluated. The run does not depend on
// the worker count.
func TestAGDAccounting(t *testing.T) {
	t.Parallel()
	res, dir := runConfig(t, agdRun, 2)
	s := res.Summary
	l := math.Log(1e5)
	rho := math.Pow(2/(math.Sqrt(2+l)+math.Sqrt(l)), 2)
	if math.Abs(s.ZCDPBudget-rho) > 1e-15 || s.Epsilon == nil || math.Abs(*s.Epsilon-2) > 1e-9 || s.EpsilonMethod != "zcdp" {
		t.Fatalf("budget %v (hand %v), ε %v by %s", s.ZCDPBudget, rho, s.Epsilon, s.EpsilonMethod)
	}
	if hand := rho + 2*math.Sqrt(rho*l); math.Abs(hand-2) > 1e-12 {
		t.Fatalf("hand conversion of the budget %v", hand)
	}
	tab, err := results.ReadTable(filepath.Join(dir, "ledger.csv"))
	if err != nil {
		t.Fatal(err)
	}
	ng, total, rounds := 0.2*rho, 0.0, 0
	for i := range tab.Rows {
		r, _ := strconv.Atoi(tab.Get(i, "round"))
		cost, _ := strconv.ParseFloat(tab.Get(i, "rho"), 64)
		var want float64
		switch tab.Get(i, "release") {
		case "gradient":
			want, rounds = ng, r
		case "noisy-max":
			want = 0.1 * rho
		case "gradient-avg":
			want = 0.5 * ng
			ng *= 1.5
		default:
			t.Fatalf("row %d: release %q", i, tab.Get(i, "release"))
		}
		if r != rounds || math.Abs(cost-want) > 1e-15 {
			t.Fatalf("row %d (round %d, %s): ρ %v, hand %v", i, r, tab.Get(i, "release"), cost, want)
		}
		total += cost
		if total > rho*(1+1e-12) {
			t.Fatalf("row %d: spent %v of %v", i, total, rho)
		}
	}
	if rounds != s.Rounds || rounds < 2 || math.Abs(total-s.ZCDPSpent) > 1e-15 || s.MaxParticipations != rounds {
		t.Fatalf("ledger has %d rounds spending %v; summary %d rounds spending %v", rounds, total, s.Rounds, s.ZCDPSpent)
	}
	if total+ng+0.1*rho <= rho*(1+1e-12) {
		t.Fatalf("stopped after %d rounds with %v of %v left, enough for a round of %v", rounds, rho-total, rho, ng+0.1*rho)
	}
	rows := readMetrics(t, dir)
	if last := rows[len(rows)-1][2]; last != strconv.Itoa(s.Rounds) || rows[1][10] != "whole_run" {
		t.Fatalf("last metrics row %s, header %v, rounds %d", last, rows[0], s.Rounds)
	}
	if s.FinalAccuracy < 0.5 {
		t.Errorf("accuracy %v after %d rounds: not learning", s.FinalAccuracy, s.Rounds)
	}
	// The finished run is recognized as complete (its metrics end before
	// rounds: 50).
	again, err := Run(t.Context(), mustLoad(t, agdRun), Options{OutDir: filepath.Dir(dir)})
	if err != nil || !again.AlreadyComplete {
		t.Fatalf("rerun: %v, already complete %v", err, again != nil && again.AlreadyComplete)
	}
	if _, err := os.Stat(filepath.Join(dir, results.ModelFile)); err != nil {
		t.Fatal(err)
	}
	// One worker gives the same run, byte for byte (the candidates' loss
	// sums are exact).
	_, dir1 := runConfig(t, agdRun, 1)
	for _, f := range []string{"metrics.csv", "ledger.csv", results.ModelFile} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, _ := os.ReadFile(filepath.Join(dir1, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s differs between 2 workers and 1", f)
		}
	}
}

func mustLoad(t *testing.T, yml string) *Config {
	t.Helper()
	cfg, _, err := Load([]byte(yml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestAGDConfigRefused: what DP-AGD cannot take is refused naming the key.
func TestAGDConfigRefused(t *testing.T) {
	for _, c := range []struct{ old, new, want string }{
		{"  accountant: zcdp\n", "  accountant: exact\n", "privacy.accountant: dp-agd spends a zCDP budget"},
		{"eval:\n", "server:\n  lr: 1\neval:\n", "server.lr: dp-agd chooses its own steps"},
		{"  select_share: 0.1\n", "  select_share: 0.9\n", "aggregator.select_share: gradient_share 0.2 + select_share 0.9 exceed the whole budget"},
		{"  epsilon: 2\n", "", "privacy.epsilon: required"},
		{"  clip: 1\n", "  clip: 1\n  noise_multiplier: 1\n", "aggregator.noise_multiplier: dp-agd sets its own noise"},
		{"  clip: 1\n", "  clip: 1\n  clip_quantile: 0.5\n", "aggregator.clip_quantile: not with dp-agd"},
		{"  cohort: 500\n", "  kind: poisson\n  q: 0.1\n", "dp-agd with poisson sampling is not supported"},
		{"  step_candidates: 3\n", "  step_candidates: 3\n  bands: 2\n", "aggregator.bands: only aggregator kind bandmf uses it"},
	} {
		_, _, err := Load([]byte(strings.Replace(agdRun, c.old, c.new, 1)), "a.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q → %q: %v, want %q", c.old, c.new, err, c.want)
		}
	}
	cfg := mustLoad(t, strings.Replace(agdRun, "  accountant: zcdp\n", "", 1))
	if cfg.Privacy.Accountant != "zcdp-cks" || cfg.Aggregator.LossClip != 3 || cfg.Aggregator.StepEvery != 10 {
		t.Fatalf("defaults: accountant %s, loss clip %v, step every %d", cfg.Privacy.Accountant, cfg.Aggregator.LossClip, cfg.Aggregator.StepEvery)
	}
}
