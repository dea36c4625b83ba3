package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dpfl/privacy"
)

// TestAccountQuickstart: dpfl account on the quickstart prints the calibrated
// sigma and an epsilon that an independent exact accountant reproduces from
// the printed sigma (one Gaussian, noise multiplier sigma, sensitivity 1 in
// normalized units), to 1e-9.
func TestAccountQuickstart(t *testing.T) {
	code, out, errs := runCLI("account", "-json", "../../experiments/quickstart.yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var a configAccount
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
	if a.Epsilon == nil || *a.Epsilon > 4 || *a.Epsilon < 4*(1-1e-4) || !a.Calibrated || a.Accountant != privacy.MethodExactGDP {
		t.Fatalf("account %+v", a)
	}
	if math.Abs(a.Sensitivity-math.Sqrt(float64(a.MaxParticipations))) > 1e-12 || math.Abs(a.NoiseStd-a.NoiseMultiplier*a.Sensitivity) > 1e-12 {
		t.Fatalf("sensitivity %v for %d participations, noise std %v", a.Sensitivity, a.MaxParticipations, a.NoiseStd)
	}
	acct := privacy.NewExact()
	acct.Compose(privacy.Gaussian{NoiseMultiplier: a.NoiseMultiplier}, 1)
	g, _ := acct.Epsilon(a.Delta)
	if math.Abs(g.Epsilon-*a.Epsilon) > 1e-9 {
		t.Fatalf("printed epsilon %v, exact accountant at the printed sigma %v", *a.Epsilon, g.Epsilon)
	}
	code, text, _ := runCLI("account", "../../experiments/quickstart.yaml")
	for _, w := range []string{"sensitivity:", "sigma:", "calibrated for ε = 4 at δ = 1e-05", "(exact-gdp; zero-out)", "participation:  uniform"} {
		if code != exitOK || !strings.Contains(text, w) {
			t.Errorf("text output lacks %q:\n%s", w, text)
		}
	}
	if code, _, errs := runCLI("account", "/nonexistent/config.yaml"); code != exitFailure || !strings.Contains(errs, "nonexistent") {
		t.Errorf("missing config: exit %d %q", code, errs)
	}
}

// TestAccountStrategyParameters: dpfl account on a nu-ftrl configuration
// prints the tuned ν (text and JSON), and on a blt one the buffers.
func TestAccountStrategyParameters(t *testing.T) {
	b, err := os.ReadFile("../../experiments/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for kind, want := range map[string]string{"nu-ftrl": "ν = ", "blt\n  buffers: 2": "θ = ["} {
		y := strings.Replace(string(b), "  kind: dpfedavg", "  kind: "+kind, 1)
		y = strings.Replace(y, "  kind: uniform", "  kind: minsep\n  k: 3\n  b: 3", 1)
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI("account", "-json", path)
		var a configAccount
		if code != exitOK || json.Unmarshal([]byte(out), &a) != nil || !strings.Contains(a.Parameters, want) {
			t.Fatalf("%s: exit %d, %+v %s", kind, code, a, errs)
		}
		if code, text, _ := runCLI("account", path); code != exitOK || !strings.Contains(text, "strategy:       "+a.Strategy+" ("+a.Parameters+")") {
			t.Errorf("%s: text %q", kind, text)
		}
	}
}

// TestAccountBallsInBinsExample: dpfl account of the balls-in-bins example
// prints the Monte Carlo guarantee with its confidence and relation, the
// sample count, and the unamplified σ for the same target (larger).
func TestAccountBallsInBinsExample(t *testing.T) {
	t.Parallel()
	code, text, errs := runCLI("account", "../../experiments/balls-in-bins.yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"(monte-carlo, 99% confidence; zero-out) (this run's clients)", "accountant:     Monte Carlo over balls-in-bins' dominating pair (2119327 samples each side, holds with probability 0.99)", "unamplified:    σ = "} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "amplified:      ") {
		t.Errorf("the run's own guarantee is the amplified one; no second line:\n%s", text)
	}
}
