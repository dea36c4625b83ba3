package experiments

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

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

// EvaluateRun evaluates the model.safetensors of the completed run in dir on
// the test set of its config.yaml's data section, or of data's when data is
// not nil (another run configuration; its relative paths resolved against
// opts.BaseDir). The run's own relative paths are resolved against
// opts.BaseDir too. The model file must hold exactly the tensors, names and
// shapes of the configured model for that data's inputs.
func EvaluateRun(ctx context.Context, dir string, data *Config, opts Options) (*ModelEval, error) {
	cfg, _, err := LoadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		return nil, fmt.Errorf("experiments: %s is not a run folder: %w", dir, err)
	}
	sum, err := results.ReadSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, fmt.Errorf("experiments: %s has no summary.json: the run has not completed", dir)
	}
	if sum.Status != "complete" {
		return nil, fmt.Errorf("experiments: run %s %s: it has no final model", dir, sum.Status)
	}
	saved, _, err := results.ReadSafetensors(filepath.Join(dir, results.ModelFile))
	if err != nil {
		return nil, err
	}
	if data != nil {
		cfg.Data = data.Data
	}
	f, err := loadData(cfg, opts, rng.New(cfg.Seed))
	if err != nil {
		return nil, err
	}
	theta, err := unpackModel(cfg, f.Train.Dim, f.Train.Classes, saved)
	if err != nil {
		return nil, fmt.Errorf("experiments: %s: %w", filepath.Join(dir, results.ModelFile), err)
	}
	test := f.Test
	if v := cfg.Eval.Validation; v > 0 {
		// The run held out a validation share of the test set and scored
		// its test accuracy on the rest: the same split here.
		if _, test, err = datasets.SplitValidation(f.Test, v, rng.New(cfg.Seed).Stream("eval/validation")); err != nil {
			return nil, fmt.Errorf("experiments: eval.validation: %w", err)
		}
	}
	loss, acc, err := sim.Evaluate(ctx, cfg.Model, f.Train.Dim, f.Train.Classes, theta, test, cfg.Eval.Batch, opts.Workers)
	if err != nil {
		return nil, err
	}
	return &ModelEval{Config: cfg, Loss: loss, Accuracy: acc, Examples: test.Len(), Summary: sum}, nil
}

// unpackModel checks that the saved tensors are the configured model's, by
// name, order and shape, and returns its flat parameter vector.
func unpackModel(cfg *Config, dim, classes int, saved []results.Tensor) ([]float32, error) {
	want, err := modelTensors(cfg, dim, classes)
	if err != nil {
		return nil, err
	}
	if len(saved) != len(want) {
		return nil, fmt.Errorf("%d tensors, model %s has %d", len(saved), cfg.Model.Kind, len(want))
	}
	var theta []float32
	for i, w := range want {
		s := saved[i]
		if s.Name != w.Name || !slices.Equal(s.Shape, w.Shape) {
			return nil, fmt.Errorf("tensor %d is %s %v, model %s for these inputs has %s %v", i, s.Name, s.Shape, cfg.Model.Kind, w.Name, w.Shape)
		}
		theta = append(theta, s.Data...)
	}
	return theta, nil
}
