package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"dpfl/datasets"

	G "gorgonia.org/gorgonia"
)

// The kinds' hand-built networks, as they were before the kinds became
// presets of the layer machinery (presets.go): the reference the presets
// are tested against bit for bit (presets_test.go), and the models of the
// tests that look inside a graph.

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

// convs returns the geometry of both convolutions for a batch size.
func (g cnnGeom) convs(batch int) [2]convGeom {
	c0 := g.conv[0]
	first := newConvGeom(batch, g.ch, g.side, g.side, true, c0.out, c0.k, c0.stride, c0.pad)
	c1 := g.conv[1]
	return [2]convGeom{first, newConvGeom(batch, c0.out, first.oh, first.ow, false, c1.out, c1.k, c1.stride, c1.pad)}
}

// cnn is a compiled CNN or CNNLarge.
type cnn struct {
	*graphModel
	dropout
	geom                cnnGeom
	batch, dim, classes int
	channels            int
	x, y, w             []float32
	sub                 *cnn            // evaluation graph for large batches (eval.go)
	chunk               *datasets.Batch // its batch
}

var (
	_ Model      = (*cnn)(nil)
	_ Stochastic = (*cnn)(nil)
)

// newCNN builds the network for batches of the given rows, on params (fresh
// parameters when nil).
func newCNN(large bool, dim, channels, classes, batch int, params []float32) (*cnn, error) {
	geom, err := newCNNGeom(large, dim, channels)
	if err != nil {
		return nil, err
	}
	gm := newGraphModel(geom.layout(classes), params)
	m := &cnn{graphModel: gm, geom: geom, batch: batch, dim: dim, classes: classes, channels: channels}
	var x, y, w *G.Node
	x, m.x = gm.input("x", batch, dim)
	y, m.y = gm.input("y", batch)
	w, m.w = gm.input("w", batch)
	p := gm.wrt
	fail := func(what string, err error) (*cnn, error) {
		return nil, fmt.Errorf("models: %s %s: %w", map[bool]string{false: CNN, true: CNNLarge}[large], what, err)
	}
	h := x
	convs := geom.convs(batch)
	for i, cg := range convs {
		if h, err = conv2d(gm.mm, h, p[2*i], p[2*i+1], cg); err != nil {
			return fail(fmt.Sprintf("conv %d", i), err)
		}
		if h, err = rectify(h); err != nil {
			return fail(fmt.Sprintf("conv %d relu", i), err)
		}
	}
	if large {
		if h, err = maxPool2(h, batch, convs[1].oh, convs[1].ow, convs[1].out); err != nil {
			return fail("max-pool", err)
		}
	}
	if h.Shape()[1] != geom.flat {
		return fail("flatten", fmt.Errorf("%d features, want %d", h.Shape()[1], geom.flat))
	}
	mask := func(width int, rate float64) error {
		if !large {
			return nil
		}
		n, t := gm.input(fmt.Sprintf("mask%d", len(m.masks)), batch, width)
		m.masks, m.rates = append(m.masks, t), append(m.rates, rate)
		h, err = applyMask(h, n)
		return err
	}
	if err := mask(geom.flat, 0.25); err != nil {
		return fail("dropout", err)
	}
	for i := 0; i < 2; i++ {
		if h, err = denseLayer(gm.mm, h, p[4+2*i], p[5+2*i]); err != nil {
			return fail(fmt.Sprintf("dense %d", i), err)
		}
		if i == 0 {
			if h, err = rectify(h); err != nil {
				return fail("dense relu", err)
			}
			if err := mask(geom.hidden, 0.5); err != nil {
				return fail("dropout", err)
			}
		}
	}
	loss, err := softmaxXent(h, y, w)
	if err != nil {
		return fail("loss", err)
	}
	if err := gm.finish(loss, h); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *cnn) BatchSize() int { return m.batch }

// Init draws conv filters and dense weights from Glorot's uniform
// distribution (conv fans: in·kh·kw and out·kh·kw) and zeroes the biases.
func (m *cnn) Init(r *rand.Rand) {
	in := m.geom.ch
	for i, c := range m.geom.conv {
		m.glorot(r, 2*i, in*c.k*c.k, c.out*c.k*c.k)
		clear(m.lay.view(m.params, 2*i+1))
		in = c.out
	}
	m.glorot(r, 4, m.geom.flat, m.geom.hidden)
	clear(m.lay.view(m.params, 5))
	m.glorot(r, 6, m.geom.hidden, m.classes)
	clear(m.lay.view(m.params, 7))
}

func (m *cnn) check(b *datasets.Batch) {
	if b.Size != m.batch || b.Dim != m.dim {
		panic(fmt.Sprintf("models: batch of %d x %d given to a model built for %d x %d", b.Size, b.Dim, m.batch, m.dim))
	}
}

func (m *cnn) load(b *datasets.Batch) {
	m.check(b)
	copy(m.x, b.X)
	copy(m.w, b.W)
	labels(m.y, b.Y, m.classes)
}

func (m *cnn) Grad(grad []float32, b *datasets.Batch) (float64, error) {
	m.load(b)
	m.draw(b, m.params)
	return m.grad(grad), nil
}

