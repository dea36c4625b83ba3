package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dpfl run reports a key typo and a missing privacy.delta together, the
// latter with the bound computed from the population.
func TestRunReportsAllConfigProblems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte(`name: c
rounds: 5
data: {dataset: mnist, clients: 836}
model: {kind: logreg}
client: {lr: 0.1}
participation: {cohort: 10}
aggregator: {clip: 1, clpi: 2}
privacy: {epsilon: 4}
server: {lr: 1}
`), 0o644)
	code, _, errs := runCLI("run", "-out", t.TempDir(), path)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d: %s", code, exitFailure, errs)
	}
	for _, want := range []string{`c.yaml:7: aggregator.clpi: unknown key "clpi"`, "c.yaml:8: privacy.delta: required for a private run (a probability in (0, 1), below 1/836 = 0.0012)"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}
