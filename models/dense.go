package models

import (
	"fmt"
	"math/rand/v2"

	"dpfl/datasets"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// dense is a fully connected network: zero hidden layers is multinomial
// logistic regression; ReLU between layers; softmax cross-entropy loss.
// Its parameter tensors are, per layer, W (in x out, row-major) then b.
type dense struct {
	*graphModel
	batch, dim, classes int
	widths              []int // input, hidden..., classes
	xT, yT, wT          *tensor.Dense
	logitsV             G.Value
}

func newDense(hidden []int, dim, classes, batch int) (*dense, error) {
	widths := append(append([]int{dim}, hidden...), classes)
	var lay layout
	for i := 0; i+1 < len(widths); i++ {
		lay.add(fmt.Sprintf("W%d", i), widths[i], widths[i+1])
		lay.add(fmt.Sprintf("b%d", i), widths[i+1])
	}
	gm := newGraphModel(lay)
	// Every op of this graph overwrites a same-shaped output, so the tape
	// machines keep their registers between runs (see rewind; checked by
	// TestConformanceReusedMatchesFresh).
	gm.keepRegisters = true
	m := &dense{graphModel: gm, batch: batch, dim: dim, classes: classes, widths: widths}
	x, xT := gm.input("x", batch, dim)
	y, yT := gm.input("y", batch, classes)
	w, wT := gm.input("w", batch)
	m.xT, m.yT, m.wT = xT, yT, wT
	h := x
	for i := 0; i+1 < len(widths); i++ {
		z, err := G.Mul(h, gm.wrt[2*i])
		if err != nil {
			return nil, fmt.Errorf("models: layer %d: %w", i, err)
		}
		if z, err = G.BroadcastAdd(z, gm.wrt[2*i+1], nil, []byte{0}); err != nil {
			return nil, fmt.Errorf("models: layer %d bias: %w", i, err)
		}
		if i+2 < len(widths) {
			if z, err = G.Rectify(z); err != nil {
				return nil, fmt.Errorf("models: layer %d relu: %w", i, err)
			}
		}
		h = z
	}
	loss, err := SoftmaxXent(h, y, w)
	if err != nil {
		return nil, fmt.Errorf("models: loss: %w", err)
	}
	if err := gm.finish(loss, G.Read(h, &m.logitsV)); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *dense) BatchSize() int { return m.batch }

// Init draws weights from Glorot's uniform distribution U(-a, a),
// a = sqrt(6/(fan_in+fan_out)), and sets biases to zero.
func (m *dense) Init(r *rand.Rand) {
	for i := 0; i+1 < len(m.widths); i++ {
		m.glorot(r, 2*i, m.widths[i], m.widths[i+1])
		clear(m.lay.view(m.params, 2*i+1))
	}
}

// load copies the batch into the graph's input tensors.
func (m *dense) load(b *datasets.Batch) {
	if b.Size != m.batch || b.Dim != m.dim {
		panic(fmt.Sprintf("models: batch of %d x %d given to a model built for %d x %d", b.Size, b.Dim, m.batch, m.dim))
	}
	copy(m.xT.Data().([]float32), b.X)
	copy(m.wT.Data().([]float32), b.W)
	oneHot(m.yT.Data().([]float32), b.Y, m.classes)
}

func (m *dense) Grad(grad []float32, b *datasets.Batch) (float64, error) {
	m.load(b)
	return m.grad(grad)
}

func (m *dense) Eval(b *datasets.Batch) (Score, error) {
	m.load(b)
	if err := m.forward(); err != nil {
		return Score{}, err
	}
	return scoreRows(m.logitsV.Data().([]float32), b, m.classes, float64(m.lossV.Data().(float32))), nil
}
