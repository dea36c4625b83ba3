package models

import (
	"fmt"
	"hash"
	"hash/fnv"
	"slices"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// dpfl's models are Gorgonia graphs: Gorgonia builds and type-checks the
// graph and differentiates it symbolically (G.Grad through each op's
// SymDiff). The ops are dpfl's own (this file's op wrapper around a kern:
// dense layers, convolutions, the LSTM layer, softmax cross-entropy), each
// with a fixed shape, and the compiled graph runs on a small executor of
// dpfl's (program) instead of Gorgonia's tape machine: every node's output
// buffer is allocated once, when the model is built, and a run calls each
// op's kernel in order, so a training step allocates nothing. (Gorgonia
// v0.9.18's tape machine allocates on every instruction, locks the OS
// thread and starts a goroutine per run.) The ops still implement Gorgonia's
// Do, so the same graph also runs on Gorgonia's tape machine, which the
// tests use as the executor's oracle.

// kern is the computation of one of dpfl's ops, its shapes fixed when the
// graph is built.
type kern interface {
	// name identifies the op and its static parameters (hashing, printing).
	name() string
	// shape is the output's shape (empty for a scalar).
	shape() tensor.Shape
	// run computes the output into out from the inputs' values, each slice
	// of its node's static size. It must overwrite all of out and allocate
	// nothing.
	run(out []float32, in [][]float32)
}

// diffKern is a differentiable kern.
type diffKern interface {
	kern
	// diffWRT reports which inputs the output is differentiable in.
	diffWRT() []bool
	// symDiff returns the gradient nodes of the inputs given the output
	// node and its gradient (nil for inputs not differentiated).
	symDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error)
}

// op adapts a kern to Gorgonia's Op and SDOp interfaces.
type op struct {
	k      kern
	inDims []int
	id     string
}

// apply adds k applied to in to their graph.
func apply(k kern, in ...*G.Node) (*G.Node, error) {
	o := &op{k: k, id: k.name()}
	for _, n := range in {
		o.inDims = append(o.inDims, n.Dims())
	}
	return G.ApplyOp(o, in...)
}

func tensorType(dims int) hm.Type {
	if dims == 0 {
		return tensor.Float32
	}
	return G.TensorType{Dims: dims, Of: tensor.Float32}
}

func (o *op) Arity() int { return len(o.inDims) }
func (o *op) Type() hm.Type {
	ts := make([]hm.Type, 0, len(o.inDims)+1)
	for _, d := range o.inDims {
		ts = append(ts, tensorType(d))
	}
	return hm.NewFnType(append(ts, tensorType(len(o.k.shape())))...)
}
func (o *op) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if s := o.k.shape(); len(s) > 0 {
		return s.Clone(), nil
	}
	return tensor.ScalarShape(), nil
}
func (o *op) ReturnsPtr() bool      { return false }
func (o *op) CallsExtern() bool     { return false }
func (o *op) OverwritesInput() int  { return -1 }
func (o *op) WriteHash(h hash.Hash) { fmt.Fprint(h, o.id) }
func (o *op) Hashcode() uint32 {
	h := fnv.New32a()
	fmt.Fprint(h, o.id)
	return h.Sum32()
}
func (o *op) String() string { return o.id }

func (o *op) DiffWRT(n int) []bool {
	if d, ok := o.k.(diffKern); ok {
		return d.diffWRT()
	}
	return make([]bool, n)
}

func (o *op) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	d, ok := o.k.(diffKern)
	if !ok {
		return nil, fmt.Errorf("models: %s is not differentiable", o.id)
	}
	return d.symDiff(in, out, grad)
}

