package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tinyConfig = `name: tiny
seed: 1
rounds: 2
data: {dataset: mnist, clients: 100}
model: {kind: logreg}
client: {lr: 0.1}
participation: {cohort: 10}
aggregator: {clip: 1, noise_multiplier: 0}
server: {lr: 1}
`

// writeTwoSeedGrid writes dir/g.yaml: tinyConfig over seeds 1 and 2 (one
// plotted point, two runs) and returns its path.
func writeTwoSeedGrid(t *testing.T, dir string) string {
	t.Helper()
	grid := filepath.Join(dir, "g.yaml")
	if err := os.WriteFile(grid, []byte(tinyConfig+"grid:\n  seed: [1, 2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return grid
}

// TestRunFlagsAfterConfig: dpfl run takes its flags after CONFIG.yaml, as
// every other subcommand does; two configs are a usage error.
func TestRunFlagsAfterConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(cfg, []byte(tinyConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, errs := runCLI("run", cfg, "-out", out, "-quiet", "-workers", "1")
	if code != exitOK || !strings.Contains(stdout, "run tiny complete") || !strings.Contains(stdout, "results: "+out) {
		t.Fatalf("run CONFIG -out DIR: exit %d\n%s\n%s", code, stdout, errs)
	}
	if code, _, errs := runCLI("run", cfg, cfg); code != exitUsage || !strings.Contains(errs, "want exactly one CONFIG.yaml argument, got 2") {
		t.Errorf("two configs: exit %d, %q", code, errs)
	}
	if code, _, errs := runCLI("run", cfg, "-max-memory", "-1"); code != exitUsage || !strings.Contains(errs, "-max-memory -1 must be a positive number") {
		t.Errorf("-max-memory -1: exit %d, %q", code, errs)
	}
	// The memory limit is the user's: the same config is refused under a
	// limit below its estimate, naming the largest part's key.
	code, _, errs = runCLI("run", cfg, "-out", out, "-max-memory", "0.001")
	if code != exitFailure || !strings.Contains(errs, "tiny.yaml:4: data.dataset: the run needs an estimated 0.3 GB of memory, above the limit of 0.001 GB") {
		t.Errorf("-max-memory 0.001: exit %d, %q", code, errs)
	}
	// A size that cannot fit is refused before anything is allocated.
	huge := filepath.Join(dir, "huge.yaml")
	os.WriteFile(huge, []byte(strings.Replace(tinyConfig, "rounds: 2", "rounds: 1000000000000", 1)), 0o644)
	if code, _, errs := runCLI("run", huge, "-out", out); code != exitFailure || !strings.Contains(errs, "huge.yaml:3: rounds: the run needs an estimated") {
		t.Errorf("rounds 1e12: exit %d, %q", code, errs)
	}
}

// TestGridShardStrict: -shard takes exactly i/n.
func TestGridShardStrict(t *testing.T) {
	for _, s := range []string{"1/2/3", "1/2abc", "1 /2", "-1/2"} {
		if code, _, errs := runCLI("grid", "-dry-run", "-shard", s, "../../experiments/testdata/grid.yaml"); code != exitUsage || !strings.Contains(errs, "want i/n, two decimal integers") {
			t.Errorf("-shard %q: exit %d, %q", s, code, errs)
		}
	}
}
