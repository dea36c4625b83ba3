// Package clients runs a selected client's local training: local SGD from
// the current global model on the client's own examples, returning the model
// delta (pseudo-gradient) global − local. Clipping and noise are the
// aggregator's job (package aggregators), so every privacy-relevant step sits
// in one place.
//
// Package clients imports models, datasets and the standard library.
package clients

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"dpfl/datasets"
	"dpfl/models"
)

// Config is the local training procedure.
type Config struct {
	Epochs      int     // passes over the client's examples
	BatchSize   int     // examples per local step (the model's batch size)
	LR          float64 // local learning rate
	MaxExamples int     // if > 0, each round uses a random subset of at most this many examples
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	switch {
	case c.Epochs <= 0:
		return fmt.Errorf("clients: epochs %d must be positive", c.Epochs)
	case c.BatchSize <= 0:
		return fmt.Errorf("clients: batch size %d must be positive", c.BatchSize)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("clients: learning rate %v must be positive and finite", c.LR)
	case c.MaxExamples < 0:
		return fmt.Errorf("clients: max examples %d must not be negative", c.MaxExamples)
	}
	return nil
}

// Result summarizes one client's local training.
type Result struct {
	Loss     float64 // mean training loss over the local steps
	Steps    int
	Examples int // examples used this round
}

// Trainer trains clients on one model instance; one Trainer per worker.
// It is not safe for concurrent use.
type Trainer struct {
	model  models.Model
	cfg    Config
	batch  *datasets.Batch
	grad   []float32
	order  []int
	frozen []models.Range
}

// Freeze keeps the parameters in the ranges fixed during local training
// (frozen tensors): their gradient is dropped before each step, so their
// delta is exactly zero.
func (t *Trainer) Freeze(frozen []models.Range) { t.frozen = frozen }

// NewTrainer returns a trainer for m, whose batch size must equal
// cfg.BatchSize.
func NewTrainer(m models.Model, dim int, cfg Config) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if b, ok := m.(models.Batched); ok && b.BatchSize() != cfg.BatchSize {
		return nil, fmt.Errorf("clients: model built for batch %d, config says %d", b.BatchSize(), cfg.BatchSize)
	}
	return &Trainer{model: m, cfg: cfg, batch: datasets.NewBatch(cfg.BatchSize, dim), grad: make([]float32, m.NumParams())}, nil
}

// ErrDiverged reports a non-finite local loss.
var ErrDiverged = errors.New("clients: local training diverged (non-finite loss)")

// Update trains from global on the examples idx of data and writes the
// pseudo-gradient global − local into delta. r drives the example order and
// subset and, for models with dropout (models.Stochastic), the dropout
// masks: they come from a stream seeded by r's first two draws. Pass the
// client's own stream so results do not depend on which worker runs it.
func (t *Trainer) Update(delta, global []float32, data *datasets.Dataset, idx []int, r *rand.Rand) (Result, error) {
	p := t.model.Params()
	if len(global) != len(p) || len(delta) != len(p) {
		panic(fmt.Sprintf("clients: %d global values and %d delta values for %d parameters", len(global), len(delta), len(p)))
	}
	if len(idx) == 0 {
		return Result{}, errors.New("clients: client has no examples")
	}
	if s, ok := t.model.(models.Stochastic); ok {
		s.SetRNG(rand.New(rand.NewPCG(r.Uint64(), r.Uint64())))
		defer s.SetRNG(nil)
	}
	copy(p, global)
	t.order = append(t.order[:0], idx...)
	if m := t.cfg.MaxExamples; m > 0 && len(t.order) > m {
		r.Shuffle(len(t.order), func(i, j int) { t.order[i], t.order[j] = t.order[j], t.order[i] })
		t.order = t.order[:m]
	}
	var res Result
	res.Examples = len(t.order)
	lr := float32(t.cfg.LR)
	for e := 0; e < t.cfg.Epochs; e++ {
		r.Shuffle(len(t.order), func(i, j int) { t.order[i], t.order[j] = t.order[j], t.order[i] })
		for lo := 0; lo < len(t.order); lo += t.cfg.BatchSize {
			hi := min(lo+t.cfg.BatchSize, len(t.order))
			t.batch.Fill(data, t.order[lo:hi])
			loss, err := t.model.Grad(t.grad, t.batch)
			if err != nil {
				return res, err
			}
			if math.IsNaN(loss) || math.IsInf(loss, 0) {
				return res, ErrDiverged
			}
			for _, f := range t.frozen {
				clear(t.grad[f.Lo:f.Hi])
			}
			if e == t.cfg.Epochs-1 && hi == len(t.order) { // the last step (epochs ≥ 1, examples ≥ 1)
				models.StepDelta(delta, global, p, t.grad, lr) // and delta = global − p
			} else {
				models.SGDStep(p, t.grad, lr)
			}
			res.Loss += loss
			res.Steps++
		}
	}
	res.Loss /= float64(res.Steps)
	return res, nil
}
