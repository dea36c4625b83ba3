package experiments

import (
	"bytes"
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dpfl/results"
)

// mnistRun is a short run on real MNIST: 6,000 clients of 10 images, a
// logistic-regression model, 20 rounds.
func mnistRun(privacyBlock string) string {
	return `name: e2e
seed: 11
rounds: 20
data:
  dataset: mnist
  clients: 6000
model:
  kind: logreg
client:
  batch_size: 5
  lr: 0.2
participation:
  cohort: 500
aggregator:
  clip: 1
` + privacyBlock + `server:
  lr: 0.5
  momentum: 0.9
eval:
  every: 5
`
}

func runConfig(t *testing.T, yml string, workers int) (*Outcome, string) {
	t.Helper()
	cfg, _, err := Load([]byte(yml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	res, err := Run(context.Background(), cfg, Options{OutDir: out, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	return res, res.Dir
}

func readMetrics(t *testing.T, dir string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestNonPrivateMNIST: without noise, federated logistic regression on real
// MNIST reaches at least 0.85 test accuracy in 20 rounds.
func TestNonPrivateMNIST(t *testing.T) {
	res, dir := runConfig(t, mnistRun("  noise_multiplier: 0\n"), 2)
	if acc := res.Summary.FinalAccuracy; acc < 0.85 {
		t.Fatalf("non-private final accuracy %.4f < 0.85", acc)
	}
	if res.Summary.Epsilon != nil {
		t.Fatalf("non-private run reports epsilon %v", *res.Summary.Epsilon)
	}
	for _, f := range []string{"config.yaml", "metrics.csv", "summary.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	rows := readMetrics(t, dir)
	if got := strings.Join(rows[0], ","); got != strings.Join(results.MetricsHeader, ",") {
		t.Fatalf("metrics header %q", got)
	}
	// Every row names its run and seed; without noise, epsilon is +Inf
	// with no accountant, delta, adjacency or scope.
	for _, r := range rows[1:] {
		if want := filepath.Base(dir); !strings.HasSuffix(want, "-"+r[0]) || r[1] != "11" || r[6] != "+Inf" || strings.Join(r[7:11], "") != "" {
			t.Fatalf("metrics row %v of run folder %s", r, want)
		}
	}
	if len(rows) != 1+4 { // rounds 5, 10, 15, 20
		t.Fatalf("%d metrics rows, want 4", len(rows)-1)
	}
}

// TestPrivateMNISTEpsilon: with the noise calibrated for epsilon 2 (zCDP
// accounting) the model still learns well above chance (0.1), and the
// reported epsilon equals the closed form rho + 2 sqrt(rho log(1/delta)) with
// rho = k / (2 (noise_std/clip)^2) for the most participations k of any client
// (rounds composed for that client), to 1e-9 relative.
func TestPrivateMNISTEpsilon(t *testing.T) {
	res, dir := runConfig(t, mnistRun("privacy:\n  epsilon: 2\n  delta: 1.0e-5\n  accountant: zcdp\n"), 2)
	s := res.Summary
	if s.FinalAccuracy < 0.5 {
		t.Fatalf("private final accuracy %.4f: not learning", s.FinalAccuracy)
	}
	if s.Epsilon == nil || s.EpsilonMethod != "zcdp" {
		t.Fatalf("epsilon %v method %q", s.Epsilon, s.EpsilonMethod)
	}
	k := float64(s.MaxParticipations)
	z := s.NoiseStd / 1.0 // clip = 1
	rho := k / (2 * z * z)
	want := rho + 2*math.Sqrt(rho*math.Log(1/s.Delta))
	if math.Abs(*s.Epsilon-want) > 1e-9*want {
		t.Fatalf("reported epsilon %.12g, closed form %.12g", *s.Epsilon, want)
	}
	// Calibration: the target is met, and not by a wide margin.
	if *s.Epsilon > 2 || *s.Epsilon < 2*(1-1e-4) {
		t.Fatalf("calibrated epsilon %.6g for a target of 2", *s.Epsilon)
	}
	// epsilon so far is non-decreasing and ends at the reported value; its
	// column names the accountant and delta.
	rows := readMetrics(t, dir)
	if rows[0][6] != "epsilon" {
		t.Fatalf("epsilon column %q", rows[0][6])
	}
	for _, r := range rows[1:] {
		if got := strings.Join(r[7:11], ","); got != "zcdp,1e-05,zero-out,through_round" {
			t.Fatalf("epsilon's accountant, delta, adjacency and scope %q, want zcdp, 1e-05, zero-out, through_round", got)
		}
	}
	prev := 0.0
	for _, r := range rows[1:] {
		e, err := strconv.ParseFloat(r[6], 64)
		if err != nil {
			t.Fatal(err)
		}
		if e < prev {
			t.Fatalf("epsilon decreased: %v after %v", e, prev)
		}
		prev = e
	}
	if math.Abs(prev-*s.Epsilon) > 1e-12 {
		t.Fatalf("last metrics epsilon %v, summary %v", prev, *s.Epsilon)
	}
}

// TestDeterministicAcrossWorkers: the same config gives byte-identical
// metrics.csv whatever the worker count.
func TestDeterministicAcrossWorkers(t *testing.T) {
	t.Parallel()
	yml := strings.Replace(mnistRun("privacy:\n  epsilon: 8\n  delta: 1.0e-5\n"), "rounds: 20", "rounds: 6", 1)
	yml = strings.Replace(yml, "every: 5", "every: 2", 1)
	var first []byte
	for _, w := range []int{1, 2, 3} {
		_, dir := runConfig(t, yml, w)
		b, err := os.ReadFile(filepath.Join(dir, "metrics.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
			continue
		}
		if !bytes.Equal(first, b) {
			t.Fatalf("metrics.csv differs between 1 and %d workers:\n%s\nvs\n%s", w, first, b)
		}
	}
	// Negative control: another seed changes the numbers.
	_, dir := runConfig(t, strings.Replace(yml, "seed: 11", "seed: 12", 1), 2)
	b, _ := os.ReadFile(filepath.Join(dir, "metrics.csv"))
	if bytes.Equal(first, b) {
		t.Fatal("a different seed gave identical metrics")
	}
}

// TestValidationSplit: eval.validation holds out a share of the test set:
// the run reports its accuracy there (final_val_accuracy, in index.csv
// too) and its test accuracy on the rest only; without it the summary has
// no validation accuracy and the test accuracy is the whole set's; the
// split changes nothing else (same training, same epsilon).
func TestValidationSplit(t *testing.T) {
	t.Parallel()
	priv := "  noise_multiplier: 0\n"
	plain, _ := runConfig(t, mnistRun(priv), 2)
	y := strings.Replace(mnistRun(priv), "eval:\n  every: 5\n", "eval:\n  every: 5\n  validation: 0.5\n", 1)
	val, _ := runConfig(t, y, 2)
	again, _ := runConfig(t, y, 1)
	ps, vs := plain.Summary, val.Summary
	if ps.FinalValAccuracy != nil || vs.FinalValAccuracy == nil {
		t.Fatalf("final_val_accuracy %v without and %v with eval.validation", ps.FinalValAccuracy, vs.FinalValAccuracy)
	}
	if *again.Summary.FinalValAccuracy != *vs.FinalValAccuracy || again.Summary.FinalAccuracy != vs.FinalAccuracy {
		t.Fatal("the validation split depends on the worker count")
	}
	// The two halves' accuracies average (the halves are equal in size, up
	// to one row of MNIST's 10,000) to the whole set's: the same model.
	whole := (vs.FinalAccuracy + *vs.FinalValAccuracy) / 2
	if math.Abs(whole-ps.FinalAccuracy) > 2e-4 || vs.FinalAccuracy == ps.FinalAccuracy {
		t.Fatalf("test %.4f and validation %.4f halves, whole set %.4f", vs.FinalAccuracy, *vs.FinalValAccuracy, ps.FinalAccuracy)
	}
	if _, _, err := Load([]byte(strings.Replace(y, "validation: 0.5", "validation: 1", 1)), "v.yaml"); err == nil || !strings.Contains(err.Error(), "eval.validation: 1 must be in [0, 1)") {
		t.Fatalf("validation 1: %v", err)
	}
}
