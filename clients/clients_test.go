package clients

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dpfl/datasets"
	"dpfl/models"
)

func tinyData(r *rand.Rand) *datasets.Dataset {
	d := &datasets.Dataset{X: make([]float32, 40*3), Y: make([]int32, 40), Dim: 3, Classes: 2}
	for i := range d.Y {
		d.Y[i] = int32(i % 2)
		for j := 0; j < 3; j++ {
			d.X[i*3+j] = float32(float64(2*d.Y[i]-1) + 0.3*r.NormFloat64())
		}
	}
	return d
}

// TestUpdate: the delta is global − local after the configured number of
// steps, the same client stream gives the same delta, the global vector is
// not modified, and max_examples limits the examples used.
func TestUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	d := tinyData(r)
	m, err := models.Spec{Kind: models.LogReg}.Build(3, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(r)
	global := slices.Clone(m.Params())
	tr, err := NewTrainer(m, 3, Config{Epochs: 2, BatchSize: 4, LR: 0.5, MaxExamples: 10})
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]int, 30)
	for i := range idx {
		idx[i] = i
	}
	delta := make([]float32, m.NumParams())
	res, err := tr.Update(delta, global, d, idx, rand.New(rand.NewPCG(7, 7)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Examples != 10 || res.Steps != 2*3 { // 10 examples, batches 4+4+2, two epochs
		t.Fatalf("result %+v, want 10 examples and 6 steps", res)
	}
	for i := range delta {
		if delta[i] != global[i]-m.Params()[i] {
			t.Fatal("delta is not global − local")
		}
	}
	var n float64
	for _, x := range delta {
		n += float64(x * x)
	}
	if n == 0 || math.IsNaN(n) {
		t.Fatalf("delta norm² %g", n)
	}
	again := make([]float32, len(delta))
	before := slices.Clone(global)
	if _, err := tr.Update(again, global, d, idx, rand.New(rand.NewPCG(7, 7))); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(delta, again) || !slices.Equal(global, before) {
		t.Fatal("same stream gave a different delta, or global was modified")
	}
	other := make([]float32, len(delta))
	tr.Update(other, global, d, idx, rand.New(rand.NewPCG(8, 8)))
	if slices.Equal(delta, other) {
		t.Fatal("a different stream gave the same delta (subset and order should change)")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Epochs: 0, BatchSize: 1, LR: 1}, {Epochs: 1, BatchSize: 0, LR: 1}, {Epochs: 1, BatchSize: 1, LR: 0}, {Epochs: 1, BatchSize: 1, LR: math.Inf(1)}, {Epochs: 1, BatchSize: 1, LR: 1, MaxExamples: -1}} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// maskModel is a logistic regression that records, like a model with
// dropout, one draw from the RNG it was given per Grad call.
type maskModel struct {
	models.Model
	rng   *rand.Rand
	draws []uint64
}

func (m *maskModel) SetRNG(r *rand.Rand) { m.rng = r }

func (m *maskModel) Grad(grad []float32, b *datasets.Batch) (float64, error) {
	if m.rng == nil {
		m.draws = append(m.draws, 0)
	} else {
		m.draws = append(m.draws, m.rng.Uint64())
	}
	return m.Model.Grad(grad, b)
}

// TestDropoutFollowsClientStream: a model with dropout gets its masks from
// the client's stream (same stream, same masks; another stream, other
// masks), never from the default (nil) source during training, and the RNG
// is cleared after the update.
func TestDropoutFollowsClientStream(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	d := tinyData(r)
	base, err := models.Spec{Kind: models.LogReg}.Build(3, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	m := &maskModel{Model: base}
	tr, err := NewTrainer(m, 3, Config{Epochs: 1, BatchSize: 4, LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	global, delta := make([]float32, m.NumParams()), make([]float32, m.NumParams())
	idx := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	run := func(seed uint64) []uint64 {
		m.draws = nil
		if _, err := tr.Update(delta, global, d, idx, rand.New(rand.NewPCG(seed, 0))); err != nil {
			t.Fatal(err)
		}
		if m.rng != nil {
			t.Fatal("dropout RNG left set after Update")
		}
		return m.draws
	}
	a, b, c := run(1), run(1), run(2)
	if len(a) != 3 || slices.Contains(a, 0) {
		t.Fatalf("draws %v: want 3 steps, each from the client's stream", a)
	}
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Fatalf("same stream gave masks %v and %v; another stream %v", a, b, c)
	}
}