func (m *cnn) Eval(b *datasets.Batch) (Score, error) {
	m.check(b)
	if m.batch > evalRows {
		if m.sub == nil {
			sub, err := newCNN(m.geom.large, m.dim, m.channels, m.classes, evalRows, m.params)
			if err != nil {
				return Score{}, err
			}
			m.sub, m.chunk = sub, datasets.NewBatch(evalRows, m.dim)
		}
		return evalChunks(m.sub, m.chunk, b)
	}
	m.load(b)
	m.off()
	return scoreRows(m.logits(), b, m.classes), nil
}

type lstm struct {
	*graphModel
	d       lstmDims
	batch   int
	ids     []float32       // time-major token ids (row t·B+i)
	next, w []float32       // target ids and token weights, time-major
	sub     *lstm           // evaluation graph for large batches (eval.go)
	chunk   *datasets.Batch // its batch
}

var _ Model = (*lstm)(nil)

// newLSTM builds the network for batches of the given rows, on params
// (fresh parameters when nil).
func newLSTM(d lstmDims, batch int, params []float32) (*lstm, error) {
	gm := newGraphModel(d.layout(), params)
	m := &lstm{graphModel: gm, d: d, batch: batch}
	n := d.seq * batch
	var ids, y, w *G.Node
	ids, m.ids = gm.input("tokens", n)
	y, m.next = gm.input("next", n)
	w, m.w = gm.input("w", n)
	p := gm.wrt
	fail := func(what string, err error) (*lstm, error) { return nil, fmt.Errorf("models: lstm %s: %w", what, err) }

	emb, err := embed(p[0], ids) // [T·B, E]
	if err != nil {
		return fail("embedding", err)
	}
	// Input contributions of all steps and gates at once: [T·B, 4H].
	xg, err := denseLayer(gm.mm, emb, p[1], p[3])
	if err != nil {
		return fail("input weights", err)
	}
	out, err := lstmLayer(gm.mm, xg, p[2], d.seq, batch) // [T·B, H]
	if err != nil {
		return fail("recurrence", err)
	}
	for i := 0; i < 2; i++ {
		if out, err = denseLayer(gm.mm, out, p[4+2*i], p[5+2*i]); err != nil {
			return fail("dense", err)
		}
	}
	loss, err := softmaxXent(out, y, w)
	if err != nil {
		return fail("loss", err)
	}
	if err := gm.finish(loss, out); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *lstm) BatchSize() int { return m.batch }

// Init: embedding U(-0.05, 0.05) (Keras' default), every weight matrix
// Glorot-uniform (each gate's block with its own fans), biases zero except
// the forget gate's, which start at 1.
func (m *lstm) Init(r *rand.Rand) {
	d := m.d
	m.uniform(r, 0, 0.05)
	m.glorot(r, 1, d.embed, d.hidden)
	m.glorot(r, 2, d.hidden, d.hidden)
	b := m.lay.view(m.params, 3)
	clear(b)
	for i := d.hidden; i < 2*d.hidden; i++ {
		b[i] = 1
	}
	m.glorot(r, 4, d.hidden, d.proj)
	clear(m.lay.view(m.params, 5))
	m.glorot(r, 6, d.proj, d.vocab)
	clear(m.lay.view(m.params, 7))
}

// load copies the batch in time-major order and sets the token weights.
func (m *lstm) check(b *datasets.Batch) {
	T, B := m.d.seq, m.batch
	if b.Size != B || b.Dim != T || len(b.Next) != B*T {
		panic(fmt.Sprintf("models: batch of %d x %d (%d targets) given to an lstm built for %d x %d", b.Size, b.Dim, len(b.Next), B, T))
	}
}

func (m *lstm) load(b *datasets.Batch) {
	m.check(b)
	loadTokens(m.ids, m.next, m.w, b, m.d.seq, m.batch, m.d.vocab)
}

func (m *lstm) Grad(grad []float32, b *datasets.Batch) (float64, error) {
	m.load(b)
	return m.grad(grad), nil
}

// Eval scores the targets that are not PAD, OOV or EOS.
func (m *lstm) Eval(b *datasets.Batch) (Score, error) {
	m.check(b)
	if m.batch > evalRows {
		if m.sub == nil {
			sub, err := newLSTM(m.d, evalRows, m.params)
			if err != nil {
				return Score{}, err
			}
			m.sub, m.chunk = sub, datasets.NewBatch(evalRows, m.d.seq)
		}
		return evalChunks(m.sub, m.chunk, b)
	}
	m.load(b)
	return scoreTokens(m.logits(), b, m.d.seq, m.batch, m.d.vocab, LSTM)
}

// glorot fills tensor k with U(-a, a), a = sqrt(6/(fanIn+fanOut)).
func (m *graphModel) glorot(r *rand.Rand, k, fanIn, fanOut int) {
	m.uniform(r, k, math.Sqrt(6/float64(fanIn+fanOut)))
}

// uniform fills tensor k with U(-a, a).
func (m *graphModel) uniform(r *rand.Rand, k int, a float64) {
	for i, w := 0, m.lay.view(m.params, k); i < len(w); i++ {
		w[i] = float32((2*r.Float64() - 1) * a)
	}
}
