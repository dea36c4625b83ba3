package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinyRun trains a 4-round run on a little MNIST at client learning rate lr
// and noise multiplier sigma, and returns the run folder and dpfl run's stderr.
func tinyRun(t *testing.T, lr, sigma string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := `name: tiny
seed: 1
rounds: 4
data: {dataset: mnist, clients: 200}
model: {kind: logreg}
client: {batch_size: 10, lr: ` + lr + `}
participation: {kind: uniform, cohort: 20}
aggregator: {kind: dpfedavg, clip: 1, noise_multiplier: ` + sigma + `}
privacy: {delta: 1.0e-4}
server: {lr: 1}
eval: {every: 1}
`
	path := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI("run", "-quiet", "-out", filepath.Join(dir, "out"), path)
	if code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "out", "tiny-*"))
	if len(m) != 1 {
		t.Fatalf("run folders: %v", m)
	}
	return m[0], errs
}

// dpfl plot RUN_DIR on a run without canaries draws its learning curve, ε
// and participation figures as PNG and PDF and lists them; a run whose
// learning rate keeps it at chance gets a warning, a run that learns none.
func TestPlotRunDirAndStuckWarning(t *testing.T) {
	run, errs := tinyRun(t, "0.1", "0.5")
	if strings.Contains(errs, "warning") {
		t.Errorf("a run that learns was warned about: %q", errs)
	}
	code, out, errs := runCLI("plot", run)
	if code != exitOK {
		t.Fatalf("plot: exit %d: %s", code, errs)
	}
	for _, f := range []string{"run_learning_curve", "run_epsilon", "run_participation"} {
		for _, ext := range []string{".png", ".pdf"} {
			p := filepath.Join(run, f+ext)
			if !strings.Contains(out, p) {
				t.Errorf("output %q does not list %s", out, p)
			}
			if st, err := os.Stat(p); err != nil || st.Size() == 0 {
				t.Errorf("%s: %v", p, err)
			}
		}
	}
	_, errs = tinyRun(t, "1e-12", "0")
	if !strings.Contains(errs, "warning: test accuracy never rose above its first evaluation") {
		t.Errorf("a run at chance: no warning in %q", errs)
	}
}
