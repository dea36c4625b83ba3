package models

import (
	"fmt"
	"math/rand/v2"

	"dpfl/datasets"

	G "gorgonia.org/gorgonia"
)

// dense is a fully connected network: zero hidden layers is multinomial
// logistic regression; ReLU between layers; softmax cross-entropy loss.
// Its parameter tensors are, per layer, W (in x out, row-major) then b.
type dense struct {
	*graphModel
	batch, dim, classes int
	widths              []int           // input, hidden..., classes
	x, y, w             []float32       // input buffers: rows, class ids, row weights
	sub                 *dense          // evaluation graph for large batches (eval.go)
	chunk               *datasets.Batch // its batch
}

// newDense builds the network for batches of the given rows, on params
// (fresh parameters when nil).
func newDense(hidden []int, dim, classes, batch int, params []float32) (*dense, error) {
	widths := append(append([]int{dim}, hidden...), classes)
	var lay layout
	for i := 0; i+1 < len(widths); i++ {
		lay.add(fmt.Sprintf("W%d", i), widths[i], widths[i+1])
		lay.add(fmt.Sprintf("b%d", i), widths[i+1])
	}
	gm := newGraphModel(lay, params)
	m := &dense{graphModel: gm, batch: batch, dim: dim, classes: classes, widths: widths}
	var x, y, w *G.Node
	x, m.x = gm.input("x", batch, dim)
	y, m.y = gm.input("y", batch)
	w, m.w = gm.input("w", batch)
	h := x
	for i := 0; i+1 < len(widths); i++ {
		z, err := denseLayer(gm.mm, h, gm.wrt[2*i], gm.wrt[2*i+1])
		if err != nil {
			return nil, fmt.Errorf("models: layer %d: %w", i, err)
		}
		if i+2 < len(widths) {
			if z, err = rectify(z); err != nil {
				return nil, fmt.Errorf("models: layer %d relu: %w", i, err)
			}
		}
		h = z
	}
	loss, err := softmaxXent(h, y, w)
	if err != nil {
		return nil, fmt.Errorf("models: loss: %w", err)
	}
	if err := gm.finish(loss, h); err != nil {
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

func (m *dense) check(b *datasets.Batch) {
	if b.Size != m.batch || b.Dim != m.dim {
		panic(fmt.Sprintf("models: batch of %d x %d given to a model built for %d x %d", b.Size, b.Dim, m.batch, m.dim))
	}
}

// load copies the batch into the graph's input buffers.
func (m *dense) load(b *datasets.Batch) {
	m.check(b)
	copy(m.x, b.X)
	copy(m.w, b.W)
	labels(m.y, b.Y, m.classes)
}

func (m *dense) Grad(grad []float32, b *datasets.Batch) (float64, error) {
	m.load(b)
	return m.grad(grad), nil
}

func (m *dense) Eval(b *datasets.Batch) (Score, error) {
	m.check(b)
	if m.batch > evalRows {
		if m.sub == nil {
			sub, err := newDense(m.widths[1:len(m.widths)-1], m.dim, m.classes, evalRows, m.params)
			if err != nil {
				return Score{}, err
			}
			m.sub, m.chunk = sub, datasets.NewBatch(evalRows, m.dim)
		}
		return evalChunks(m.sub, m.chunk, b)
	}
	m.load(b)
	return scoreRows(m.logits(), b, m.classes), nil
}

// Dense model kinds.
const (
	LogReg = "logreg"
	MLP    = "mlp"
)

func init() {
	Register(&logRegKind)
	Register(&mlpKind)
}

var logRegKind = Kind{
	Name: LogReg, Order: 10, Doc: "multinomial logistic regression",
	Validate: func(s Spec, add Problems) {
		if len(s.Hidden) > 0 {
			add("hidden", "logreg has no hidden layers (use kind: mlp)")
		}
	},
	Build: func(s Spec, dim, classes, batch int) (Model, error) {
		sp, err := denseStack(LogReg, nil, dim, classes)
		if err != nil {
			return nil, err
		}
		return buildStack(sp, batch)
	},
	NumParams: func(s Spec, dim, classes int) int { return denseParams(nil, dim, classes) },
	Estimate: func(s Spec, dim, classes float64) Estimate {
		return Estimate{Params: dim*classes + classes, Key: "kind", ActivationBytes: denseActivations(s.Hidden, dim, classes)}
	},
}

var mlpKind = Kind{
	Name: MLP, Order: 20, Doc: "ReLU hidden layers (hidden: widths, default [200])", Uses: []string{"hidden"},
	Defaults: func(s *Spec) {
		if len(s.Hidden) == 0 {
			s.Hidden = []int{200}
		}
	},
	Build: func(s Spec, dim, classes, batch int) (Model, error) {
		if len(s.Hidden) == 0 {
			return nil, fmt.Errorf("models: mlp needs at least one hidden layer width")
		}
		for _, h := range s.Hidden {
			if h <= 0 {
				return nil, fmt.Errorf("models: hidden width %d must be positive", h)
			}
		}
		sp, err := denseStack(MLP, s.Hidden, dim, classes)
		if err != nil {
			return nil, err
		}
		return buildStack(sp, batch)
	},
	NumParams: func(s Spec, dim, classes int) int { return denseParams(s.Hidden, dim, classes) },
	Estimate: func(s Spec, dim, classes float64) Estimate {
		n, in := 0.0, dim
		for _, h := range s.Hidden {
			w := float64(max(h, 0))
			n += in*w + w
			in = w
		}
		return Estimate{Params: n + in*classes + classes, Key: "hidden", ActivationBytes: denseActivations(s.Hidden, dim, classes)}
	},
}

// denseParams is the parameter count of a dense network.
func denseParams(hidden []int, dim, classes int) int {
	n, in := 0, dim
	for _, h := range hidden {
		n += in*h + h
		in = h
	}
	return n + in*classes + classes
}

// denseActivations estimates the bytes one example takes in a dense network.
func denseActivations(hidden []int, dim, classes float64) float64 {
	floats := dim + classes
	for _, h := range hidden {
		floats += float64(max(h, 0))
	}
	return 4 * (activationCopies*floats + dim)
}
