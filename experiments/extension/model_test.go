package extension

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dpfl/experiments"
	"dpfl/models"
	"dpfl/results"
)

// A new model kind, added as CONTRIBUTING.md's recipe adds one: its network
// and its Kind, registered by name. linear is a linear classifier built
// by the models package's own machinery (the dense network of logreg), so
// it is models.Layered and its tensors are recorded; bare hides that (it
// wraps the model in a type that only implements models.Model) and is
// refused before training.

// linear builds the linear classifier for dim inputs and classes.
func linear(dim, classes, batch int) (models.Model, error) {
	return models.Spec{Kind: models.LogReg}.Build(dim, classes, batch)
}

// bareModel is a Model that does not list its tensors.
type bareModel struct{ models.Model }

func init() {
	models.Register(&models.Kind{
		Name: "linear", Doc: "a linear classifier (a test's kind)", Order: 100,
		Validate: func(s models.Spec, add models.Problems) {
			if len(s.Hidden) > 0 {
				add("hidden", "linear has no hidden layers")
			}
		},
		Build: func(_ models.Spec, dim, classes, batch int) (models.Model, error) { return linear(dim, classes, batch) },
	})
	models.Register(&models.Kind{
		Name: "bare", Doc: "a model that does not name its tensors (a test's kind)", Order: 101,
		Build: func(_ models.Spec, dim, classes, batch int) (models.Model, error) {
			m, err := linear(dim, classes, batch)
			return bareModel{m}, err
		},
	})
}

// TestRegisteredModel: a model kind registered from a test file is listed
// after the built-in ones (whose order is unchanged), its own validation
// and the keys it does not use are checked, its parameters are counted by
// building it, and a run with it trains two rounds and records its
// tensors.
func TestRegisteredModel(t *testing.T) {
	want := []string{"logreg", "mlp", "cnn", "cnn-large", "lstm", "layers", "linear", "bare"}
	if got := models.KindNames(nil); !slices.Equal(got, want) {
		t.Fatalf("KindNames = %v, want %v", got, want)
	}
	if n := (models.Spec{Kind: "linear"}).NumParams(blobsDim, blobsClasses); n != blobsDim*blobsClasses+blobsClasses {
		t.Errorf("NumParams = %d", n)
	}
	run := strings.Replace(blobsRun, "kind: logreg", "kind: linear", 1)
	for _, bad := range []struct{ model, msg string }{
		{"{kind: linear, hidden: [8]}", "linear has no hidden layers"},
		{"{kind: linear, embed: 8}", "only model kind lstm uses it"},
	} {
		y := strings.Replace(blobsRun, "{kind: logreg}", bad.model, 1)
		if _, _, err := experiments.Load([]byte(y), "linear.yaml"); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: %v, want %q", bad.model, err, bad.msg)
		}
	}
	cfg, _, err := experiments.Load([]byte(run), "linear.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := experiments.Run(context.Background(), cfg, experiments.Options{OutDir: t.TempDir(), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if s := out.Summary; s.Status != "complete" || s.Rounds != 2 || !(s.FinalAccuracy > 0.5) {
		t.Errorf("summary: status %q, rounds %d, accuracy %v", s.Status, s.Rounds, s.FinalAccuracy)
	}
	ts, meta, err := results.ReadSafetensors(filepath.Join(out.Dir, results.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range ts {
		names = append(names, x.Name)
	}
	if !slices.Equal(names, []string{"W0", "b0"}) || meta["model_kind"] != "linear" {
		t.Errorf("model: tensors %v, metadata %v", names, meta)
	}
}

// TestModelNotLayered: a model kind whose models do not list their tensors
// validates (nothing is built to validate), but its run is refused before
// anything is trained or written, with an error that names
// models.Layered.
func TestModelNotLayered(t *testing.T) {
	cfg, _, err := experiments.Load([]byte(strings.Replace(blobsRun, "kind: logreg", "kind: bare", 1)), "bare.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err = experiments.Run(context.Background(), cfg, experiments.Options{OutDir: dir, Workers: 1})
	if err == nil || !strings.Contains(err.Error(), "models.Layered") {
		t.Fatalf("run: %v, want an error naming models.Layered", err)
	}
	if _, err := (models.Spec{Kind: "bare"}).Build(blobsDim, blobsClasses, 1); err == nil {
		t.Error("Build accepted a model that is not Layered")
	}
	found := false
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		found = found || err == nil && d.Name() == "metrics.csv"
		return nil
	})
	if found {
		t.Error("the refused run wrote metrics.csv")
	}
}
