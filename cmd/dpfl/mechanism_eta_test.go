package main

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"dpfl/aggregators/strategy"
)

// TestStrategyETA: the time left is the mean time per iteration times the
// iterations left, these from the -maxiter limit for L-BFGS and from the
// gap's geometric trend for the fixed point; no estimate without an
// iteration or with a gap that does not fall.
func TestStrategyETA(t *testing.T) {
	left, basis := strategyETA(100, 10*time.Second, etaInputs{maxIter: 2000})
	if left != 1900*100*time.Millisecond || !strings.Contains(basis, "-maxiter 2000") {
		t.Errorf("maxiter: %v (%s), want 3m10s", left, basis)
	}
	// The gap falls tenfold per iteration from 1e-1 at iteration 1 to 1e-3
	// at iteration 3: three more reach 1e-6, one second each.
	g := etaInputs{targetGap: 1e-6, gap0: 1e-1, iter0: 1, gap: 1e-3, maxIter: 2000}
	wantIts := math.Ceil(math.Log(1e-3/1e-6) / (math.Log(1e-1/1e-3) / 2))
	if left, basis = strategyETA(3, 3*time.Second, g); left != time.Duration(wantIts)*time.Second || wantIts != 3 || basis != "gap trend" {
		t.Errorf("gap trend: %v (%s), want 3s", left, basis)
	}
	g.gap = 1e-7
	if left, basis = strategyETA(3, 3*time.Second, g); left != 0 || basis != "gap at target" {
		t.Errorf("gap at target: %v (%s)", left, basis)
	}
	// Negative controls: no iteration yet; a gap that has not fallen.
	if _, basis = strategyETA(0, time.Second, etaInputs{maxIter: 10}); basis != "" {
		t.Errorf("no iteration: %q", basis)
	}
	g.gap = g.gap0
	if _, basis = strategyETA(3, 3*time.Second, g); basis != "" {
		t.Errorf("flat gap: %q", basis)
	}
}

// TestMechProgressETA: with a fake clock, the end of a strategy estimates
// the comparison's rest from the mean time of the strategies done, and a
// long optimization's periodic line (stderr not a terminal) adds the
// strategy's own estimate to it.
func TestMechProgressETA(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := &mechProgress{w: &buf, total: 3, now: func() time.Time { return clock }}
	p.eta.maxIter = 100
	p.begin("a")
	clock = clock.Add(10 * time.Second)
	p.begin("b")
	if want := "strategy 1 of 3: a done in 10s; all: ~20s left at 10s per strategy so far\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("end line: want %q in\n%s", want, buf.String())
	}
	clock = clock.Add(5 * time.Second)
	p.update(1, "loss 9", 0)
	if strings.Contains(buf.String(), "iteration 1,") {
		t.Errorf("line before %s:\n%s", progressInterval, buf.String())
	}
	clock = clock.Add(25 * time.Second)
	p.update(10, "loss 5", 0)
	want := "strategy 2 of 3: b: iteration 10, loss 5, 30s elapsed, 4m30s left (at most, to -maxiter 100); all: ~4m40s left at 10s per strategy so far\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("progress line: want %q in\n%s", want, buf.String())
	}
	clock = clock.Add(time.Second)
	p.begin("c")
	p.end()
	if got := strings.Count(buf.String(), "all: ~"); got != 3 {
		t.Errorf("%d estimates of the rest, want 3 (none at the last strategy's end):\n%s", got, buf.String())
	}
}

// TestComparisonSet: at n = 2000 the default leaves out the slow exact
// optimizations (ν-FTRL's only when ν is searched for) and the offline-only
// strategies, saying how to include
// them; at a small n only the offline-only ones; -all leaves out none.
func TestComparisonSet(t *testing.T) {
	slow := []string{"bandmf", "multi-epoch"}
	offline := []string{"bandmf-f", "multi-epoch-f", "toeplitz"}
	run, skipped := comparisonSet(2000, true, false)
	for _, s := range append(slices.Clone(slow), offline...) {
		if slices.Contains(run, s) || !strings.Contains(skipped[s], "-all to include") {
			t.Errorf("n 2000: %s run or not skipped with a hint: %q", s, skipped[s])
		}
	}
	for _, s := range []string{"identity", "tree", "tree-online", "tree-full", "optimal", "blt"} {
		if !slices.Contains(run, s) {
			t.Errorf("n 2000: %s not compared", s)
		}
	}
	// ν-FTRL is slow only when its ν is searched for.
	if !strings.Contains(skipped["nu"], "give -nu") {
		t.Errorf("n 2000: nu-ftrl with a search for ν: %q", skipped["nu"])
	}
	if run, _ := comparisonSet(2000, false, false); !slices.Contains(run, "nu") {
		t.Errorf("n 2000 with -nu: nu-ftrl not compared")
	}
	if len(run)+len(skipped) != len(strategy.Names) {
		t.Errorf("n 2000: %d + %d strategies, want %d", len(run), len(skipped), len(strategy.Names))
	}
	run, skipped = comparisonSet(64, true, false)
	for _, s := range append(slow, "nu") {
		if !slices.Contains(run, s) {
			t.Errorf("n 64: %s not compared", s)
		}
	}
	for _, s := range offline {
		if !strings.Contains(skipped[s], "offline only") {
			t.Errorf("n 64: %s: %q", s, skipped[s])
		}
	}
	for _, n := range []int{64, 2000} {
		if run, skipped = comparisonSet(n, true, true); len(run) != len(strategy.Names) || len(skipped) != 0 {
			t.Errorf("n %d -all: %d run, %d skipped", n, len(run), len(skipped))
		}
	}
}

// TestMechanismDefaultSet: a default comparison ranks a strategy a run can
// use first and lists the left-out ones last with the hint; -all compares
// every strategy; -all with -strategy is a usage error.
func TestMechanismDefaultSet(t *testing.T) {
	args := []string{"-n", "32", "-participation", "kb", "-k", "2", "-b", "16", "-json", "-quiet", "-cache", t.TempDir()}
	for _, all := range []bool{false, true} {
		a := slices.Clone(args)
		if all {
			a = append(a, "-all")
		}
		code, out, errs := runMechanism(t, a...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var rows []strategy.Report
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(strategy.Names) {
			t.Fatalf("-all %v: %d rows, want %d", all, len(rows), len(strategy.Names))
		}
		left := 0
		for i, r := range rows {
			if r.Error != "" {
				left++
				if !strings.Contains(r.Error, "-all to include") || r.RunAs != "offline only" {
					t.Errorf("-all %v: row %d %s: %q (%s)", all, i, r.Mechanism, r.Error, r.RunAs)
				}
			} else if left > 0 {
				t.Errorf("-all %v: compared row %s after a left-out one", all, r.Mechanism)
			}
		}
		if want := map[bool]int{false: 3, true: 0}[all]; left != want {
			t.Errorf("-all %v: %d left out, want %d", all, left, want)
		}
		if !all && rows[0].RunAs == "offline only" {
			t.Errorf("default: first row %s is offline only", rows[0].Mechanism)
		}
	}
	if code, _, errs := runMechanism(t, "-n", "8", "-strategy", "identity", "-all"); code != 2 || !strings.Contains(errs, "-all applies only to a comparison") {
		t.Errorf("-all -strategy: exit %d, %q", code, errs)
	}
}
