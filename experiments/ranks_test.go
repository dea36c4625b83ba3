package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"dpfl/datasets"
	"dpfl/sim"
)

// runOnRanks runs yml spread over n in-process ranks (sim.NewLocalComms):
// rank 0 runs it as Run does and writes the folder, the others Follow.
func runOnRanks(t *testing.T, yml string, n int, drop bool) *Outcome {
	t.Helper()
	comms := sim.NewLocalComms(n)
	if drop {
		for r := 1; r < n; r++ {
			comms[r] = dropping{comms[r]}
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 1; r < n; r++ {
		cfg, _, err := Load([]byte(yml), "test.yaml")
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = Follow(context.Background(), cfg, Options{Workers: 1, Comm: comms[r]})
		}()
	}
	cfg, _, err := Load([]byte(yml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg, Options{OutDir: t.TempDir(), Workers: 1, Comm: comms[0]})
	wg.Wait()
	errs[0] = err
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d of %d: %v", r, n, err)
		}
	}
	return res
}

// dropping is a rank whose part never reaches the sums (negative
// control).
type dropping struct{ sim.Comm }

func (d dropping) SumWords(buf []uint64) error {
	clear(buf)
	return d.Comm.SumWords(buf)
}

// folderDiff says how two run folders differ ("" when they hold the same
// files with the same bytes, summary.json's wall time and worker count
// aside).
func folderDiff(a, b *Outcome) string {
	list := func(dir string) string {
		es, err := os.ReadDir(dir)
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return strings.Join(out, " ")
	}
	if fa, fb := list(a.Dir), list(b.Dir); fa != fb {
		return "files " + fa + " and " + fb
	}
	es, _ := os.ReadDir(a.Dir)
	for _, e := range es {
		f := e.Name()
		if f == "summary.json" {
			continue // compared below
		}
		x, errA := os.ReadFile(filepath.Join(a.Dir, f))
		y, errB := os.ReadFile(filepath.Join(b.Dir, f))
		if errA != nil || errB != nil || !bytes.Equal(x, y) {
			return fmt.Sprintf("%s differs (%v, %v)", f, errA, errB)
		}
	}
	sa, sb := a.Summary, b.Summary
	sa.WallSeconds, sb.WallSeconds, sa.Workers, sb.Workers = 0, 0, 0, 0
	x, _ := json.Marshal(sa)
	y, _ := json.Marshal(sb)
	if !bytes.Equal(x, y) {
		return fmt.Sprintf("summaries differ:\n%s\n%s", x, y)
	}
	return ""
}

// TestRanksRunsMatch: a run spread over 2 and 3 ranks (each training its
// slice of every cohort; exact sums and the clients' losses exchanged)
// writes the one-process run's folder byte for byte, for every aggregator,
// adaptive clipping, DP-AGD, a server optimizer and an audit. The MPI
// build runs the same code with an MPI Comm (experiments/mpi/check.sh).
// Ranks whose parts never reach the sums (negative control) do not.
func TestRanksRunsMatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "so.sqlite")
	if _, err := datasets.WriteSyntheticTFF(context.Background(), path,
		datasets.SyntheticText{Users: 60, Sentences: 8, Words: 6, Vocab: 80, TestEvery: 3, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	uniform := "participation:\n  cohort: 7\nserver:\n  lr: 1\n"
	minsep := "participation:\n  kind: minsep\n  cohort: 7\n  k: 2\n  b: 3\nserver:\n  lr: 1\n"
	cache := "  cache: " + t.TempDir() + "\n"
	cases := []struct{ name, agg, extra string }{
		{"dpfedavg", "  kind: dpfedavg\n", uniform},
		{"tree", "  kind: tree\n", minsep},
		{"optimal-mf", "  kind: optimal-mf\n" + cache, minsep},
		{"bandmf", "  kind: bandmf\n  bands: 2\n" + cache, minsep},
		{"nu-ftrl", "  kind: nu-ftrl\n" + cache, minsep},
		{"adaptive", "  kind: dpfedavg\n  clip_quantile: 0.5\n  clip_count_stddev: 3\n", uniform},
		{"dp-agd", "  kind: dp-agd\n  gradient_share: 0.2\n  select_share: 0.1\n  step_candidates: 3\n  max_step: 1\n  loss_clip: 5\n", "participation:\n  cohort: 7\n"},
		{"fedadam", "  kind: dpfedavg\n", "participation:\n  cohort: 7\nserver:\n  optimizer: adam\n  lr: 0.01\n"},
		{"audit", "  kind: dpfedavg\n", "participation:\n  cohort: 10\nserver:\n  lr: 1\naudit:\n  canaries: 20\n  observe: rounds\n"},
	}
	for _, c := range cases {
		yml := streamRun(path, "never", c.agg, c.extra)
		one, _ := runConfig(t, yml, 2)
		if one.Summary.Rounds == 0 {
			t.Fatalf("%s: no rounds", c.name)
		}
		for _, n := range []int{2, 3} {
			if d := folderDiff(one, runOnRanks(t, yml, n, false)); d != "" {
				t.Fatalf("%s on %d ranks: %s", c.name, n, d)
			}
		}
		if folderDiff(one, runOnRanks(t, yml, 2, true)) == "" {
			t.Fatalf("%s: ranks whose second part is dropped wrote the one-process folder", c.name)
		}
	}
}
