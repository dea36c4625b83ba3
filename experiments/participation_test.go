package experiments

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dpfl/privacy"
)

func planOf(t *testing.T, yml string) *Plan {
	t.Helper()
	cfg, _, err := Load([]byte(yml), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const schemaRun = `name: s
seed: 5
rounds: 40
data:
  dataset: mnist
  clients: 2000
model:
  kind: logreg
client:
  lr: 0.1
aggregator:
  clip: 1
privacy:
  epsilon: 4
  delta: 1.0e-5
server:
  lr: 1
participation:
`

// TestSensitivityFollowsSchema: the sensitivity used for DP-FedAvg is
// sqrt(realized maximum participations), which the schema bounds; changing
// the schema changes it, and the calibrated sigma keeps epsilon on target.
func TestSensitivityFollowsSchema(t *testing.T) {
	cases := []struct {
		block   string
		bound   int
		reached bool // the bound is certainly reached
	}{
		{"  kind: single\n  cohort: 50\n", 1, true},
		{"  kind: minsep\n  cohort: 50\n  k: 2\n  b: 10\n", 2, true},
		{"  kind: minsep\n  cohort: 50\n  k: 4\n  b: 10\n", 4, false}, // needs rounds exactly 10 apart
		{"  kind: kb\n  cohort: 50\n  k: 4\n  b: 10\n", 4, true},
	}
	for _, c := range cases {
		p := planOf(t, schemaRun+c.block)
		k := p.Stats.MaxParticipations
		if k > c.bound || (c.reached && k != c.bound) || k < 1 {
			t.Errorf("%q: realized max participations %d, schema bound %d", c.block, k, c.bound)
		}
		if want := math.Sqrt(float64(k)); math.Abs(p.Privacy.Sensitivity-want) > 1e-12 {
			t.Errorf("%q: sensitivity %v, want sqrt(%d)", c.block, p.Privacy.Sensitivity, k)
		}
		if e := p.Privacy.Final.Epsilon; e > 4 || e < 4*(1-1e-4) {
			t.Errorf("%q: calibrated epsilon %v", c.block, e)
		}
		// Noise on the sum grows with sqrt(k) for the same target.
		if want := p.Privacy.Sigma * math.Sqrt(float64(k)); math.Abs(p.Privacy.NoiseStd-want) > 1e-12 {
			t.Errorf("%q: noise std %v, want %v", c.block, p.Privacy.NoiseStd, want)
		}
	}
}

// TestPoissonIsAmplified: Poisson sampling is accounted as T sampled
// Gaussians with RDP; the same sigma without amplification would give a much
// larger epsilon (at most one participation per round, T rounds).
func TestPoissonIsAmplified(t *testing.T) {
	p := planOf(t, strings.Replace(schemaRun, "  epsilon: 4\n", "  epsilon: 2\n", 1)+"  kind: poisson\n  q: 0.02\n")
	a := p.Privacy
	if !a.Amplified || a.Final.Method != privacy.MethodRDPCKS || a.Denominator != 0.02*2000 || a.Sensitivity != 1 {
		t.Fatalf("accounting %+v", a)
	}
	acct := privacy.NewRDP(privacy.DefaultOrders(), privacy.CKS)
	acct.Compose(privacy.PoissonSampled{Probability: 0.02, Event: privacy.Gaussian{NoiseMultiplier: a.Sigma}}, 40)
	g, _ := acct.Epsilon(1e-5)
	if math.Abs(g.Epsilon-a.Final.Epsilon) > 1e-12 {
		t.Fatalf("reported %v, RDP of 40 sampled Gaussians %v", a.Final.Epsilon, g.Epsilon)
	}
	unamp := privacy.NewExact()
	unamp.Compose(privacy.Gaussian{NoiseMultiplier: a.Sigma}, 40)
	gu, _ := unamp.Epsilon(1e-5)
	if gu.Epsilon < 3*a.Final.Epsilon {
		t.Fatalf("amplified %v vs unamplified %v: amplification should matter at q = 0.02", a.Final.Epsilon, gu.Epsilon)
	}
}

func TestParticipationConfigErrors(t *testing.T) {
	cases := map[string]string{
		"  kind: poisson\n  q: 0.1\n  availability:\n    kind: diurnal\n":                                    "availability.kind: poisson sampling amplifies privacy only when every client is always available",
		"  kind: poisson\n  q: 0.1\nprivacy_x: 1\n":                                                          `unknown key "privacy_x"`,
		"  kind: minsep\n  cohort: 5\n":                                                                      "participation.k: required",
		"  kind: uniform\n  cohort: 5\n  k: 3\n":                                                             "only kb and minsep use k and b",
		"  kind: uniform\n  cohort: 5\n  availability:\n    kind: trace\n":                                   "participation.availability.file: required",
		"  kind: uniform\n  cohort: 5\n  availability:\n    kind: moon\n":                                    `unknown value "moon"`,
		"  kind: uniform\n  cohort: 5\n  availability:\n    kind: diurnal\n    peak: 0.3\n    trough: 0.6\n": "diurnal trough 0.6 must be in [0, peak = 0.3]",
	}
	for block, want := range cases {
		_, _, err := Load([]byte(schemaRun+block), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", block, err, want)
		}
	}
	yml := strings.Replace(schemaRun, "  epsilon: 4\n", "  epsilon: 4\n  accountant: exact\n", 1) + "  kind: poisson\n  q: 0.1\n"
	if _, _, err := Load([]byte(yml), "p.yaml"); err == nil || !strings.Contains(err.Error(), "exact cannot account Poisson sampling") {
		t.Errorf("poisson with exact accountant: %v", err)
	}
	// single participation that the population cannot fill
	cfg, _, err := Load([]byte(schemaRun+"  kind: single\n  cohort: 100\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewPlan(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "single participation needs 40 rounds × 100 clients = 4000 distinct clients; the population has 2000") {
		t.Fatalf("unfillable single participation: %v", err)
	}
}

// TestDiurnalMinSepRun trains a few rounds under b-min-sep with diurnal
// availability and a trace file, and checks what the run records.
func TestDiurnalMinSepRun(t *testing.T) {
	dir := t.TempDir()
	trace := "client,start,end\n"
	for c := 0; c < 2000; c++ {
		trace += strconv.Itoa(c) + ",0," + strconv.Itoa(3600*(1+c%5)) + "\n"
	}
	os.WriteFile(filepath.Join(dir, "trace.csv"), []byte(trace), 0o644)
	for _, avail := range []string{
		"    kind: diurnal\n    zones: [{offset: -5, weight: 1}, {offset: 8, weight: 1}]\n",
		"    kind: trace\n    file: trace.csv\n",
	} {
		yml := strings.Replace(schemaRun, "rounds: 40", "rounds: 12", 1) +
			"  kind: minsep\n  cohort: 100\n  k: 3\n  b: 4\n  clock:\n    round_minutes: 30\n  availability:\n" + avail
		yml = strings.Replace(yml, "name: s", "name: diurnal", 1)
		os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(yml), 0o644)
		cfg, _, err := LoadFile(filepath.Join(dir, "c.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(t.Context(), cfg, Options{OutDir: filepath.Join(dir, "out"), BaseDir: dir, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if s.MaxParticipations > 3 || (s.MinSeparation != 0 && s.MinSeparation < 4) || !strings.Contains(s.Participation, "minsep k=3 b=4") {
			t.Fatalf("summary %+v", s)
		}
		b, err := os.ReadFile(filepath.Join(res.Dir, "participation.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rec participationRecord
		if err := json.Unmarshal(b, &rec); err != nil || len(rec.Rounds) != 12 || rec.Rounds[1].UTCHour != 0.5 {
			t.Fatalf("participation.json: %v %+v", err, rec.Rounds)
		}
	}
}
