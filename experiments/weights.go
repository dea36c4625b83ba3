package experiments

import (
	"fmt"
	"math"
	"slices"

	"dpfl/models"
	"dpfl/results"
)

// modelStart is what a run starts its model from besides the seed: the
// initial weights of model.init (nil: drawn) and the trained part when
// model.freeze lists tensors (nil: all of it).
type modelStart struct {
	init      []float32
	trainable *models.Trainable
}

// trainedParams is the number of trained parameters of a model of total
// parameters: the dimension of the clipped update and of the noise.
func (s modelStart) trainedParams(total int) int {
	if s.trainable != nil {
		return s.trainable.Len()
	}
	return total
}

// newModelStart reads model.init (resolved against baseDir) and
// model.freeze for the model's tensors ts.
func newModelStart(cfg *Config, baseDir string, ts []models.Tensor) (modelStart, error) {
	var s modelStart
	var err error
	if s.trainable, err = models.NewTrainable(ts, cfg.Model.Freeze); err != nil {
		return s, fmt.Errorf("experiments: model.%w", err)
	}
	if cfg.Model.Init != "" {
		path := resolve(baseDir, cfg.Model.Init)
		if s.init, err = readInit(path, ts); err != nil {
			return s, fmt.Errorf("experiments: model.init: %w", err)
		}
	}
	return s, nil
}

// readInit reads the initial weights of a model with tensors ts from the
// safetensors file at path: each of the model's tensors, by name, with its
// shape, and no other; every value finite. The header is checked against
// the model before any value is read. Every error names the file.
func readInit(path string, ts []models.Tensor) ([]float32, error) {
	st, err := results.OpenSafetensors(path) // its errors name the file
	if err != nil {
		return nil, err
	}
	defer st.Close()
	theta, err := readInitTensors(st, ts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return theta, nil
}

// readInitTensors is readInit's check and read of the open file st.
func readInitTensors(st *results.Safetensors, ts []models.Tensor) ([]float32, error) {
	byName := make(map[string]results.TensorInfo, len(st.Tensors))
	for _, t := range st.Tensors {
		byName[t.Name] = t
	}
	total := 0
	for _, w := range ts {
		t, ok := byName[w.Name]
		switch {
		case !ok:
			return nil, fmt.Errorf("tensor %s %v of the model is missing (a file of another model?)", w.Name, w.Shape)
		case !slices.Equal(t.Shape, w.Shape):
			return nil, fmt.Errorf("tensor %s has shape %v, the model's is %v", w.Name, t.Shape, w.Shape)
		}
		delete(byName, w.Name)
		total += t.Len()
	}
	for _, t := range st.Tensors { // in file order: the first extra one
		if _, extra := byName[t.Name]; extra {
			return nil, fmt.Errorf("tensor %s %v is not one of the model's tensors (a file of another model?)", t.Name, t.Shape)
		}
	}
	saved, err := st.Read()
	if err != nil {
		return nil, err // names the file
	}
	theta := make([]float32, total)
	at := make(map[string]int, len(ts))
	for _, w := range ts {
		at[w.Name] = w.Offset
	}
	for _, s := range saved {
		for i, x := range s.Data {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("tensor %s holds %v at index %d of %d: initial weights must be finite", s.Name, x, i, len(s.Data))
			}
		}
		copy(theta[at[s.Name]:], s.Data)
	}
	return theta, nil
}
