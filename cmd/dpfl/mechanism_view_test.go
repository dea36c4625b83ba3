package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"dpfl/aggregators"
	"dpfl/aggregators/strategy"
)

// TestMechanismTableView: a comparison with a long Toeplitz row (64
// coefficients) prints no line wider than 120 columns, the coefficients
// abbreviated in the text and complete in -json; each row says how a run
// uses it (the same in the table and in JSON run_as); progress goes to
// stderr, one line at each strategy's start and end when stderr is not a
// terminal, and -quiet silences it.
func TestMechanismTableView(t *testing.T) {
	cache := t.TempDir()
	args := []string{"-n", "128", "-participation", "kb", "-k", "2", "-b", "64", "-all", "-cache", cache}
	code, out, errs := runMechanism(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, l := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(l) > mechanismTableWidth {
			t.Errorf("line of %d columns: %q", utf8.RuneCountInString(l), l)
		}
	}
	if !strings.Contains(out, "… (64 coefficients; -json for all)]") {
		t.Errorf("Toeplitz coefficients not abbreviated:\n%s", out)
	}
	want := map[string]string{
		"dpfedavg": "dpfedavg", "tree-vanilla": "tree estimator=vanilla", "tree-online": "tree", "tree-full": "tree estimator=full",
		"optimal-mf": "optimal-mf", "multi-epoch": "optimal-mf multi_epoch=true", "multi-epoch-f": "offline only",
		"bandmf": "bandmf bands=64", "bandmf-f": "offline only", "nu-ftrl": "nu-ftrl nu=", "blt-m8": "blt buffers=8",
		"toeplitz-b64": "offline only",
	}
	checkUse := func(where, mech, use string) {
		w, ok := want[mech]
		if !ok {
			t.Errorf("%s: unexpected mechanism %q", where, mech)
			return
		}
		if use != w && !(strings.HasSuffix(w, "=") && strings.HasPrefix(use, w)) {
			t.Errorf("%s: %s: use %q, want %q", where, mech, use, w)
		}
		if kind, _, _ := strings.Cut(use, " "); use != "offline only" && !slices.Contains(aggregators.KindNames(), kind) {
			t.Errorf("%s: %s: %q is no aggregator kind", where, mech, kind)
		}
	}
	lines := strings.Split(out, "\n")
	h := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "mechanism ") })
	if h < 0 || !strings.HasSuffix(lines[h], " use in a run") {
		t.Fatalf("no table header:\n%s", out)
	}
	col := strings.Index(lines[h], "use in a run")
	for _, l := range lines[h+1 : h+1+len(strategy.Names)] {
		checkUse("table", strings.Fields(l)[0], l[col:])
	}
	// Progress: stderr only, start and end of each strategy.
	m := len(strategy.Names)
	for i := 1; i <= m; i++ {
		for _, end := range []string{"...\n", " done in "} {
			if !strings.Contains(errs, fmt.Sprintf("dpfl mechanism: strategy %d of %d: ", i, m)) || strings.Count(errs, end) != m {
				t.Fatalf("progress: want %d lines with %q, got\n%s", m, end, errs)
			}
		}
	}
	if strings.Contains(out, "strategy 1 of") {
		t.Errorf("progress on stdout:\n%s", out)
	}
	code, out, errs = runMechanism(t, append(args, "-json", "-quiet")...)
	if code != 0 || errs != "" {
		t.Fatalf("-json -quiet: exit %d, stderr %q", code, errs)
	}
	var rows []strategy.Report
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		checkUse("json", r.Mechanism, r.RunAs)
		if r.Mechanism == "toeplitz-b64" && len(r.ToeplitzCoefs) != 64 {
			t.Errorf("JSON toeplitz coefficients: %d, want 64", len(r.ToeplitzCoefs))
		}
	}
}