// Do runs the kern on freshly allocated output (Gorgonia's machines).
func (o *op) Do(vals ...G.Value) (G.Value, error) {
	in := make([][]float32, len(vals))
	for i, v := range vals {
		switch d := v.Data().(type) {
		case []float32:
			in[i] = d
		case float32:
			in[i] = []float32{d}
		default:
			return nil, fmt.Errorf("models: %s: input %d is %T, want float32", o.id, i, d)
		}
	}
	s := o.k.shape()
	out := make([]float32, max(1, s.TotalSize()))
	o.k.run(out, in)
	if len(s) == 0 {
		return G.NewF32(out[0]), nil
	}
	return tensor.New(tensor.WithShape(s.Clone()...), tensor.WithBacking(out)), nil
}

// inPlacer is implemented by elementwise kerns that may write their output
// over input inPlace() (each output element depends only on the same
// element of that input).
type inPlacer interface{ inPlace() int }

// executor compiles programs over one graph. The leaves (inputs,
// parameters, constants) are read from the values bound to them, which the
// model overwrites in place.
type executor struct{ g *G.ExprGraph }

func newExecutor(g *G.ExprGraph) *executor { return &executor{g: g} }

// program is the ops that compute some nodes (its outputs), in dependency
// order. Its buffers are allocated on its first run, sized and shared by
// liveness: a node's buffer is reused once every op reading it has run
// (outputs are kept), and elementwise ops overwrite a dying input.
type program struct {
	e     *executor
	outs  []*G.Node
	nodes []*G.Node   // output node of each step
	kerns []kern      // its computation
	ins   [][]*G.Node // input nodes of each step
	steps []step      // with buffers, once allocated
	vals  map[*G.Node][]float32
	pre   map[*G.Node][]float32 // outputs bound before the first run
}

type step struct {
	k   kern
	out []float32
	in  [][]float32
}

// compile returns the program computing outs.
func (e *executor) compile(outs ...*G.Node) (*program, error) {
	p := &program{e: e, outs: outs}
	done := map[*G.Node]bool{}
	var visit func(n *G.Node) error
	visit = func(n *G.Node) error {
		if done[n] {
			return nil
		}
		done[n] = true
		var kids []*G.Node
		for it := e.g.From(n.ID()); it.Next(); {
			kids = append(kids, it.Node().(*G.Node))
		}
		for _, c := range kids {
			if err := visit(c); err != nil {
				return err
			}
		}
		k, isOp := kernOf(n, kids)
		if !isOp {
			if len(kids) > 0 || n.Value() == nil {
				return fmt.Errorf("models: node %v (op %v) is not one of dpfl's ops", n, n.Op())
			}
			switch d := n.Value().Data().(type) {
			case []float32, float32:
			default:
				return fmt.Errorf("models: leaf %v holds %T, want float32", n, d)
			}
			return nil
		}
		p.nodes = append(p.nodes, n)
		p.kerns = append(p.kerns, k)
		p.ins = append(p.ins, kids)
		return nil
	}
	for _, n := range outs {
		if err := visit(n); err != nil {
			return nil, err
		}
		if !slices.Contains(p.nodes, n) {
			return nil, fmt.Errorf("models: program output %v is not computed by an op", n)
		}
	}
	return p, nil
}

