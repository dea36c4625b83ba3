package main

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"dpfl/privacy"
)

// privacyRows parses the -epsilon section: for each "mechanism sampling"
// (the sampling's first word) its sigma and accounting label.
func privacyRows(t *testing.T, out string) map[string]struct {
	sigma float64
	how   string
} {
	t.Helper()
	_, sec, ok := strings.Cut(out, "\nprivacy at ε")
	if !ok {
		t.Fatalf("no privacy section in:\n%s", out)
	}
	rows := map[string]struct {
		sigma float64
		how   string
	}{}
	split := regexp.MustCompile(`\s{2,}`)
	for _, line := range strings.Split(sec, "\n")[2:] {
		f := split.Split(strings.TrimSpace(line), -1)
		if len(f) < 5 {
			continue
		}
		s, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			t.Fatalf("line %q: sigma %q", line, f[2])
		}
		key := f[0] + " " + strings.SplitN(strings.Fields(f[1])[0], "(", 2)[0]
		if strings.HasPrefix(f[1], "the same, without replacement") {
			key = f[0] + " wor"
		}
		rows[key] = struct {
			sigma float64
			how   string
		}{s, f[4]}
	}
	return rows
}

// TestMechanismPrivacySection: -epsilon prints DP-FedAvg's and BandMF's
// noise for the target under (k,b) (the exact Gaussian of the strategy's
// sensitivity, checked directly), kb-poisson and balls-in-bins (amplified:
// less noise), and DP-FedAvg's uniform cohorts unamplified and without
// replacement, each labelled with its method and adjacency.
func TestMechanismPrivacySection(t *testing.T) {
	code, out, errs := runMechanism(t, "-n", "12", "-participation", "kb", "-k", "3", "-b", "4", "-strategy", "dpfedavg", "-quiet",
		"-epsilon", "2", "-delta", "1e-3", "-clients", "400", "-cohort", "20", "-cache", "")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows := privacyRows(t, out)
	// DP-FedAvg under kb(3,4): sensitivity √3; the exact Gaussian at ε = 2.
	z, _, err := privacy.Calibrate(2, 1e-3, func(s float64) privacy.Event { return privacy.Gaussian{NoiseMultiplier: s} }, privacy.NewExact, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"dpfedavg", "bandmf"} {
		kb, kbp, bib := rows[m+" kb"], rows[m+" kb-poisson"], rows[m+" balls-in-bins"]
		if m == "dpfedavg" && math.Abs(kb.sigma/(z*math.Sqrt(3))-1) > 1e-4 {
			t.Errorf("dpfedavg kb: sigma %g, want %g", kb.sigma, z*math.Sqrt(3))
		}
		if kb.how != "exact-gdp; zero-out" || !strings.HasPrefix(kbp.how, "rdp-cks") || !strings.HasSuffix(kbp.how, "; zero-out") ||
			!strings.Contains(bib.how, "monte-carlo, 99% confidence; zero-out") {
			t.Errorf("%s labels %q, %q, %q", m, kb.how, kbp.how, bib.how)
		}
		if !(kbp.sigma < kb.sigma && bib.sigma < kb.sigma && kbp.sigma > 0 && bib.sigma > 0) {
			t.Errorf("%s: amplified sigmas %g (kb-poisson), %g (balls-in-bins) not below the unamplified %g", m, kbp.sigma, bib.sigma, kb.sigma)
		}
	}
	if u, w := rows["dpfedavg uniform"], rows["dpfedavg wor"]; u.how != "exact-gdp; zero-out" || !strings.HasSuffix(w.how, "; replace-one") || !(w.sigma > 0) {
		t.Errorf("uniform rows %+v, %+v", u, w)
	}
}

// TestMechanismPrivacyRefuses: -epsilon's flags are refused, one line
// each, where the comparison does not apply.
func TestMechanismPrivacyRefuses(t *testing.T) {
	base := []string{"-n", "12", "-strategy", "dpfedavg", "-quiet", "-cache", ""}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-epsilon", "2", "-delta", "1e-3", "-clients", "400", "-cohort", "20"}, "under -participation kb"},
		{[]string{"-participation", "kb", "-k", "3", "-b", "4", "-epsilon", "2", "-delta", "1e-3", "-clients", "400", "-cohort", "200"}, "between 1 and clients/b"},
		{[]string{"-participation", "kb", "-k", "3", "-b", "4", "-epsilon", "2", "-delta", "1e-3", "-clients", "400", "-cohort", "20", "-json"}, "does not apply with -json"},
		{[]string{"-participation", "kb", "-k", "2", "-b", "4", "-epsilon", "2", "-delta", "1e-3", "-clients", "400", "-cohort", "20"}, "turns"},
		{[]string{"-delta", "1e-3"}, "-delta applies only with -epsilon"},
	} {
		code, _, errs := runMechanism(t, append(append([]string{}, base...), c.args...)...)
		if code != exitUsage || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, errs, c.want)
		}
	}
}
