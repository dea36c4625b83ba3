package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"dpfl/datasets"
	"dpfl/models"
	"dpfl/results"
	"dpfl/sim"
	"dpfl/sim/rng"
)

// modelTensors returns the parameter tensors of the configured model for the
// data's inputs.
func modelTensors(cfg *Config, dim, classes int) ([]models.Tensor, error) {
	m, err := cfg.Model.Build(dim, classes, 1)
	var le *models.LayerError
	if errors.As(err, &le) { // a layer that does not fit the data
		return nil, fmt.Errorf("experiments: model.%v (the data: %d inputs, %d classes)", le, dim, classes)
	}
	if err != nil {
		return nil, err
	}
	l, ok := m.(models.Layered)
	if !ok {
		return nil, fmt.Errorf("experiments: model %s does not name its tensors", cfg.Model.Kind)
	}
	return l.Tensors(), nil
}

// writeModel writes the run's final global model as model.safetensors: one
// float32 tensor per parameter tensor of the model, named by layer (see
// models.Layered), with the run's identity in the metadata.
func (p *Plan) writeModel(path, runID string, sum sim.Summary) error {
	cfg, train := p.Config, p.Data.Train
	ts, err := modelTensors(cfg, train.Dim, train.Classes)
	if err != nil {
		return err
	}
	out := make([]results.Tensor, len(ts))
	for i, t := range ts {
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		out[i] = results.Tensor{Name: t.Name, Shape: t.Shape, Data: sum.Params[t.Offset : t.Offset+n]}
	}
	meta := map[string]string{
		"format":     "dpfl",
		"run_id":     runID,
		"name":       cfg.Name,
		"model_kind": cfg.Model.Kind,
		"input_dim":  strconv.Itoa(train.Dim),
		"classes":    strconv.Itoa(train.Classes),
		"rounds":     strconv.Itoa(sum.Rounds),
	}
	return results.WriteSafetensors(path, out, meta)
}

// ModelEval is the evaluation of a saved model (EvaluateRun).
type ModelEval struct {
	Config   *Config // the run's configuration (its data section replaced when another was given)
	Loss     float64 // mean test loss
	Accuracy float64 // test accuracy (see EvalConfig for what is counted)
	Examples int     // rows of the test set
	Summary  *results.Summary
}

