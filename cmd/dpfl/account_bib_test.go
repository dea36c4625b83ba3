package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dpfl/privacy"
	"dpfl/sim/rng"
)

// TestAccountBIB: -bins accounts balls-in-bins by Monte Carlo: the answer
// is privacy.BallsInBinsEpsilon's for the same mechanism, samples and seed,
// labelled with its confidence and zero-out, below the unamplified
// guarantee of the same turns printed beside it; a banded C (-c-col) too.
func TestAccountBIB(t *testing.T) {
	m := accountJSON(t, "-bins", "4", "-rounds", "12", "-sigma", "1.5", "-delta", "1e-3", "-c-col", "1,0.4")
	col := []float64{1, 0.4}
	mech := privacy.BallsInBins{Bins: 4, Rounds: 12, NoiseMultiplier: 1.5, Bands: 2, Entry: func(i, j int) float64 {
		if i-j < 2 {
			return col[i-j]
		}
		return 0
	}}
	g, err := privacy.BallsInBinsEpsilon(mech, 1e-3, privacy.MonteCarlo{Samples: 100_000, Confidence: 0.99}, rng.New(1).Stream("account/balls-in-bins"))
	if err != nil {
		t.Fatal(err)
	}
	if m["epsilon"].(float64) != g.Epsilon || m["samples"] != 100000.0 || m["confidence"] != 0.99 || m["adjacency"] != "zero-out" ||
		!strings.Contains(m["guarantee"].(string), "monte-carlo, 99% confidence; zero-out") {
		t.Errorf("got %v, want %v", m, g)
	}
	un := m["unamplified"].(string)
	var unEps float64
	if _, err := fmtSscanf(un, &unEps); err != nil || !(g.Epsilon < unEps) || !strings.Contains(un, "exact-gdp; zero-out") {
		t.Errorf("unamplified %q (%v) is not above the amplified ε %g", un, err, g.Epsilon)
	}
	code, out, _ := runAccount(t, "-bins", "6", "-rounds", "60", "-sigma", "3", "-delta", "1e-3")
	if code != exitOK || !strings.Contains(out, "balls-in-bins (6 bins") || !strings.Contains(out, "unamplified  ε =") || !strings.Contains(out, "C = I") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func fmtSscanf(s string, eps *float64) (int, error) {
	f := strings.Fields(s) // "ε = 14.119 at δ = ..."
	if len(f) < 3 {
		return 0, strconv.ErrSyntax
	}
	v, err := strconv.ParseFloat(f[2], 64)
	*eps = v
	return 1, err
}

// TestAccountBIBRefuses: flags balls-in-bins does not take, and values it
// cannot account, are one clear line each.
func TestAccountBIBRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-bins", "4", "-rounds", "12", "-epsilon", "2", "-delta", "1e-3"}, "needs -sigma"},
		{[]string{"-bins", "4", "-rounds", "12", "-sigma", "1", "-delta", "1e-3", "-q", "0.1"}, "-q does not apply"},
		{[]string{"-bins", "2", "-rounds", "12", "-sigma", "1", "-delta", "1e-3", "-c-col", "1,0.5,0.2"}, "more than -bins"},
		{[]string{"-bins", "2", "-rounds", "12", "-sigma", "1", "-delta", "1e-3", "-c-col", "1,-0.5"}, "bad entry"},
		{[]string{"-bins", "8", "-rounds", "4", "-sigma", "1", "-delta", "1e-3"}, "fewer than -bins"},
		{[]string{"-bins", "2", "-rounds", "4", "-sigma", "1", "-delta", "1e-5", "-samples", "1000"}, "cannot certify"},
		{[]string{"-sigma", "1", "-delta", "1e-3", "-samples", "1000"}, "applies to -mechanism balls-in-bins only"},
		{[]string{"-bins", "2000", "-rounds", "2000", "-sigma", "1", "-delta", "1e-3"}, "above the limit"},
	} {
		code, _, errs := runAccount(t, c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, errs, c.want)
		}
	}
}

// TestAccountConfigBIB: dpfl account on a balls-in-bins config reports the
// run's unamplified guarantee and, beside it, the amplified Monte Carlo
// one at the run's noise: the calculator's answer for the same bins,
// rounds and sigma (C = I for DP-FedAvg; same samples and seed).
func TestAccountConfigBIB(t *testing.T) {
	b, err := os.ReadFile("../../experiments/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := strings.NewReplacer("  kind: uniform", "  kind: balls-in-bins", "  cohort: 1000 ", "  b: 4 #", "rounds: 60", "rounds: 12",
		"delta: 1.0e-5", "delta: 1.0e-4", "accountant: exact ", "accountant: rdp #").Replace(string(b))
	path := filepath.Join(t.TempDir(), "bib.yaml")
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runAccount(t, "-json", path)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); code != exitOK || err != nil {
		t.Fatalf("exit %d (%v): %s", code, err, errs)
	}
	if m["amplified"] != false {
		t.Errorf("the run's own account is marked amplified: %v", m["amplified"])
	}
	got, _ := m["balls_in_bins_guarantee"].(string)
	calc := accountJSON(t, "-bins", "4", "-rounds", "12", "-sigma", strconv.FormatFloat(m["noise_std"].(float64), 'g', -1, 64), "-delta", "1e-4")
	if !strings.HasPrefix(got, calc["guarantee"].(string)+" (amplified by the random bins") || !strings.Contains(m["guarantee"].(string), "rdp-cks") {
		t.Errorf("config: run %q, amplified %q; calculator %q", m["guarantee"], got, calc["guarantee"])
	}
	if !(calc["epsilon"].(float64) < m["epsilon"].(float64)) {
		t.Errorf("amplified ε %v not below the run's %v", calc["epsilon"], m["epsilon"])
	}
}
