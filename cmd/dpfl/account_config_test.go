package main

import (
	"encoding/json"
	"math"
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
	for _, w := range []string{"sensitivity:", "sigma:", "calibrated for ε = 4 at δ = 1e-05", "(exact-gdp)", "participation:  uniform"} {
		if code != exitOK || !strings.Contains(text, w) {
			t.Errorf("text output lacks %q:\n%s", w, text)
		}
	}
	if code, _, errs := runCLI("account", "/nonexistent/config.yaml"); code != exitFailure || !strings.Contains(errs, "nonexistent") {
		t.Errorf("missing config: exit %d %q", code, errs)
	}
}
