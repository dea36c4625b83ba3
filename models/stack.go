package models

import (
	"fmt"
	"math/rand/v2"

	"dpfl/datasets"

	G "gorgonia.org/gorgonia"
)

// stack is a model built from a layer list (the kind layers, and the other
// kinds' presets): its parameters are the layers' tensors in list order,
// drawn in that order by Init.
type stack struct {
	*graphModel
	drop    dropout
	sp      stackSpec
	inits   []paramInit
	x, y, w []float32       // inputs: rows or time-major token ids, class or next-token ids, weights
	sub     *stack          // evaluation graph for large batches (eval.go)
	chunk   *datasets.Batch // its batch
}

// stochasticStack is a stack with dropout (or a preset that has always
// drawn a dropout stream): it takes the caller's RNG for its masks.
type stochasticStack struct{ *stack }

func (m stochasticStack) SetRNG(r *rand.Rand) { m.drop.SetRNG(r) }

var (
	_ Model      = (*stack)(nil)
	_ Stochastic = stochasticStack{}
)

// buildStack builds sp for batches of the given rows as a Model (Stochastic
// when it has dropout layers or sp.stochastic).
func buildStack(sp stackSpec, batch int) (Model, error) {
	m, err := newStack(sp, batch, nil)
	if err != nil {
		return nil, err
	}
	if sp.stochastic || len(m.drop.masks) > 0 {
		return stochasticStack{m}, nil
	}
	return m, nil
}

// newStack builds sp for batches of the given rows on params (fresh
// parameters when nil).
func newStack(sp stackSpec, batch int, params []float32) (*stack, error) {
	sp.batch = batch
	plan, err := sp.plan()
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	gm := newGraphModel(plan.lay, params)
	m := &stack{graphModel: gm, sp: sp, inits: plan.inits}
	var x, y, w *G.Node
	if sp.text {
		n := sp.dim * batch
		x, m.x = gm.input("tokens", n)
		y, m.y = gm.input("next", n)
		w, m.w = gm.input("w", n)
	} else {
		x, m.x = gm.input("x", batch, sp.dim)
		y, m.y = gm.input("y", batch)
		w, m.w = gm.input("w", batch)
	}
	c := &net{gm: gm, drop: &m.drop}
	h, err := sp.pass(c, x)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	loss, err := softmaxXent(h.n, y, w)
	if err != nil {
		return nil, fmt.Errorf("models: %s: %w", sp.headKey, err)
	}
	if err := gm.finish(loss, h.n); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *stack) BatchSize() int { return m.batch() }

func (m *stack) batch() int { return m.sp.batch }

// Init draws each tensor from its layer's initializer, in layout order.
func (m *stack) Init(r *rand.Rand) {
	for k, f := range m.inits {
		f(r, m.lay.view(m.params, k))
	}
}

func (m *stack) check(b *datasets.Batch) {
	B, D := m.batch(), m.sp.dim
	if b.Size != B || b.Dim != D || m.sp.text && len(b.Next) != B*D {
		panic(fmt.Sprintf("models: batch of %d x %d (%d targets) given to a model built for %d x %d", b.Size, b.Dim, len(b.Next), B, D))
	}
}

func (m *stack) load(b *datasets.Batch) {
	m.check(b)
	if m.sp.text {
		loadTokens(m.x, m.y, m.w, b, m.sp.dim, m.batch(), m.sp.classes)
		return
	}
	copy(m.x, b.X)
	copy(m.w, b.W)
	labels(m.y, b.Y, m.sp.classes)
}

func (m *stack) Grad(grad []float32, b *datasets.Batch) (float64, error) {
	m.load(b)
	if len(m.drop.masks) > 0 {
		m.drop.draw(b, m.params)
	}
	return m.grad(grad), nil
}

func (m *stack) Eval(b *datasets.Batch) (Score, error) {
	m.check(b)
	if m.batch() > evalRows {
		if m.sub == nil {
			sub, err := newStack(m.sp, evalRows, m.params)
			if err != nil {
				return Score{}, err
			}
			m.sub, m.chunk = sub, datasets.NewBatch(evalRows, m.sp.dim)
		}
		return evalChunks(m.sub, m.chunk, b)
	}
	m.load(b)
	m.drop.off()
	if m.sp.text {
		return scoreTokens(m.logits(), b, m.sp.dim, m.batch(), m.sp.classes, m.sp.name)
	}
	return scoreRows(m.logits(), b, m.sp.classes), nil
}
