package experiments

import (
	"math"
	"strings"
	"testing"

	"dpfl/privacy"
)

// TestBallsInBinsRunAccounting: a run under participation balls-in-bins
// (b = 5 bins, 40 rounds) is planned with whole random bins and accounted
// unamplified: ⌈40/5⌉ = 8 compositions of the Gaussian at the calibrated
// sigma (computed here directly, 1e-12), zero-out, sensitivity 1 on the
// expected bin clients/b; q and a cohort are refused with their keys.
func TestBallsInBinsRunAccounting(t *testing.T) {
	yml := strings.Replace(aggRun(40, "  kind: balls-in-bins\n  b: 5\n", "  kind: dpfedavg\n"), "  epsilon: 4\n", "  epsilon: 2\n", 1)
	p := accountOf(t, yml)
	a := p.Privacy
	if math.Abs(a.Sensitivity-1) > 1e-9 || a.Denominator != 2000/5 || p.Stats.MaxParticipations != 8 || p.Schedule.Groups == nil {
		t.Fatalf("accounting %+v, stats %+v", a, p.Stats)
	}
	for r, ids := range p.Schedule.Rounds {
		for _, c := range ids {
			if p.Schedule.Groups[c] != r%5 {
				t.Fatalf("client %d of bin %d in round %d", c, p.Schedule.Groups[c], r)
			}
		}
	}
	acct := privacy.NewRDP(privacy.DefaultOrders(), privacy.CKS)
	if err := acct.Compose(privacy.Gaussian{NoiseMultiplier: a.Sigma}, 8); err != nil {
		t.Fatal(err)
	}
	g, err := acct.Epsilon(1e-5)
	if err != nil || math.Abs(g.Epsilon-a.Final.Epsilon) > 1e-9 || a.Final.Adjacency != privacy.ZeroOut {
		t.Fatalf("reported %v, direct composition of 8 Gaussians %v (%v)", a.Final, g, err)
	}
	for name, c := range map[string][2]string{
		"q":      {"  kind: balls-in-bins\n  b: 5\n  q: 0.5\n", "participation.q: balls-in-bins has no q"},
		"cohort": {"  kind: balls-in-bins\n  b: 5\n  cohort: 10\n", "participation.cohort"},
		"no b":   {"  kind: balls-in-bins\n", "participation.b: required"},
	} {
		if _, _, err := Load([]byte(aggRun(40, c[0], "  kind: dpfedavg\n")), "p.yaml"); err == nil || !strings.Contains(err.Error(), c[1]) {
			t.Errorf("%s: error %v, want %q", name, err, c[1])
		}
	}
}
