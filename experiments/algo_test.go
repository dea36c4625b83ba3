package experiments

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"dpfl/aggregators"
	"dpfl/models"
	"dpfl/results"
)

// TestExampleRunIDsStable: the example configurations that use none of
// the server-optimizer and algorithm keys (server.optimizer
// adam/yogi/adagrad, adaptive clipping, DP-AGD) keep the run IDs they had before those keys existed, so their
// finished results are still recognized.
func TestExampleRunIDsStable(t *testing.T) {
	for file, want := range map[string]string{
		"quickstart.yaml":     "dbd5a68cd9",
		"emnist-writers.yaml": "99cc97c818",
		"debian-nwp.yaml":     "31b89b5571",
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := Load(b, file)
		if err != nil {
			t.Fatal(err)
		}
		if got := RunID(cfg, nil); got != want {
			t.Errorf("%s: run ID %s, was %s", file, got, want)
		}
	}
}

// TestAdaptiveServerConfig: an adaptive optimizer gets its defaults (β₁ 0.9,
// β₂ 0.99 but none for adagrad, τ 1e-3) and builds the optimizer with them;
// sgd gets none (so its run IDs do not change); misplaced or bad keys are
// refused naming the key and line.
func TestAdaptiveServerConfig(t *testing.T) {
	cfg, _, err := Load([]byte(set(t, "server:\n  lr: 1\n", "server:\n  lr: 1\n  optimizer: yogi\n")), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sv := cfg.Server
	if sv.Beta1 == nil || *sv.Beta1 != 0.9 || sv.Beta2 == nil || *sv.Beta2 != 0.99 || sv.Tau != 1e-3 {
		t.Fatalf("yogi defaults: %+v", sv)
	}
	a, ok := cfg.serverOptimizer().(*aggregators.ServerAdaptive)
	if !ok || a.Rule != aggregators.Yogi || a.Beta1 != 0.9 || a.Beta2 != 0.99 || a.Tau != 1e-3 || a.LR != 1 {
		t.Fatalf("built %+v", cfg.serverOptimizer())
	}
	cfg, _, err = Load([]byte(set(t, "server:\n  lr: 1\n", "server:\n  lr: 1\n  optimizer: adagrad\n  beta1: 0\n")), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if *cfg.Server.Beta1 != 0 || cfg.Server.Beta2 != nil {
		t.Fatalf("adagrad: beta1 %v (given 0), beta2 %v (want none)", *cfg.Server.Beta1, cfg.Server.Beta2)
	}
	cfg, _, err = Load([]byte(validYAML), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Beta1 != nil || cfg.Server.Beta2 != nil || cfg.Server.Tau != 0 {
		t.Fatalf("sgd got adaptive defaults: %+v", cfg.Server)
	}
	if _, ok := cfg.serverOptimizer().(*aggregators.ServerSGD); !ok {
		t.Fatalf("sgd built %T", cfg.serverOptimizer())
	}
	for _, c := range []struct{ server, want string }{
		{"  beta1: 0.5\n", "c.yaml:18: server.beta1: only server.optimizer adam, yogi and adagrad use it"},
		{"  tau: 0.1\n", "c.yaml:18: server.tau: only server.optimizer adam, yogi and adagrad use it"},
		{"  optimizer: adam\n  momentum: 0.9\n", "c.yaml:19: server.momentum: adam has no heavy-ball momentum"},
		{"  optimizer: adam\n  beta2: 1\n", "c.yaml:19: server.beta2: 1 must be in [0, 1)"},
		{"  optimizer: adagrad\n  beta2: 0.9\n", "c.yaml:19: server.beta2: adagrad sums the squared updates"},
		{"  optimizer: yogi\n  tau: -1\n", "c.yaml:19: server.tau: -1 must be a positive finite number"},
		{"  optimizer: adamw\n", "c.yaml:18: server.optimizer: unknown value \"adamw\""},
	} {
		_, _, err := Load([]byte(validYAML+c.server), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.server, err, c.want)
		}
	}
}

// TestAdamResumeBitIdentical: a FedAdam run cancelled after round 7 and
// rerun finishes with the metrics of an uninterrupted run, byte for byte
// (the checkpoint carries Adam's m and v).
func TestAdamResumeBitIdentical(t *testing.T) {
	t.Parallel()
	yml := strings.Replace(resumeConfig(t.TempDir()), "server:\n  lr: 0.5\n  momentum: 0.9\n", "server:\n  optimizer: adam\n  lr: 0.01\n", 1)
	cfg, _, err := Load([]byte(yml), "adam.yaml")
	if err != nil {
		t.Fatal(err)
	}
	full, err := Run(context.Background(), cfg, Options{OutDir: t.TempDir(), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(full.Dir, "metrics.csv"))
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	_, err = Run(ctx, cfg, Options{OutDir: out, Workers: 2, AfterRound: func(rep RoundReport) {
		if rep.Round == 7 {
			cancel()
		}
	}})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	res, err := Run(context.Background(), cfg, Options{OutDir: out, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(res.Dir, "metrics.csv"))
	if res.Summary.ResumedFrom != 7 || !bytes.Equal(got, want) {
		t.Fatalf("resumed from %d; metrics\n%s\nwant\n%s", res.Summary.ResumedFrom, got, want)
	}
}

// TestModelFileRoundTrip: a completed run writes model.safetensors whose
// tensors are the model's, by name and shape; evaluating the file scores
// exactly the run's final accuracy and loss (the same parameters, bit for
// bit, through the same evaluation, on the test rows the run's validation
// share left); decoding and re-encoding it gives the
// same bytes; a model of another kind is refused naming the tensor, and a
// perturbed parameter (negative control) changes the loss.
func TestModelFileRoundTrip(t *testing.T) {
	t.Parallel()
	yml := strings.Replace(mnistRun("  noise_multiplier: 0\n"), "rounds: 20", "rounds: 5", 1)
	yml = strings.Replace(yml, "eval:\n  every: 5\n", "eval:\n  every: 5\n  validation: 0.2\n", 1) // test accuracy on the other 8,000
	res, dir := runConfig(t, yml, 2)
	path := filepath.Join(dir, results.ModelFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ts, meta, err := results.DecodeSafetensors(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Name != "W0" || !slices.Equal(ts[0].Shape, []int{784, 10}) || ts[1].Name != "b0" || meta["run_id"] != res.Summary.RunID {
		t.Fatalf("tensors %v %v, metadata %v", ts[0].Shape, ts[1].Shape, meta)
	}
	again, _ := results.EncodeSafetensors(ts, meta)
	if !bytes.Equal(again, raw) {
		t.Fatal("re-encoding the decoded model changed its bytes")
	}
	ev, err := EvaluateRun(context.Background(), dir, nil, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Accuracy != res.Summary.FinalAccuracy || ev.Loss != res.Summary.FinalTestLoss || ev.Examples != 8000 {
		t.Fatalf("evaluated %v / %v on %d, the run recorded %v / %v", ev.Accuracy, ev.Loss, ev.Examples, res.Summary.FinalAccuracy, res.Summary.FinalTestLoss)
	}
	// Another model's configuration does not fit the file.
	cfg := *ev.Config
	cfg.Model.Kind, cfg.Model.Hidden = "mlp", []int{8}
	if _, _, _, err := openModel(path, &cfg, res.Summary.RunID, 5); err == nil || !strings.Contains(err.Error(), `a "logreg" model, the run's config.yaml has model.kind mlp`) {
		t.Fatalf("mlp config accepted the logreg file: %v", err)
	}
	meta["model_kind"] = "mlp"
	mlpFile := filepath.Join(t.TempDir(), results.ModelFile)
	if err := results.WriteSafetensors(mlpFile, ts, meta); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := openModel(mlpFile, &cfg, res.Summary.RunID, 5); err == nil || !strings.Contains(err.Error(), "tensor 0 is W0 [784 10], model mlp for 784 inputs and 10 classes has W0 [784 8]") {
		t.Fatalf("mlp config accepted the logreg tensors: %v", err)
	}
	meta["model_kind"] = "logreg"
	// Negative control: one weight changed, the loss changes.
	ts[1].Data[0] += 1
	b, _ := results.EncodeSafetensors(ts, meta)
	if err := results.WriteFileAtomic(path, b); err != nil {
		t.Fatal(err)
	}
	ev2, err := EvaluateRun(context.Background(), dir, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ev2.Loss == ev.Loss {
		t.Fatal("a perturbed model evaluates the same")
	}
}

// TestModelFileForgedSizes: a model file whose metadata is the run's but
// whose sizes are not (an LSTM's sequence length of 150,000, which the
// tensors do not show) is refused from the header, before a model of that
// size is built to compare tensors with.
func TestModelFileForgedSizes(t *testing.T) {
	cfg := &Config{Name: "t", Model: models.Spec{Kind: "lstm"}}
	want, err := modelTensors(cfg, 80, 1004)
	if err != nil {
		t.Fatal(err)
	}
	var ts []results.Tensor
	total := 0
	for _, w := range want {
		n := 1
		for _, d := range w.Shape {
			n *= d
		}
		total += n
		ts = append(ts, results.Tensor{Name: w.Name, Shape: w.Shape, Data: make([]float32, n)})
	}
	meta := map[string]string{"run_id": "0123456789", "name": "t", "model_kind": "lstm", "rounds": "3", "input_dim": "80", "classes": "1004"}
	path := filepath.Join(t.TempDir(), results.ModelFile)
	if err := results.WriteSafetensors(path, ts, meta); err != nil {
		t.Fatal(err)
	}
	st, _, _, err := openModel(path, cfg, "0123456789", 3)
	if err != nil {
		t.Fatalf("the file as written: %v", err)
	}
	st.Close()
	if total < 150000 {
		t.Fatalf("%d parameters: the forged length below must be within them", total)
	}
	meta["input_dim"] = "150000"
	if err := results.WriteSafetensors(path, ts, meta); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := openModel(path, cfg, "0123456789", 3); err == nil || !strings.Contains(err.Error(), "metadata input_dim 150000 and classes 1004: model lstm would take") {
		t.Fatalf("a sequence length of 150,000: %v", err)
	}
	meta["input_dim"] = strconv.Itoa(total + 1)
	if err := results.WriteSafetensors(path, ts, meta); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := openModel(path, cfg, "0123456789", 3); err == nil || !strings.Contains(err.Error(), "is not a size for") {
		t.Fatalf("an input_dim above the parameter count: %v", err)
	}
}
