package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"dpfl/datasets"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// dense is a fully connected network: zero hidden layers is multinomial
// logistic regression; ReLU between layers; softmax cross-entropy loss.
type dense struct {
	batch, dim, classes int

	params  []float32 // flat parameters; weight tensors are views into it
	layers  []layer   // in order; each holds views of its W and b
	gradOut []*G.Node // gradient nodes, in layer order (W, b, W, b, ...)

	g              *G.ExprGraph
	x, y, w        *G.Node
	xT, yT, wT     *tensor.Dense // input tensors bound to x, y, w
	logits, loss   *G.Node
	logitsV, lossV G.Value
	vm             G.VM
}

type layer struct {
	in, out int
	wOff    int // offset of W (in x out, row-major) in params; b follows it
}

func newDense(hidden []int, dim, classes, batch int) (*dense, error) {
	m := &dense{batch: batch, dim: dim, classes: classes}
	widths := append(append([]int{dim}, hidden...), classes)
	off := 0
	for i := 0; i+1 < len(widths); i++ {
		m.layers = append(m.layers, layer{in: widths[i], out: widths[i+1], wOff: off})
		off += widths[i]*widths[i+1] + widths[i+1]
	}
	m.params = make([]float32, off)

	g := G.NewGraph()
	m.g = g
	m.xT = tensor.New(tensor.WithShape(batch, dim), tensor.Of(tensor.Float32))
	m.yT = tensor.New(tensor.WithShape(batch, classes), tensor.Of(tensor.Float32))
	m.wT = tensor.New(tensor.WithShape(batch), tensor.Of(tensor.Float32))
	m.x = G.NewMatrix(g, tensor.Float32, G.WithShape(batch, dim), G.WithName("x"), G.WithValue(m.xT))
	m.y = G.NewMatrix(g, tensor.Float32, G.WithShape(batch, classes), G.WithName("y"), G.WithValue(m.yT))
	m.w = G.NewVector(g, tensor.Float32, G.WithShape(batch), G.WithName("w"), G.WithValue(m.wT))

	h := m.x
	var wrt G.Nodes
	for i, l := range m.layers {
		wv := tensor.New(tensor.WithShape(l.in, l.out), tensor.WithBacking(m.params[l.wOff:l.wOff+l.in*l.out]))
		bv := tensor.New(tensor.WithShape(l.out), tensor.WithBacking(m.params[l.wOff+l.in*l.out:l.wOff+l.in*l.out+l.out]))
		W := G.NewMatrix(g, tensor.Float32, G.WithShape(l.in, l.out), G.WithName(fmt.Sprintf("W%d", i)), G.WithValue(wv))
		b := G.NewVector(g, tensor.Float32, G.WithShape(l.out), G.WithName(fmt.Sprintf("b%d", i)), G.WithValue(bv))
		wrt = append(wrt, W, b)
		z, err := G.Mul(h, W)
		if err != nil {
			return nil, fmt.Errorf("models: layer %d: %w", i, err)
		}
		if z, err = G.BroadcastAdd(z, b, nil, []byte{0}); err != nil {
			return nil, fmt.Errorf("models: layer %d bias: %w", i, err)
		}
		if i+1 < len(m.layers) {
			if z, err = G.Rectify(z); err != nil {
				return nil, fmt.Errorf("models: layer %d relu: %w", i, err)
			}
		}
		h = z
	}
	m.logits = h
	var err error
	if m.loss, err = SoftmaxXent(h, m.y, m.w); err != nil {
		return nil, fmt.Errorf("models: loss: %w", err)
	}
	if m.gradOut, err = G.Grad(m.loss, wrt...); err != nil {
		return nil, fmt.Errorf("models: gradient: %w", err)
	}
	G.Read(m.logits, &m.logitsV)
	G.Read(m.loss, &m.lossV)
	m.vm = G.NewTapeMachine(g)
	return m, nil
}

func (m *dense) NumParams() int    { return len(m.params) }
func (m *dense) Params() []float32 { return m.params }
func (m *dense) BatchSize() int    { return m.batch }

// Init draws weights from Glorot's uniform distribution U(-a, a),
// a = sqrt(6/(fan_in+fan_out)), and sets biases to zero.
func (m *dense) Init(r *rand.Rand) {
	for _, l := range m.layers {
		a := math.Sqrt(6 / float64(l.in+l.out))
		w := m.params[l.wOff : l.wOff+l.in*l.out]
		for i := range w {
			w[i] = float32((2*r.Float64() - 1) * a)
		}
		clear(m.params[l.wOff+l.in*l.out : l.wOff+l.in*l.out+l.out])
	}
}

// load copies the batch into the graph's input tensors.
func (m *dense) load(b *datasets.Batch) {
	if b.Size != m.batch || b.Dim != m.dim {
		panic(fmt.Sprintf("models: batch of %d x %d given to a model built for %d x %d", b.Size, b.Dim, m.batch, m.dim))
	}
	copy(m.xT.Data().([]float32), b.X)
	copy(m.wT.Data().([]float32), b.W)
	y := m.yT.Data().([]float32)
	clear(y)
	for i, c := range b.Y {
		y[i*m.classes+int(c)] = 1
	}
}

func (m *dense) run() error {
	err := m.vm.RunAll()
	m.vm.Reset()
	if err != nil {
		return fmt.Errorf("models: %w", err)
	}
	return nil
}

func (m *dense) Grad(grad []float32, b *datasets.Batch) (float64, error) {
	if len(grad) != len(m.params) {
		panic(fmt.Sprintf("models: gradient buffer of %d for %d parameters", len(grad), len(m.params)))
	}
	m.load(b)
	if err := m.run(); err != nil {
		return 0, err
	}
	for i, l := range m.layers {
		gw := m.gradOut[2*i].Value().Data().([]float32)
		gb := m.gradOut[2*i+1].Value().Data().([]float32)
		copy(grad[l.wOff:], gw)
		copy(grad[l.wOff+l.in*l.out:], gb)
	}
	return float64(m.lossV.Data().(float32)), nil
}

func (m *dense) Eval(b *datasets.Batch) (Score, error) {
	m.load(b)
	if err := m.run(); err != nil {
		return Score{}, err
	}
	logits := m.logitsV.Data().([]float32)
	correct := 0
	for i := 0; i < b.Real; i++ {
		row := logits[i*m.classes : (i+1)*m.classes]
		best := 0
		for c := range row {
			if row[c] > row[best] {
				best = c
			}
		}
		if best == int(b.Y[i]) {
			correct++
		}
	}
	// The graph's loss is the weighted mean over real rows; scale to a sum.
	return Score{LossSum: float64(m.lossV.Data().(float32)) * float64(b.Real), Correct: correct, Count: b.Real}, nil
}