// checkRegular refuses a path that is not a regular file (a FIFO would block
// its reader, a device never end), without blocking on it.
func checkRegular(path string) error {
	f, _, err := results.OpenRegular(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// maxCheckActivation bounds the memory of one example's activations in
// the model openModel builds from a file's metadata (a real run's take
// kilobytes to a few megabytes).
const maxCheckActivation = 1 << 30

// openModel opens the model file of the run runID of cfg, after rounds
// rounds, and checks its header against them before any tensor's values
// are read: the metadata's run ID, model kind, name and rounds, and the
// tensors' names and shapes, which must be those of cfg's model for the
// input dimension and classes the metadata gives (returned). The values
// are not read (Safetensors.Read); close the file after use.
func openModel(path string, cfg *Config, runID string, rounds int) (st *results.Safetensors, dim, classes int, err error) {
	st, err = results.OpenSafetensors(path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer func() {
		if err != nil {
			st.Close()
			st = nil
			err = fmt.Errorf("%s: %w", path, err)
		}
	}()
	m := st.Meta
	switch {
	case m["run_id"] != runID:
		return st, 0, 0, fmt.Errorf("the model of run %q, not of this folder's run %s", m["run_id"], runID)
	case m["model_kind"] != cfg.Model.Kind:
		return st, 0, 0, fmt.Errorf("a %q model, the run's config.yaml has model.kind %s", m["model_kind"], cfg.Model.Kind)
	case m["name"] != cfg.Name:
		return st, 0, 0, fmt.Errorf("the model of a run named %q, the run's config.yaml names it %s", m["name"], cfg.Name)
	case m["rounds"] != strconv.Itoa(rounds):
		return st, 0, 0, fmt.Errorf("the model after %q rounds, summary.json says %d", m["rounds"], rounds)
	}
	total := 0
	for _, t := range st.Tensors {
		total += t.Len()
	}
	// Every model has at least as many parameters as inputs and classes
	// (a dense or embedding layer per input or class, or the LSTM's
	// sequence length, far below): a larger value is no model's, and is
	// refused before a model is built for it.
	meta := func(key string) (int, error) {
		v, err := strconv.Atoi(m[key])
		if err != nil || v < 1 || v > total {
			return 0, fmt.Errorf("metadata %s %q is not a size for %d parameters", key, m[key], total)
		}
		return v, nil
	}
	if dim, err = meta("input_dim"); err != nil {
		return st, 0, 0, err
	}
	if classes, err = meta("classes"); err != nil {
		return st, 0, 0, err
	}
	// The model for the metadata's sizes (built to compare its tensors)
	// has no more parameters than the file, and sizes no run has are
	// refused: one example's activations (an LSTM's grow with the sequence
	// length, which its tensors do not show) must fit in
	// maxCheckActivation.
	if n := cfg.Model.NumParams(dim, classes); n > total || n <= 0 {
		return st, 0, 0, fmt.Errorf("%d parameters, model %s for %d inputs and %d classes has %d", total, cfg.Model.Kind, dim, classes, n)
	}
	if a := cfg.Model.Estimate(float64(dim), float64(classes)).ActivationBytes; a > maxCheckActivation {
		return st, 0, 0, fmt.Errorf("metadata input_dim %d and classes %d: model %s would take %.3g bytes per example", dim, classes, cfg.Model.Kind, a)
	}
	if err := checkTensors(cfg, dim, classes, st.Tensors); err != nil {
		return st, 0, 0, err
	}
	return st, dim, classes, nil
}

// tensorLists memoizes the tensor lists checkTensors compares with, by
// model and sizes: a grid checks every point's model file each time it
// rewrites its index, and building a model takes milliseconds.
var tensorLists sync.Map // string -> []models.Tensor

// tensorsOf is modelTensors, memoized in tensorLists.
func tensorsOf(cfg *Config, dim, classes int) ([]models.Tensor, error) {
	key := fmt.Sprintf("%#v %d %d", cfg.Model, dim, classes)
	if v, ok := tensorLists.Load(key); ok {
		return v.([]models.Tensor), nil
	}
	ts, err := modelTensors(cfg, dim, classes)
	if err != nil {
		return nil, err
	}
	tensorLists.Store(key, ts)
	return ts, nil
}

// checkTensors checks that the tensors are those of cfg's model for dim
// inputs and classes, by name, order and shape.
func checkTensors(cfg *Config, dim, classes int, ts []results.TensorInfo) error {
	want, err := tensorsOf(cfg, dim, classes)
	if err != nil {
		return err
	}
	for i, w := range want {
		if i == len(ts) {
			return fmt.Errorf("%d tensors, model %s has %d (%s %v missing)", len(ts), cfg.Model.Kind, len(want), w.Name, w.Shape)
		}
		if s := ts[i]; s.Name != w.Name || !slices.Equal(s.Shape, w.Shape) {
			return fmt.Errorf("tensor %d is %s %v, model %s for %d inputs and %d classes has %s %v", i, s.Name, s.Shape, cfg.Model.Kind, dim, classes, w.Name, w.Shape)
		}
	}
	if len(ts) != len(want) {
		return fmt.Errorf("%d tensors, model %s has %d (%s is not one of its tensors)", len(ts), cfg.Model.Kind, len(want), ts[len(want)].Name)
	}
	return nil
}

// EvaluateRun evaluates the model.safetensors of the completed run in dir on
// the test set of its config.yaml's data section, or of data's when data is
// not nil (another run configuration; its relative paths resolved against
// opts.BaseDir). The run's own relative paths are resolved against
// opts.BaseDir too. The folder's files must be one run's: config.yaml the
// configuration of summary.json's run ID, and the model file that run's
// model (its metadata's run ID, model kind and rounds; its tensors, names
// and shapes, the configured model's for the data's inputs), with finite
// weights. Each is checked before the file's values are read, and a
// mismatch names both runs.
func EvaluateRun(ctx context.Context, dir string, data *Config, opts Options) (*ModelEval, error) {
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := checkRegular(cfgPath); err != nil {
		return nil, fmt.Errorf("experiments: %s is not a run folder: %w", dir, err)
	}
	cfg, _, err := LoadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("experiments: %s is not a run folder: %w", dir, err)
	}
	sum, err := results.ReadSummary(filepath.Join(dir, "summary.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("experiments: %s has no summary.json: the run has not completed", dir)
	} else if err != nil {
		return nil, fmt.Errorf("experiments: %s: summary.json unreadable: %w", dir, err)
	}
	if sum.Status != "complete" {
		return nil, fmt.Errorf("experiments: run %s %s: it has no final model", dir, sum.Status)
	}
	if id := RunID(cfg, sum.Inputs); id != sum.RunID {
		return nil, fmt.Errorf("experiments: %s mixes two runs: config.yaml is the configuration of run %s, summary.json is run %s's", dir, id, sum.RunID)
	}
	st, dim, classes, err := openModel(filepath.Join(dir, results.ModelFile), cfg, sum.RunID, sum.Rounds)
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	defer st.Close()
	testData := "the run's test data"
	if data != nil {
		cfg.Data = data.Data
		testData = "the test data of the -data configuration"
	}
	// The model must fit the data: images for the classifiers, text for
	// the next-word models (a folder whose data tells is checked once read).
	if !cfg.Data.DataTells() && cfg.Model.Text() != cfg.Data.Text() {
		return nil, fmt.Errorf("experiments: %s: model %s %s, but %s (dataset %s) is %s", st.Path, cfg.Model.Kind, modelReads(cfg.Model.Text()), testData, cfg.Data.Dataset, dataIs(cfg.Data.Text()))
	}
	f, err := loadDataContext(ctx, cfg, opts, rng.New(cfg.Seed))
	if err != nil {
		return nil, err
	}
	if text := f.Train.Next != nil; cfg.Model.Text() != text {
		return nil, fmt.Errorf("experiments: %s: model %s %s, but %s (dataset %s) is %s", st.Path, cfg.Model.Kind, modelReads(cfg.Model.Text()), testData, cfg.Data.Dataset, dataIs(text))
	}
	if f.Train.Dim != dim || f.Train.Classes != classes {
		// Other sizes may still fit (an LSTM reads sequences of any
		// length); the tensors must be those of the model for the data.
		if err := checkTensors(cfg, f.Train.Dim, f.Train.Classes, st.Tensors); err != nil {
			return nil, fmt.Errorf("experiments: %s: trained for %d inputs and %d classes, it does not fit %s (dataset %s: %d inputs, %d classes): %w",
				st.Path, dim, classes, testData, cfg.Data.Dataset, f.Train.Dim, f.Train.Classes, err)
		}
	}
	saved, err := st.Read()
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	theta, err := unpackModel(saved)
	if err != nil {
		return nil, fmt.Errorf("experiments: %s: %w", st.Path, err)
	}
	test := f.Test
	if v := cfg.Eval.Validation; v > 0 {
		// The run held out a validation share of the test set and scored
		// its test accuracy on the rest: the same split here.
		if _, test, err = datasets.SplitValidation(f.Test, v, rng.New(cfg.Seed).Stream("eval/validation")); err != nil {
			return nil, fmt.Errorf("experiments: eval.validation: %w", err)
		}
	}
	// Each worker builds a model: no more workers than batches (the
	// result does not depend on the count).
	batch := cfg.Eval.Batch
	if batch <= 0 {
		batch = 500 // sim.Evaluate's default
	}
	workers := max(1, min(opts.Workers, (test.Len()+batch-1)/batch))
	loss, acc, err := sim.Evaluate(ctx, cfg.Model, f.Train.Dim, f.Train.Classes, theta, test, cfg.Eval.Batch, workers)
	if err != nil {
		return nil, err
	}
	return &ModelEval{Config: cfg, Loss: loss, Accuracy: acc, Examples: test.Len(), Summary: sum}, nil
}

// modelReads and dataIs describe a model's input and a data set.
func modelReads(text bool) string {
	if text {
		return "predicts the next word of text"
	}
	return "classifies images"
}

func dataIs(text bool) string {
	if text {
		return "next-word text"
	}
	return "images"
}

// unpackModel returns the flat parameter vector of the tensors (checked
// against the model by openModel), refusing a weight that is not finite.
func unpackModel(saved []results.Tensor) ([]float32, error) {
	var theta []float32
	for _, s := range saved {
		for i, x := range s.Data {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("tensor %s holds %v at index %d of %d: the model's weights must be finite", s.Name, x, i, len(s.Data))
			}
		}
		theta = append(theta, s.Data...)
	}
	return theta, nil
}
