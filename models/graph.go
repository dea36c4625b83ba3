package models

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"dpfl/datasets"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Stochastic is implemented by models with dropout. SetRNG makes the next
// training calls (Grad) draw their dropout masks from r; evaluation never
// drops units. Without a SetRNG call (or after SetRNG(nil)) each Grad seeds
// its masks from a hash of the batch and the parameters, so a run is
// deterministic and independent of which worker trains which client.
// Models without dropout layers ignore SetRNG.
type Stochastic interface {
	SetRNG(r *rand.Rand)
}

// layout assigns each parameter tensor its place in the flat vector.
type layout struct {
	names  []string
	shapes []tensor.Shape
	offs   []int
	n      int
}

// add reserves a tensor of the given shape and returns its index.
func (l *layout) add(name string, shape ...int) int {
	s := tensor.Shape(shape).Clone()
	l.names = append(l.names, name)
	l.shapes = append(l.shapes, s)
	l.offs = append(l.offs, l.n)
	l.n += s.TotalSize()
	return len(l.names) - 1
}

// view returns parameter tensor k's slice of params.
func (l *layout) view(params []float32, k int) []float32 {
	return params[l.offs[k] : l.offs[k]+l.shapes[k].TotalSize()]
}

// graphModel is the part every model shares: a flat parameter vector whose
// tensors are views bound to graph nodes, the gradient nodes, and two
// programs on one executor (see exec.go): the whole graph for training and
// the forward pass alone for evaluation.
type graphModel struct {
	lay    layout
	params []float32
	g      *G.ExprGraph
	wrt    G.Nodes // parameter nodes, in layout order
	ex     *executor
	train  *program // loss, logits, gradients (Grad)
	fwd    *program // logits (Eval)
	bound  *float32 // the gradient buffer the train program writes into
	mm     *blasCtx // the ops' matrix products
}

// newGraphModel creates the parameter nodes of lay in a fresh graph, bound
// to params (allocated when nil; a model's evaluation graph shares its
// model's).
func newGraphModel(lay layout, params []float32) *graphModel {
	if params == nil {
		params = make([]float32, lay.n)
	}
	m := &graphModel{lay: lay, params: params, g: G.NewGraph(), mm: new(blasCtx)}
	for k, s := range lay.shapes {
		v := tensor.New(tensor.WithShape(s...), tensor.WithBacking(lay.view(m.params, k)))
		m.wrt = append(m.wrt, G.NewTensor(m.g, tensor.Float32, len(s), G.WithShape(s...), G.WithName(lay.names[k]), G.WithValue(v)))
	}
	return m
}

// input makes a float32 input node of the given shape bound to a fresh
// buffer, and returns both.
func (m *graphModel) input(name string, shape ...int) (*G.Node, []float32) {
	t := tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float32))
	return G.NewTensor(m.g, tensor.Float32, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(t)), t.Data().([]float32)
}

// finish adds the gradient nodes of loss and compiles the programs: the
// whole graph for training, and the forward pass to the logits alone for
// evaluation. Buffers are allocated when a program first runs, so a model
// only ever evaluated holds no backward-pass buffers.
func (m *graphModel) finish(loss, logits *G.Node) error {
	grads, err := G.Grad(loss, m.wrt...)
	if err != nil {
		return fmt.Errorf("models: gradient: %w", err)
	}
	m.ex = newExecutor(m.g)
	if m.train, err = m.ex.compile(append(G.Nodes{loss, logits}, grads...)...); err != nil {
		return err
	}
	m.fwd, err = m.ex.compile(logits)
	return err
}

func (m *graphModel) NumParams() int    { return len(m.params) }
func (m *graphModel) Params() []float32 { return m.params }

// grad runs the training program, which writes the gradient straight into
// grad, and returns the loss.
func (m *graphModel) grad(grad []float32) float64 {
	if len(grad) != len(m.params) {
		panic(fmt.Sprintf("models: gradient buffer of %d for %d parameters", len(grad), len(m.params)))
	}
	if m.bound != &grad[0] {
		for k := range m.wrt {
			m.train.bindOut(2+k, m.lay.view(grad, k))
		}
		m.bound = &grad[0]
	}
	m.train.run()
	return float64(m.train.out(0)[0])
}

// logits runs the forward pass alone and returns the logits.
func (m *graphModel) logits() []float32 {
	m.fwd.run()
	return m.fwd.out(0)
}

// dropout holds one mask input per dropout layer and the RNG the masks come
// from.
type dropout struct {
	rates []float64
	masks [][]float32
	rng   *rand.Rand // caller's, or nil: seeded per call from a hash
	// hashed is the generator reseeded from the hash (kept, so a step
	// allocates nothing).
	hashSrc *rand.ChaCha8
	hashed  *rand.Rand
}

func (d *dropout) SetRNG(r *rand.Rand) { d.rng = r }

// draw fills every mask for training: 0 with probability rate, else
// 1/(1-rate) (inverted dropout, so evaluation needs no rescaling).
func (d *dropout) draw(b *datasets.Batch, params []float32) {
	r := d.rng
	if r == nil {
		if d.hashSrc == nil {
			d.hashSrc = rand.NewChaCha8([32]byte{})
			d.hashed = rand.New(d.hashSrc)
		}
		d.hashSrc.Seed(batchParamsKey(b, params))
		r = d.hashed
	}
	for k, t := range d.masks {
		// Unit i is dropped when its 32-bit uniform draw falls below
		// rate·2³² (two draws per Uint64).
		p := d.rates[k]
		thr := uint32(math.Min(math.Round(p*(1<<32)), math.MaxUint32))
		keep := math.Float32bits(float32(1 / (1 - p)))
		var u uint64
		for i := range t {
			if i&1 == 0 {
				u = r.Uint64()
			} else {
				u >>= 32
			}
			bits := keep
			if uint32(u) < thr { // a conditional move, not a branch
				bits = 0
			}
			t[i] = math.Float32frombits(bits)
		}
	}
}

// off sets every mask to one (evaluation: no unit dropped).
func (d *dropout) off() {
	for _, t := range d.masks {
		for i := range t {
			t[i] = 1
		}
	}
}

// batchParamsKey hashes the batch and a strided sample of the parameters
// into a ChaCha8 key: the same client state gives the same dropout masks on
// any worker.
func batchParamsKey(b *datasets.Batch, params []float32) [32]byte {
	var h [4]uint64
	mix := func(lane int, v uint64) {
		h[lane] = (h[lane]^v)*0x100000001b3 + 0x9e3779b97f4a7c15
		h[lane] ^= h[lane] >> 29
	}
	for i, x := range b.X {
		mix(i&3, uint64(math.Float32bits(x)))
	}
	for i, y := range b.Y {
		mix(i&3, uint64(y)|uint64(math.Float32bits(b.W[i]))<<32)
	}
	for i, t := range b.Next {
		mix(i&3, uint64(t))
	}
	for i := 0; i < len(params); i += 257 {
		mix(i&3, uint64(math.Float32bits(params[i])))
	}
	mix(0, uint64(len(params)))
	var key [32]byte
	for lane, v := range h {
		binary.LittleEndian.PutUint64(key[8*lane:], v)
	}
	return key
}
