package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dpfl/privacy"
	"dpfl/results"
	"dpfl/sim/rng"
)

const bibBlock = "  kind: balls-in-bins\n  b: 5\n"

// bibRun is schemaRun (2,000 clients, 40 rounds, ε = 4) at δ = 1e-4 (so
// the default Monte Carlo sample count, 212,000, keeps the tests short)
// with privacy.amplification: balls-in-bins, then part.
func bibRun(part string) string {
	y := strings.Replace(schemaRun, "  delta: 1.0e-5\n", "  delta: 1.0e-4\n  amplification: balls-in-bins\n", 1)
	return y + part
}

// TestBIBAmplifiedAccounting: a DP-FedAvg run on 5 secret bins is
// calibrated by the Monte Carlo account: labelled monte-carlo, 99%
// confidence, zero-out, the whole run's at every round, with less noise
// than the unamplified composition of the turns needs for the same target.
// Re-accounted from streams of another root with twice the samples, the
// calibrated σ gives ε at most the target plus 3% (independent estimates
// at this size spread by about ±2%), and the account's ε is the one a
// direct privacy.BallsInBinsGuarantee of the run's own streams gives.
func TestBIBAmplifiedAccounting(t *testing.T) {
	t.Parallel()
	p := accountOf(t, bibRun(bibBlock))
	a := p.Privacy
	mc := a.MonteCarlo
	if mc == nil || !a.Amplified || !a.WholeRun || a.Final.Method != privacy.MonteCarloMethod(0.99) || a.Final.Adjacency != privacy.ZeroOut {
		t.Fatalf("accounting %+v", a)
	}
	if n := int(math.Ceil(4 * math.Log(200) / 1e-4)); mc.Samples != n {
		t.Errorf("default samples %d, want ⌈4·log(200)/δ⌉ = %d", mc.Samples, n)
	}
	t.Logf("σ amplified %.4f, unamplified %.4f (%v); reported %v", a.Sigma, mc.UnamplifiedSigma, mc.Unamplified, a.Final)
	if !(a.Sigma < mc.UnamplifiedSigma) || a.Final.Epsilon > 4 {
		t.Fatalf("amplified σ %v (ε %v), unamplified %v", a.Sigma, a.Final.Epsilon, mc.UnamplifiedSigma)
	}
	if e, err := a.EpsilonThrough(0, 1e-4); err != nil || e != a.Final.Epsilon {
		t.Errorf("ε through round 1: %v (%v), want the whole run's %v", e, err, a.Final.Epsilon)
	}
	m, err := p.bibMechanism()
	if err != nil {
		t.Fatal(err)
	}
	m.NoiseMultiplier = a.Sigma * a.Sensitivity
	own, err := privacy.BallsInBinsGuarantee(context.Background(), m, 1e-4, privacy.MonteCarlo{Samples: mc.Samples, Confidence: 0.99}, bibStreams(rng.New(5), "epsilon"), 1)
	if err != nil || own != a.Final {
		t.Errorf("the run's own streams give %v (%v), the plan %v", own, err, a.Final)
	}
	other, err := privacy.BallsInBinsGuarantee(context.Background(), m, 1e-4, privacy.MonteCarlo{Samples: 2 * mc.Samples, Confidence: 0.99}, bibStreams(rng.New(77), "check"), 2)
	if err != nil || other.Epsilon > 4*1.03 {
		t.Errorf("independent re-account %v (%v), want at most 4·1.03", other, err)
	}
	t.Logf("independent re-account: %v", other)
}

