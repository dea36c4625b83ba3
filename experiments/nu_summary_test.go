package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dpfl/aggregators/strategy"
	"dpfl/datasets"
	"dpfl/results"
)

// TestNuInSummary: a nu-ftrl run's summary carries its ν, the tuned one
// when aggregator.nu is not set (strategy.TuneNu for the rounds) and the
// given one otherwise; other kinds carry none. The normalized config.yaml
// keeps nu: null (the run ID is the configuration's hash).
func TestNuInSummary(t *testing.T) {
	part := "  kind: minsep\n  cohort: 50\n  k: 2\n  b: 10\n"
	tuned := planOf(t, aggRun(30, part, "  kind: nu-ftrl\n")).Summary()
	if want := strategy.TuneNu(30, 0.0005); tuned.Nu == nil || *tuned.Nu != want {
		t.Fatalf("tuned ν in the summary: %v, want %v", tuned.Nu, want)
	}
	given := planOf(t, aggRun(30, part, "  kind: nu-ftrl\n  nu: 0.05\n")).Summary()
	if given.Nu == nil || *given.Nu != 0.05 {
		t.Fatalf("given ν in the summary: %v", given.Nu)
	}
	if s := planOf(t, aggRun(30, part, "  kind: bandmf\n")).Summary(); s.Nu != nil {
		t.Fatalf("bandmf summary has ν %v", *s.Nu)
	}
}

// committedRun is a run committed under results/paper.
type committedRun struct {
	config  string // its config.yaml
	cfg     *Config
	summary *results.Summary
}

// committedRuns loads every committed run's config.yaml and summary.json.
func committedRuns(t *testing.T) []committedRun {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "results", "paper", "*", "*", "config.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no committed runs (%v)", err)
	}
	var out []committedRun
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := Load(b, "config.yaml")
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		s, err := results.ReadSummary(filepath.Join(filepath.Dir(f), "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, committedRun{f, cfg, s})
	}
	return out
}

// TestCommittedRunIDs: every committed run under results/paper still has
// the run ID its folder is named by (the configuration's hash did not change
// with this version's keys).
func TestCommittedRunIDs(t *testing.T) {
	for _, r := range committedRuns(t) {
		dir := filepath.Base(filepath.Dir(r.config))
		if id := RunID(r.cfg, r.summary.Inputs); !strings.HasSuffix(dir, "-"+id) {
			t.Errorf("%s: run ID now %s", r.config, id)
		}
	}
}

// TestCommittedPinnedFingerprint: every committed run that read the pinned
// Debian corpus recorded datasets.PinnedFingerprint (hashed from the files on
// the machines that ran them), and on a machine holding the pinned
// changelogs, some newer, such a run's inputs fingerprint to it again.
func TestCommittedPinnedFingerprint(t *testing.T) {
	var pinned []*Config
	for _, r := range committedRuns(t) {
		if r.cfg.Data.Dataset != "debian" || r.cfg.Data.Changelogs != datasets.DebianPinned {
			continue
		}
		if got := r.summary.Inputs["data.changelogs"]; got != datasets.PinnedFingerprint {
			t.Errorf("%s: data.changelogs %s, want %s", r.config, got, datasets.PinnedFingerprint)
		}
		pinned = append(pinned, r.cfg)
	}
	if len(pinned) < 100 {
		t.Fatalf("%d committed runs read the pinned corpus, expected the 168 of the two Debian reproductions", len(pinned))
	}
	pc, err := datasets.DebianPinnedFiles()
	if err != nil || !pc.Complete() {
		t.Skipf("this machine lacks the pinned changelogs (%v): the committed fingerprints are checked, not this machine's", err)
	}
	in, err := Fingerprint(pinned[0], Options{})
	if err != nil || in["data.changelogs"] != datasets.PinnedFingerprint {
		t.Fatalf("this machine (%s): %v %v", pc.Report(), in, err)
	}
}