// alloc gives every step its buffers.
func (p *program) alloc() {
	p.vals = map[*G.Node][]float32{}
	isOut := map[*G.Node]bool{}
	for _, n := range p.outs {
		isOut[n] = true
	}
	last := map[*G.Node]int{} // last step reading a computed node
	for i, in := range p.ins {
		for _, c := range in {
			last[c] = i
		}
	}
	var free [][]float32 // released buffers (full capacity)
	take := func(size int) []float32 {
		best := -1
		for i, b := range free {
			if cap(b) >= size && (best < 0 || cap(b) < cap(free[best])) {
				best = i
			}
		}
		if best < 0 {
			return make([]float32, size)
		}
		b := free[best]
		free[best] = free[len(free)-1]
		free = free[:len(free)-1]
		return b[:size]
	}
	leaf := func(n *G.Node) []float32 {
		if v, ok := p.vals[n]; ok {
			return v
		}
		var v []float32
		switch d := n.Value().Data().(type) {
		case []float32:
			v = d
		case float32:
			v = []float32{d}
		}
		p.vals[n] = v
		return v
	}
	computed := map[*G.Node]bool{}
	for _, n := range p.nodes {
		computed[n] = true
	}
	p.steps = make([]step, len(p.nodes))
	for i, n := range p.nodes {
		k := p.kerns[i]
		size := max(1, k.shape().TotalSize())
		s := step{k: k}
		for _, c := range p.ins[i] {
			if computed[c] {
				s.in = append(s.in, p.vals[c])
			} else {
				s.in = append(s.in, leaf(c))
			}
		}
		// The output: over a dying input of an elementwise op, or a
		// released buffer, or a new one.
		if ip, ok := k.(inPlacer); ok {
			c := p.ins[i][ip.inPlace()]
			if computed[c] && !isOut[c] && last[c] == i && len(p.vals[c]) == size && !p.readTwice(i, c) {
				s.out = p.vals[c]
			}
		}
		if b, ok := p.pre[n]; ok {
			s.out = b
		}
		if s.out == nil {
			s.out = take(size)
		}
		p.vals[n] = s.out
		p.steps[i] = s
		// Release inputs whose last reader this is.
		for j, c := range p.ins[i] {
			if computed[c] && !isOut[c] && last[c] == i && &p.vals[c][0] != &s.out[0] && firstIndex(p.ins[i], c) == j {
				free = append(free, p.vals[c][:cap(p.vals[c])])
			}
		}
	}
}

// kernOf returns the computation of node n of children kids: its kern for
// dpfl's ops, and dpfl's sum for Gorgonia's addition of two float32
// tensors of n's shape (G.Grad adds the gradients of a node read by two
// ops, such as a residual block's input, with Gorgonia's Add; the sum of
// two values is the same either way). ok is false for any other node.
func kernOf(n *G.Node, kids []*G.Node) (k kern, ok bool) {
	if o, isOp := n.Op().(*op); isOp {
		if len(kids) != len(o.inDims) {
			return nil, false
		}
		return o.k, true
	}
	if len(kids) != 2 || n.Op() == nil || n.Op().String() != "+ false" || n.Dtype() != tensor.Float32 {
		return nil, false
	}
	for _, c := range kids {
		if c.Dtype() != tensor.Float32 || !c.Shape().Eq(n.Shape()) {
			return nil, false
		}
	}
	return sum{n.Shape().Clone()}, true
}

// readTwice reports whether step i reads c more than once.
func (p *program) readTwice(i int, c *G.Node) bool {
	n := 0
	for _, x := range p.ins[i] {
		if x == c {
			n++
		}
	}
	return n > 1
}

func firstIndex(ns []*G.Node, c *G.Node) int {
	for i, x := range ns {
		if x == c {
			return i
		}
	}
	return -1
}

// run executes the program once (allocating its buffers the first time).
func (p *program) run() {
	if p.steps == nil {
		p.alloc()
	}
	for i := range p.steps {
		s := &p.steps[i]
		s.k.run(s.out, s.in)
	}
}

// out returns the buffer of output i (valid after a run; allocated on the
// first call).
func (p *program) out(i int) []float32 {
	if p.steps == nil {
		p.alloc()
	}
	return p.vals[p.outs[i]]
}

// bindOut makes the program write output i into buf (of the output's size)
// from now on; no step may read that output.
func (p *program) bindOut(i int, buf []float32) {
	n := p.outs[i]
	for j, m := range p.nodes {
		for _, c := range p.ins[j] {
			if c == n {
				panic(fmt.Sprintf("models: bound output %v is read by %v", n, m))
			}
		}
	}
	if p.steps == nil { // not allocated yet: alloc will use buf
		if p.pre == nil {
			p.pre = map[*G.Node][]float32{}
		}
		p.pre[n] = buf
		return
	}
	for j, m := range p.nodes {
		if m == n {
			p.steps[j].out = buf
		}
	}
	p.vals[n] = buf
}