// TestBIBAmplificationRefused: privacy.amplification: balls-in-bins where
// the pair's assumptions fail is refused in one line naming the key and
// why (the negative controls).
func TestBIBAmplificationRefused(t *testing.T) {
	t.Parallel()
	agg := func(y, agg string) string {
		return strings.Replace(y, "aggregator:\n  clip: 1\n", "aggregator:\n  clip: 1\n"+agg, 1)
	}
	bad := map[string][2]string{
		"uniform":    {bibRun("  kind: uniform\n  cohort: 100\n"), "privacy.amplification: balls-in-bins needs participation.kind balls-in-bins"},
		"kb-poisson": {bibRun("  kind: kb-poisson\n  b: 5\n  q: 0.5\n"), "privacy.amplification: balls-in-bins needs participation.kind balls-in-bins"},
		"diurnal":    {bibRun(bibBlock + "  availability:\n    kind: diurnal\n"), "privacy.amplification: balls-in-bins needs participation.availability.kind always"},
		"tree":       {agg(bibRun(bibBlock), "  kind: tree\n"), "privacy.amplification: balls-in-bins needs a banded matrix mechanism"},
		"blt":        {agg(bibRun(bibBlock), "  kind: blt\n"), "privacy.amplification: balls-in-bins needs a banded matrix mechanism"},
		"dp-agd":     {agg(bibRun(bibBlock), "  kind: dp-agd\n"), "privacy.amplification: balls-in-bins is not accounted for dp-agd"},
		"adaptive":   {agg(bibRun(bibBlock), "  clip_quantile: 0.5\n"), "privacy.amplification: balls-in-bins with adaptive clipping"},
		"bands":      {agg(bibRun(bibBlock), "  kind: bandmf\n  bands: 8\n"), "aggregator.bands: 8 bands exceed participation.b = 5"},
		"no noise":   {strings.Replace(bibRun(bibBlock), "  epsilon: 4\n", "", 1) + "aggregator:\n  noise_multiplier: 0\n", "privacy.amplification: has no effect without noise"},
		"samples":    {strings.Replace(schemaRun, "  delta: 1.0e-5\n", "  delta: 1.0e-5\n  monte_carlo_samples: 1000000\n", 1) + bibBlock, "privacy.monte_carlo_samples: applies only with privacy.amplification: balls-in-bins"},
		"nu-ftrl":    {agg(bibRun(bibBlock), "  kind: nu-ftrl\n"), "privacy.amplification: balls-in-bins needs a banded matrix mechanism (aggregator.kind dpfedavg, bandmf), not nu-ftrl"},
		"too many":   {strings.Replace(bibRun(bibBlock), "  amplification:", "  monte_carlo_samples: 60000000\n  amplification:", 1), "privacy.monte_carlo_samples: 60000000 must be in [0, 10000000]"},
		"work":       {strings.Replace(bibRun("  kind: balls-in-bins\n  b: 400\n"), "  amplification:", "  monte_carlo_samples: 1000000\n  amplification:", 1), "privacy.amplification: balls-in-bins' Monte Carlo account with participation.b = 400 bins and 1000000 samples"},
		"scale":      {strings.Replace(bibRun(bibBlock), "  amplification:", "  population_scale: 2\n  amplification:", 1), "privacy.amplification: balls-in-bins cannot be combined with privacy.population_scale"},
	}
	for name, c := range bad {
		if _, _, err := Load([]byte(c[0]), "p.yaml"); err == nil || !strings.Contains(err.Error(), c[1]) {
			t.Errorf("%s: error %v, want %q", name, err, c[1])
		}
	}
}

// TestBIBRunReproducible: the same amplified run on 1 and 2 workers (and
// so twice) writes the same config.yaml, metrics.csv, participation.json
// and summary.json (wall time and workers aside); metrics.csv labels every
// ε monte-carlo, 99% confidence, zero-out, whole_run, and summary.json
// states the guarantee with its confidence and relation, the sample count
// and the unamplified guarantee.
func TestBIBRunReproducible(t *testing.T) {
	t.Parallel()
	y := strings.Replace(bibRun(bibBlock), "rounds: 40", "rounds: 10", 1) + "eval:\n  every: 5\n"
	r1, d1 := runConfig(t, y, 1)
	r2, d2 := runConfig(t, y, 2)
	for _, f := range []string{"config.yaml", "metrics.csv", "participation.json"} {
		a, aerr := os.ReadFile(filepath.Join(d1, f))
		b, berr := os.ReadFile(filepath.Join(d2, f))
		if aerr != nil || berr != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s differs between 1 and 2 workers (%v, %v)", f, aerr, berr)
		}
	}
	s1, s2 := r1.Summary, r2.Summary
	s1.WallSeconds, s2.WallSeconds, s1.Workers, s2.Workers = 0, 0, 0, 0
	a, _ := json.Marshal(s1)
	b, _ := json.Marshal(s2)
	if !bytes.Equal(a, b) {
		t.Fatalf("summaries differ:\n%s\n%s", a, b)
	}
	for _, want := range []string{`"epsilon_method": "monte-carlo, 99% confidence"`, `"monte_carlo_guarantee": "ε = `, `(monte-carlo, 99% confidence; zero-out)"`, `"monte_carlo_samples": 211933`, `"unamplified": "ε = 4.000 at δ = 0.0001 (`} {
		sj, _ := os.ReadFile(filepath.Join(d1, "summary.json"))
		if !strings.Contains(string(sj), want) {
			t.Errorf("summary.json lacks %s:\n%s", want, sj)
		}
	}
	rows := readMetrics(t, d1)
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, r := range rows[1:] {
		if r[col["accountant"]] != "monte-carlo, 99% confidence" || r[col["adjacency"]] != "zero-out" || r[col["epsilon_scope"]] != results.ScopeWholeRun {
			t.Fatalf("metrics.csv row %v", r)
		}
	}
}

// TestAuditBallsInBins: canaries get secret random bins like every other
// client, so an audit of an amplified balls-in-bins run uses the secret
// schedule's statistic (every canary compared by its largest per-round
// cosine), the threat model the amplified epsilon is proven for, and no
// interval lies above the reported epsilon.
func TestAuditBallsInBins(t *testing.T) {
	t.Parallel()
	yml := strings.Replace(auditRun(1, auditDPFedAvg, "privacy:\n  epsilon: 4\n  amplification: balls-in-bins\n"),
		"  kind: single\n  cohort: 40\n", bibBlock, 1)
	out, a := runAudit(t, yml, 0)
	rep := *out.Summary.Epsilon
	if out.Summary.Accountant != privacy.MonteCarloMethod(0.99) {
		t.Fatalf("accountant %q", out.Summary.Accountant)
	}
	checkSecretScheduleAudit(t, a, rep, "balls-in-bins")
}
