package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"dpfl/privacy"
)

// TestAccountWOR: the calculator's fixed-size cohorts (-cohort, -population,
// -rounds) calibrate and account what the privacy package gives for the
// same event at noise multiplier sigma/2 (replace-one sensitivity 2 of a
// sum clipped to 1), by rdp (the default) and pld, within a second for
// 2,000 rounds (doubled for a loaded machine); the guarantee says
// replace-one.
func TestAccountWOR(t *testing.T) {
	for _, acct := range []string{"rdp", "pld"} {
		start := time.Now()
		m := accountJSON(t, "-cohort", "1000", "-population", "6000", "-rounds", "2000", "-epsilon", "8", "-delta", "1e-5", "-accountant", acct)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: calibration took %v", acct, d)
		}
		sigma := m["sigma"].(float64)
		newAcct, _ := privacy.NewByName(acct, nil)
		a := newAcct()
		_ = a.Compose(privacy.SelfComposed{Event: privacy.SampledWithoutReplacement{PopulationSize: 6000, SampleSize: 1000, Event: privacy.Gaussian{NoiseMultiplier: sigma / 2}}, Count: 2000}, 1)
		g, err := a.Epsilon(1e-5)
		if err != nil || math.Abs(g.Epsilon-m["epsilon"].(float64)) > 1e-9 || g.Epsilon > 8 || m["adjacency"] != "replace-one" ||
			m["cohort"] != 1000.0 || m["population"] != 6000.0 || m["sensitivity"] != 2.0 || m["noise_multiplier"].(float64) != sigma/2 {
			t.Errorf("%s: %v, direct %v (%v)", acct, m, g, err)
		}
	}
	code, out, _ := runAccount(t, "-cohort", "100", "-population", "3400", "-rounds", "1500", "-sigma", "1.5", "-delta", "1e-6")
	if code != exitOK || !strings.Contains(out, "cohort 100 of 3400 each step, uniform without replacement") || !strings.Contains(out, "; replace-one)") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestAccountWORUsage: bad combinations are refused in one line naming the
// flag.
func TestAccountWORUsage(t *testing.T) {
	cases := map[string][]string{
		"needs -cohort and -population":     {"-population", "10", "-sigma", "1", "-delta", "1e-5"},
		"-cohort must be between 1":         {"-cohort", "11", "-population", "10", "-sigma", "1", "-delta", "1e-5"},
		"-q applies to -mechanism sampled":  {"-cohort", "1", "-population", "10", "-q", "0.1", "-mechanism", "sampled-without-replacement", "-sigma", "1", "-delta", "1e-5"},
		"apply to -mechanism sampled-with":  {"-cohort", "1", "-population", "10", "-mechanism", "gaussian", "-sigma", "1", "-delta", "1e-5"},
		"cannot account sampling without":   {"-cohort", "1", "-population", "10", "-accountant", "zcdp", "-sigma", "1", "-delta", "1e-5"},
		"give -steps or -rounds, not both":  {"-cohort", "1", "-population", "10", "-steps", "2", "-rounds", "2", "-sigma", "1", "-delta", "1e-5"},
		"unknown -mechanism \"wor\" (want ": {"-mechanism", "wor", "-sigma", "1", "-delta", "1e-5"},
	}
	for want, args := range cases {
		code, _, errs := runAccount(t, args...)
		if code != exitUsage || !strings.Contains(errs, want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want %q", args, code, errs, want)
		}
	}
}
