package experiments

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dpfl/results"

	"gopkg.in/yaml.v3"
)

// TestLayersExample trains the example layer-list configuration
// (layers-cnn.yaml, cut to 2 rounds) through the public path (LoadFile,
// Run): the run completes, learns (accuracy above chance after 2 rounds),
// writes its tensors under the layers.<i>.weight/bias names, and
// evaluating the written model scores exactly the run's final accuracy.
func TestLayersExample(t *testing.T) {
	cfg, _, err := LoadFile("layers-cnn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Rounds, cfg.Eval.Every = 2, 2
	res, err := Run(context.Background(), cfg, Options{OutDir: t.TempDir(), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Rounds != 2 || !(s.FinalAccuracy > 0.2) {
		t.Fatalf("2 rounds: %d rounds, accuracy %v", s.Rounds, s.FinalAccuracy)
	}
	ts, meta, err := results.ReadSafetensors(filepath.Join(res.Dir, results.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range ts {
		names = append(names, x.Name)
	}
	want := []string{"layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias", "layers.5.weight", "layers.5.bias", "layers.7.weight", "layers.7.bias"}
	if !slices.Equal(names, want) || !slices.Equal(ts[0].Shape, []int{8, 4, 4, 1}) || !slices.Equal(ts[4].Shape, []int{784, 32}) || meta["model_kind"] != "layers" {
		t.Fatalf("tensors %v (first %v, fifth %v), kind %s", names, ts[0].Shape, ts[4].Shape, meta["model_kind"])
	}
	ev, err := EvaluateRun(context.Background(), res.Dir, nil, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Accuracy != s.FinalAccuracy {
		t.Fatalf("evaluated %v, the run recorded %v", ev.Accuracy, s.FinalAccuracy)
	}
}

// TestLayersConfigErrors: each bad layer list is refused with one line
// naming the file, line and key; a valid list (the negative control) is
// accepted; a list that does not fit the data is refused before training,
// naming the layer and both shapes.
func TestLayersConfigErrors(t *testing.T) {
	model := func(body string) string {
		return set(t, "model:\n  kind: logreg\n", "model:\n  layers:\n"+body)
	}
	ok := "    - type: dense\n      units: 8\n    - type: relu\n    - type: dense\n    - type: xent\n"
	if _, _, err := Load([]byte(model(ok)), "c.yaml"); err != nil {
		t.Fatalf("valid list refused: %v", err)
	}
	for _, c := range []struct{ body, want string }{
		{"    - type: dense\n    - type: softmax\n", `c.yaml:10: model.layers[1].type: unknown layer type "softmax"`},
		{"    - type: dense\n      kernel: 3\n    - type: xent\n", "c.yaml:10: model.layers[0].kernel: layer type dense does not read it (it reads [units])"},
		{"    - type: dense\n    - type: relu\n", "c.yaml:10: model.layers[1].type: the last layer must be a head"},
		{"    - type: xent\n    - type: xent\n", "c.yaml:9: model.layers[0].type: xent is a head: only the last layer of the list may be one"},
		{"    - type: dropout\n      rate: 1.5\n    - type: dense\n    - type: xent\n", "c.yaml:10: model.layers[0].rate: 1.5 must be in (0, 1)"},
		{"    - type: residual\n    - type: dense\n    - type: xent\n", "c.yaml:9: model.layers[0].layers: required"},
		{"    - type: conv2d\n      filters: 4\n    - type: xent\n", "c.yaml:9: model.layers[0].kernel: required"},
		{"    - type: dense\n      units: 4\n      unit: 3\n    - type: xent\n", "c.yaml:11: model.layers[0].unit: unknown key"},
	} {
		_, _, err := Load([]byte(model(c.body)), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.body, err, c.want)
		}
	}
	// A list too large for the memory limit is refused when loaded.
	huge := model("    - type: dense\n      units: 16777216\n    - type: dense\n    - type: xent\n")
	if _, _, err := Load([]byte(huge), "c.yaml"); err == nil || !strings.Contains(err.Error(), "c.yaml:8: model.layers: the run needs an estimated") || !strings.Contains(err.Error(), "1.334e+10 model parameters") {
		t.Errorf("huge list: %v", err)
	}
	// A kind other than layers does not read layers.
	y := set(t, "model:\n  kind: logreg\n", "model:\n  kind: mlp\n  layers:\n"+ok)
	if _, _, err := Load([]byte(y), "c.yaml"); err == nil || !strings.Contains(err.Error(), "c.yaml:9: model.layers: only model kind layers uses it") {
		t.Errorf("mlp with layers: %v", err)
	}
	// Shapes: a dense layer on an image, and a head whose width is not
	// the classes'.
	for _, c := range []struct{ body, want string }{
		{"    - type: conv2d\n      filters: 2\n      kernel: 3\n    - type: dense\n    - type: xent\n",
			"experiments: model.layers[1] (dense): needs flat features, got image 26×26×2: add a flatten layer before it"},
		{"    - type: dense\n      units: 7\n    - type: xent\n",
			"experiments: model.layers[1] (xent): input has 7 features, the 10 classes need 10"},
	} {
		cfg, _, err := Load([]byte(model(c.body)), "c.yaml")
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewPlan(context.Background(), cfg, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: got %v, want %q", c.body, err, c.want)
		}
		if errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
}

// TestLayersConfigYAML: the config.yaml a run writes (the configuration
// marshaled) has no layers key for the other kinds, so theirs are byte for
// byte what they were before the key existed; a layer list is written with
// only its set keys and reads back as the same configuration (run ID).
func TestLayersConfigYAML(t *testing.T) {
	cfg, _, err := Load([]byte(validYAML), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil || bytes.Contains(b, []byte("layers")) {
		t.Fatalf("logreg config.yaml (%v):\n%s", err, b)
	}
	cfg, _, err = LoadFile("layers-cnn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if b, err = yaml.Marshal(cfg); err != nil || bytes.Contains(b, []byte("units: 0")) || !bytes.Contains(b, []byte("kind: layers")) {
		t.Fatalf("layers config.yaml (%v):\n%s", err, b)
	}
	var back Config
	if _, err := Decode(b, "config.yaml", &back); err != nil || RunID(&back, nil) != RunID(cfg, nil) {
		t.Fatalf("read back (%v): run ID %s, was %s", err, RunID(&back, nil), RunID(cfg, nil))
	}
}
