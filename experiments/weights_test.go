package experiments

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"dpfl/results"
	"dpfl/sim"
)

// smallLayersCNN is the example layer-list configuration cut to a cheap
// run: 500 clients, cohorts of 50, 2 rounds, evaluated every round.
func smallLayersCNN(t *testing.T) *Config {
	t.Helper()
	cfg, _, err := LoadFile("layers-cnn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Rounds, cfg.Eval.Every = 2, 1
	cfg.Data.Clients, cfg.Participation.Cohort = 500, 50
	return cfg
}

// TestModelInit trains 2 rounds, then starts a run from the saved model
// (model.init): its initial global model is the file's, bit for bit; the
// file's fingerprint is one of the run's inputs, so the run ID differs
// from the same configuration without model.init and changes with the
// file's content.
func TestModelInit(t *testing.T) {
	ctx := context.Background()
	cfg := smallLayersCNN(t)
	res, err := Run(ctx, cfg, Options{OutDir: t.TempDir(), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	saved, _, err := results.ReadSafetensors(filepath.Join(res.Dir, results.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "init.safetensors")
	b, err := os.ReadFile(filepath.Join(res.Dir, results.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg2 := smallLayersCNN(t)
	cfg2.Model.Init = path
	p, err := NewPlan(ctx, cfg2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := p.simSpec(Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := sim.Run(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := 0
	for _, s := range saved {
		for i, x := range s.Data {
			if math.Float32bits(sum.Init[at]) != math.Float32bits(x) {
				t.Fatalf("initial %s[%d] = %v, the file has %v", s.Name, i, sum.Init[at], x)
			}
			at++
		}
	}
	if at != len(sum.Init) {
		t.Fatalf("initial model of %d values, the file holds %d", len(sum.Init), at)
	}
	in, err := Fingerprint(cfg2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(in["model.init"], "sha256:") {
		t.Fatalf("inputs %v: no model.init fingerprint", in)
	}
	plain, err := Fingerprint(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := RunID(cfg2, in)
	if id == RunID(cfg, plain) {
		t.Fatalf("run ID %s with and without model.init", id)
	}
	b[len(b)-1] ^= 1 // another last weight
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	in2, err := Fingerprint(cfg2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if RunID(cfg2, in2) == id {
		t.Fatalf("run ID %s unchanged after the weights file changed", id)
	}
}

// TestModelInitErrors: a weights file with a missing, extra or
// mis-shaped tensor, a NaN or an infinite value, truncated, or of another
// model is refused before training with one line naming the key, the
// file and the tensor; the file as written (the negative control) is
// accepted.
func TestModelInitErrors(t *testing.T) {
	ctx := context.Background()
	cfg := smallLayersCNN(t)
	p, err := NewPlan(ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := tensorsOf(cfg, p.Data.Train.Dim, p.Data.Train.Classes)
	if err != nil {
		t.Fatal(err)
	}
	good := make([]results.Tensor, len(ts))
	for i, x := range ts {
		n := 1
		for _, d := range x.Shape {
			n *= d
		}
		good[i] = results.Tensor{Name: x.Name, Shape: x.Shape, Data: make([]float32, n)}
	}
	dir := t.TempDir()
	write := func(name string, tensors []results.Tensor) string {
		path := filepath.Join(dir, name)
		if err := results.WriteSafetensors(path, tensors, nil); err != nil {
			t.Fatal(err)
		}
		return path
	}
	with := func(i int, x results.Tensor) []results.Tensor {
		out := append([]results.Tensor(nil), good...)
		out[i] = x
		return out
	}
	nan := make([]float32, len(good[3].Data))
	nan[5] = float32(math.NaN())
	inf := make([]float32, len(good[1].Data))
	inf[0] = float32(math.Inf(1))
	truncated := write("truncated.safetensors", good)
	if b, err := os.ReadFile(truncated); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(truncated, b[:len(b)-6], 0o644); err != nil {
		t.Fatal(err)
	}
	other := []results.Tensor{{Name: "W0", Shape: []int{784, 10}, Data: make([]float32, 7840)}, {Name: "b0", Shape: []int{10}, Data: make([]float32, 10)}}
	for _, c := range []struct {
		path, want string
	}{
		{write("missing.safetensors", good[:len(good)-1]), "tensor layers.7.bias [10] of the model is missing"},
		{write("extra.safetensors", append(append([]results.Tensor(nil), good...), results.Tensor{Name: "head.weight", Shape: []int{2}, Data: []float32{1, 2}})), "tensor head.weight [2] is not one of the model's tensors"},
		{write("shape.safetensors", with(0, results.Tensor{Name: good[0].Name, Shape: []int{8, 16}, Data: good[0].Data})), "tensor layers.0.weight has shape [8 16], the model's is [8 4 4 1]"},
		{write("nan.safetensors", with(3, results.Tensor{Name: good[3].Name, Shape: good[3].Shape, Data: nan})), "tensor layers.2.bias holds NaN at index 5 of 16"},
		{write("inf.safetensors", with(1, results.Tensor{Name: good[1].Name, Shape: good[1].Shape, Data: inf})), "tensor layers.0.bias holds +Inf at index 0 of 8"},
		{truncated, "not a safetensors file"},
		{write("other.safetensors", other), "tensor layers.0.weight [8 4 4 1] of the model is missing (a file of another model?)"},
		{filepath.Join(dir, "absent.safetensors"), "no such file"},
	} {
		cfg.Model.Init = c.path
		_, err := NewPlan(ctx, cfg, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "model.init: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line with model.init and %q", filepath.Base(c.path), err, c.want)
		}
	}
	cfg.Model.Init = write("good.safetensors", good)
	if _, err := NewPlan(ctx, cfg, Options{}); err != nil {
		t.Fatalf("a file with the model's tensors refused: %v", err)
	}
}

// TestModelFreeze trains 2 rounds with the first dense layer frozen
// (model.freeze: [layers.5]): its tensors end exactly at their initial
// values while the others move; summary.json's trained_params is the
// trainable count; and the noise of every round has the trainable count's
// dimension: (noise_norm/noise_std)² is a χ² draw with that many degrees
// of freedom, within 6 standard deviations of it, while the run with
// nothing frozen (the negative control) matches the whole model's.
func TestModelFreeze(t *testing.T) {
	ctx := context.Background()
	noiseDims := func(dir string) []float64 {
		t.Helper()
		tab, err := results.ReadMetricsTable(filepath.Join(dir, "metrics.csv"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := results.ReadSummary(filepath.Join(dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		for i := range tab.Rows {
			norm, err := strconv.ParseFloat(tab.Get(i, "noise_norm"), 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, (norm/s.NoiseStd)*(norm/s.NoiseStd))
		}
		return out
	}
	check := func(dims []float64, want int) {
		t.Helper()
		tol := 6 * math.Sqrt(2*float64(want))
		for i, d := range dims {
			if math.Abs(d-float64(want)) > tol {
				t.Errorf("round %d: noise of %.0f dimensions, want %d ± %.0f", i+1, d, want, tol)
			}
		}
	}
	plain := smallLayersCNN(t)
	res0, err := Run(ctx, plain, Options{OutDir: t.TempDir(), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	const total = 136 + 2064 + 25120 + 330
	check(noiseDims(res0.Dir), total)
	if res0.Summary.TrainedParams != 0 {
		t.Fatalf("nothing frozen: trained_params %d", res0.Summary.TrainedParams)
	}

	cfg := smallLayersCNN(t)
	cfg.Model.Freeze = []string{"layers.5"}
	p, err := NewPlan(ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := p.simSpec(Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := sim.Run(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	const frozenLo, frozenHi = 136 + 2064, 136 + 2064 + 25120
	moved := 0
	for i := range sum.Params {
		same := math.Float32bits(sum.Params[i]) == math.Float32bits(sum.Init[i])
		if frozenLo <= i && i < frozenHi && !same {
			t.Fatalf("frozen parameter %d moved: %v → %v", i, sum.Init[i], sum.Params[i])
		}
		if !same {
			moved++
		}
	}
	if moved < (total-25120)/2 {
		t.Fatalf("only %d trained parameters moved", moved)
	}
	res, err := Run(ctx, cfg, Options{OutDir: t.TempDir(), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.TrainedParams != total-25120 {
		t.Fatalf("trained_params %d, want %d", res.Summary.TrainedParams, total-25120)
	}
	check(noiseDims(res.Dir), total-25120)
	if res.Summary.RunID == res0.Summary.RunID {
		t.Fatal("the same run ID with and without model.freeze")
	}
}

// TestResNetExample trains the example ResNet with group norm
// (resnet-gn.yaml, cut to 2 rounds of 50 clients) through the public path
// (LoadFile, Run): the run completes with a finite loss, writes the
// residual blocks' and shortcuts' tensors under their names and shapes,
// and evaluating the written model scores exactly the run's accuracy.
func TestResNetExample(t *testing.T) {
	cfg, _, err := LoadFile("resnet-gn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Rounds, cfg.Eval.Every, cfg.Participation.Cohort = 2, 2, 50
	res, err := Run(context.Background(), cfg, Options{OutDir: t.TempDir(), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Status != "complete" || s.Rounds != 2 || math.IsNaN(s.FinalTestLoss) || !(s.FinalAccuracy > 0) {
		t.Fatalf("2 rounds: %s after %d rounds, loss %v, accuracy %v", s.Status, s.Rounds, s.FinalTestLoss, s.FinalAccuracy)
	}
	ts, _, err := results.ReadSafetensors(filepath.Join(res.Dir, results.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string][]int{}
	for _, x := range ts {
		shapes[x.Name] = x.Shape
	}
	for name, want := range map[string][]int{
		"layers.0.weight":            {8, 3, 3, 1},
		"layers.5.layers.0.weight":   {16, 3, 3, 8},
		"layers.5.shortcut.0.weight": {16, 1, 1, 8},
		"layers.5.shortcut.1.weight": {16},
		"layers.8.weight":            {16, 10},
	} {
		if got, ok := shapes[name]; !ok || !slices.Equal(got, want) {
			t.Errorf("tensor %s: shape %v (present %v), want %v", name, got, ok, want)
		}
	}
	ev, err := EvaluateRun(context.Background(), res.Dir, nil, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Accuracy != s.FinalAccuracy {
		t.Fatalf("evaluated %v, the run recorded %v", ev.Accuracy, s.FinalAccuracy)
	}
}

// TestFreezeResume: a BandMF run with server momentum and a frozen
// tensor (model.freeze: [b0]), interrupted after round 7 and resumed,
// ends with the uninterrupted run's metrics.csv byte for byte (the
// checkpoint holds the whole model, the momentum and the noise state the
// trained coordinates'), and the frozen bias is still its initial zero.
func TestFreezeResume(t *testing.T) {
	cfg, _, err := Load([]byte(strings.Replace(resumeConfig(t.TempDir()), "  kind: logreg\n", "  kind: logreg\n  freeze: [b0]\n", 1)), "resume.yaml")
	if err != nil {
		t.Fatal(err)
	}
	full, err := Run(context.Background(), cfg, Options{OutDir: t.TempDir(), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if full.Summary.TrainedParams != 7840 {
		t.Fatalf("trained_params %d, want 7840", full.Summary.TrainedParams)
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
	if err == nil {
		t.Fatal("the interrupted run completed")
	}
	res, err := Run(context.Background(), cfg, Options{OutDir: out, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.ResumedFrom != 7 {
		t.Fatalf("resumed from round %d, want 7", res.Summary.ResumedFrom)
	}
	if got, _ := os.ReadFile(filepath.Join(res.Dir, "metrics.csv")); string(got) != string(want) {
		t.Fatalf("resumed metrics differ:\n%s\nwant\n%s", got, want)
	}
	ts, _, err := results.ReadSafetensors(filepath.Join(res.Dir, results.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ts {
		for i, v := range x.Data {
			if x.Name == "b0" && math.Float32bits(v) != 0 {
				t.Fatalf("frozen b0[%d] = %v, want its initial 0", i, v)
			}
		}
	}
}
