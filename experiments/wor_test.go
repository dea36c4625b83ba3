package experiments

import (
	"math"
	"strings"
	"testing"

	"dpfl/privacy"
)

const worBlock = "  kind: uniform\n  cohort: 100\n"

// worRun is schemaRun (2,000 clients, 40 rounds, ε = 4) with uniform
// cohorts of 100 and privacy.amplification set.
func worRun(part string) string {
	y := strings.Replace(schemaRun, "  delta: 1.0e-5\n", "  delta: 1.0e-5\n  amplification: sampling-without-replacement\n", 1)
	return y + part
}

// TestWORAccounting: a uniform-cohort DP-FedAvg run with
// privacy.amplification is accounted as 40 rounds of a Gaussian on 100 of
// 2,000 clients drawn without replacement (replace-one) by the default rdp
// accountant: the reported ε equals that composition computed here (1e-12)
// and meets the target; ε so far after round t counts t+1 rounds; the noise
// std is 2·σ·clip; the same run without the key keeps today's unamplified
// zero-out accounting (and needs more noise under the same relation).
func TestWORAccounting(t *testing.T) {
	p := accountOf(t, worRun(worBlock))
	a := p.Privacy
	if p.Config.Privacy.Accountant != "rdp" || !a.Amplified || a.Sensitivity != 2 || a.NoiseStd != 2*a.Sigma || a.Final.Adjacency != privacy.ReplaceOne {
		t.Fatalf("accounting %+v (accountant %s)", a, p.Config.Privacy.Accountant)
	}
	direct := func(rounds int) float64 {
		acct := privacy.NewRDP(nil, privacy.CKS)
		if err := acct.Compose(privacy.SampledWithoutReplacement{PopulationSize: 2000, SampleSize: 100, Event: privacy.Gaussian{NoiseMultiplier: a.Sigma}}, rounds); err != nil {
			t.Fatal(err)
		}
		g, _ := acct.Epsilon(1e-5)
		return g.Epsilon
	}
	if e := direct(40); math.Abs(e-a.Final.Epsilon) > 1e-12 || e > 4 || e < 4*(1-1e-5) {
		t.Fatalf("reported ε %v, direct %v, target 4", a.Final.Epsilon, e)
	}
	for _, r := range []int{0, 9, 39} {
		if e, err := a.EpsilonThrough(r, 1e-5); err != nil || math.Abs(e-direct(r+1)) > 1e-12 {
			t.Errorf("ε through round %d: %v (%v), want %v", r, e, err, direct(r+1))
		}
	}
	plain := accountOf(t, schemaRun+worBlock)
	if plain.Privacy.Amplified || plain.Privacy.Final.Adjacency != privacy.ZeroOut {
		t.Fatalf("without the key: %+v", plain.Privacy)
	}
	// Under replace-one the unamplified sum needs twice its zero-out noise.
	if plain := 2 * plain.Privacy.NoiseStd; !(a.NoiseStd < plain) {
		t.Errorf("amplified noise std %v not below the unamplified replace-one %v", a.NoiseStd, plain)
	}
}

// TestWORConfigRefused: privacy.amplification where its assumptions fail
// is refused in one line naming the key and the reason.
func TestWORConfigRefused(t *testing.T) {
	bad := map[string][2]string{
		"diurnal":  {worBlock + "  availability:\n    kind: diurnal\n", "privacy.amplification: sampling-without-replacement needs participation.availability.kind always"},
		"minsep":   {"  kind: minsep\n  cohort: 100\n  k: 3\n  b: 5\n", "privacy.amplification: sampling-without-replacement needs participation.kind uniform"},
		"poisson":  {"  kind: poisson\n  q: 0.05\n", "privacy.amplification: sampling-without-replacement needs participation.kind uniform"},
		"tree":     {worBlock, "privacy.amplification: sampling-without-replacement is accounted for aggregator.kind dpfedavg only"},
		"zcdp":     {worBlock, "privacy.accountant: zcdp cannot account sampling without replacement"},
		"unknown":  {worBlock, "privacy.amplification: unknown \"poisson\""},
		"adaptive": {worBlock, "privacy.amplification: sampling-without-replacement with adaptive clipping"},
	}
	for name, c := range bad {
		y := worRun(c[0])
		switch name {
		case "tree":
			y = strings.Replace(y, "aggregator:\n  clip: 1\n", "aggregator:\n  clip: 1\n  kind: tree\n", 1)
		case "zcdp":
			y = strings.Replace(y, "  delta: 1.0e-5\n", "  delta: 1.0e-5\n  accountant: zcdp\n", 1)
		case "unknown":
			y = strings.Replace(y, "amplification: sampling-without-replacement", "amplification: poisson", 1)
		case "adaptive":
			y = strings.Replace(y, "aggregator:\n  clip: 1\n", "aggregator:\n  clip: 1\n  clip_quantile: 0.5\n", 1)
		}
		if _, _, err := Load([]byte(y), "p.yaml"); err == nil || !strings.Contains(err.Error(), c[1]) {
			t.Errorf("%s: error %v, want %q", name, err, c[1])
		}
	}
}
