package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dpfl/experiments"
)

func TestGridUsageAndDryRun(t *testing.T) {
	if code, _, errs := runCLI("grid", "-h"); code != exitOK || !strings.Contains(errs, "-shard") || !strings.Contains(errs, "-dry-run") {
		t.Fatalf("grid -h: exit %d, %q", code, errs)
	}
	if code, _, _ := runCLI("grid"); code != exitUsage {
		t.Fatalf("grid without a file: exit %d", code)
	}
	if code, _, errs := runCLI("grid", "-shard", "2/2", "x.yaml"); code != exitUsage || !strings.Contains(errs, "0 <= i < n") {
		t.Fatalf("bad shard: exit %d, %q", code, errs)
	}
	bad := filepath.Join(t.TempDir(), "g.yaml")
	os.WriteFile(bad, []byte("name: g\nrounds: 5\ngrid:\n  privacy.epsilonn: [1]\n"), 0o644)
	if code, _, errs := runCLI("grid", bad); code != exitFailure || !strings.Contains(errs, "g.yaml:4: grid.privacy.epsilonn: unknown key") {
		t.Fatalf("bad grid: exit %d, %q", code, errs)
	}
	// The dry run plans every point (no data loaded, no training) and lists
	// sigma, epsilon with its accountant and delta, and the mechanisms to
	// optimize.
	code, out, errs := runCLI("grid", "-dry-run", "-out", t.TempDir(), "../../experiments/testdata/grid.yaml")
	if code != exitOK {
		t.Fatalf("dry run: exit %d, %s", code, errs)
	}
	for _, want := range []string{"12 points", "dpfedavg  1  0.5  0.9", "bandmf  8  1.0  0", "mechanisms", "tree-online n=20 for kb(k=2,b=10)", "accountant, delta", "exact-gdp, δ = 1e-05"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if lines := strings.Count(out, " todo "); lines != 12 {
		t.Errorf("%d points listed as todo, want 12", lines)
	}
	// Shard 1/3 lists a third of the points.
	_, out, _ = runCLI("grid", "-dry-run", "-shard", "1/3", "-out", t.TempDir(), "../../experiments/testdata/grid.yaml")
	if lines := strings.Count(out, " todo "); lines != 4 {
		t.Errorf("shard 1/3 lists %d points, want 4:\n%s", lines, out)
	}
}

func TestPlotErrors(t *testing.T) {
	if code, _, errs := runCLI("plot", t.TempDir()); code != exitFailure || !strings.Contains(errs, "index.csv") {
		t.Fatalf("plot of an empty folder: exit %d, %q", code, errs)
	}
	if code, _, _ := runCLI("plot", "-o", "fig.gif", t.TempDir()); code != exitUsage {
		t.Fatalf("plot -o gif: exit %d", code)
	}
}

// A point stopped before it saved a checkpoint is not reported as having
// saved one; one whose folder holds a checkpoint is.
func TestGridStoppedSaysCheckpointOnlyWhenSaved(t *testing.T) {
	g, err := experiments.LoadGrid("../../experiments/testdata/grid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var w strings.Builder
	d := newGridDisplay(&w, g, g.Points, out)
	p, q := g.Points[0], g.Points[1]
	os.MkdirAll(filepath.Join(out, q.Dir()), 0o755)
	os.WriteFile(filepath.Join(out, q.Dir(), experiments.CheckpointFile), []byte("x"), 0o644)
	d.Done(p, nil, context.Canceled)
	d.Done(q, nil, context.Canceled)
	lines := strings.Split(strings.TrimSpace(w.String()), "\n")
	if len(lines) != 2 || strings.Contains(lines[0], "checkpoint saved") || !strings.Contains(lines[1], "checkpoint saved") {
		t.Errorf("stopped points reported as:\n%s\nwant only the second (with a checkpoint) to say checkpoint saved", w.String())
	}
}

// TestGridShardFigures: the first shard of a grid whose one point has two
// seeds finishes with no point whole, so it writes no figures and says
// so, and exits 0 (its runs succeeded); the second shard completes the
// point and draws it.
func TestGridShardFigures(t *testing.T) {
	dir := t.TempDir()
	grid := writeTwoSeedGrid(t, dir)
	out := filepath.Join(dir, "out")
	code, stdout, errs := runCLI("grid", "-out", out, "-quiet", "-shard", "0/2", grid)
	if code != exitOK || !strings.Contains(stdout, "no figures yet: no point has finished all its runs yet: dpfedavg without noise (1 of 2 runs finished)") {
		t.Fatalf("shard 0/2: exit %d\n%s\n%s", code, stdout, errs)
	}
	if _, err := os.Stat(filepath.Join(out, "best.csv")); !os.IsNotExist(err) {
		t.Errorf("shard 0/2 wrote best.csv (%v)", err)
	}
	code, stdout, errs = runCLI("grid", "-out", out, "-quiet", "-shard", "1/2", grid)
	if code != exitOK || !strings.Contains(stdout, "figures: ") {
		t.Fatalf("shard 1/2: exit %d\n%s\n%s", code, stdout, errs)
	}
}
