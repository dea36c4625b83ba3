package models

import (
	"fmt"

	"dpfl/models/internal/vec"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Dense-layer ops. Matrices are row-major float32.

// linear is y = x·W + b for x [rows, in], W [in, out], b [out]: each
// output starts from its bias and accumulates the products in order (one
// fused multiply-add chain, see package gemm).
type linear struct {
	rows, in, out int
	mm            *blasCtx
}

// denseLayer adds y = x·W + b to x's graph.
func denseLayer(mm *blasCtx, x, w, b *G.Node) (*G.Node, error) {
	xs, ws, bs := x.Shape(), w.Shape(), b.Shape()
	if len(xs) != 2 || len(ws) != 2 || len(bs) != 1 || xs[1] != ws[0] || bs[0] != ws[1] {
		return nil, fmt.Errorf("models: linear layer shapes x %v, W %v, b %v", xs, ws, bs)
	}
	return apply(linear{xs[0], xs[1], ws[1], mm}, x, w, b)
}

func (l linear) name() string        { return fmt.Sprintf("linear(%dx%d→%d)", l.rows, l.in, l.out) }
func (l linear) shape() tensor.Shape { return tensor.Shape{l.rows, l.out} }
func (l linear) diffWRT() []bool     { return []bool{true, true, true} }
func (l linear) run(y []float32, in [][]float32) {
	x, w, b := in[0], in[1], in[2]
	// A band of rows at a time, so the bias rows are still in cache when
	// the product adds to them (every element is computed the same way
	// whatever the band: gemm's order does not depend on the shape).
	for r0 := 0; r0 < l.rows; r0 += linearBand {
		r1 := min(r0+linearBand, l.rows)
		for r := r0; r < r1; r++ {
			copy(y[r*l.out:(r+1)*l.out], b)
		}
		l.mm.Sgemm(false, false, r1-r0, l.out, l.in, 1, x[r0*l.in:], l.in, w, l.out, 1, y[r0*l.out:], l.out)
	}
}

// linearBand is how many rows a linear layer's forward pass initializes
// and multiplies at a time.
const linearBand = 48

func (l linear) symDiff(in G.Nodes, _, g *G.Node) (G.Nodes, error) {
	dx, err := apply(matmul{m: l.rows, n: l.in, k: l.out, tB: true, mm: l.mm}, g, in[1])
	if err != nil {
		return nil, err
	}
	dw, err := apply(matmul{m: l.in, n: l.out, k: l.rows, tA: true, mm: l.mm}, in[0], g)
	if err != nil {
		return nil, err
	}
	db, err := apply(colSum{l.rows, l.out}, g)
	return G.Nodes{dx, dw, db}, err
}

// matmul is op(A)·op(B) with op(A) m×k and op(B) k×n (tA: A stored k×m).
type matmul struct {
	m, n, k int
	tA, tB  bool
	mm      *blasCtx
}

func (o matmul) name() string {
	return fmt.Sprintf("matmul(%dx%d·%dx%d,%v,%v)", o.m, o.k, o.k, o.n, o.tA, o.tB)
}
func (o matmul) shape() tensor.Shape { return tensor.Shape{o.m, o.n} }
func (o matmul) run(c []float32, in [][]float32) {
	lda, ldb := o.k, o.n
	if o.tA {
		lda = o.m
	}
	if o.tB {
		ldb = o.k
	}
	o.mm.Sgemm(o.tA, o.tB, o.m, o.n, o.k, 1, in[0], lda, in[1], ldb, 0, c, o.n)
}

// colSum sums the rows of a [rows, cols] matrix (in row order).
type colSum struct{ rows, cols int }

func (o colSum) name() string        { return fmt.Sprintf("colsum(%dx%d)", o.rows, o.cols) }
func (o colSum) shape() tensor.Shape { return tensor.Shape{o.cols} }
func (o colSum) run(s []float32, in [][]float32) {
	x := in[0]
	copy(s, x[:o.cols])
	vec.SumRows(s, x[o.cols:o.rows*o.cols]) // each column's sum in row order
}

// addTo adds x into s elementwise.
func addTo(s, x []float32) { vec.Add(s, x) }

// relu is max(x, 0) elementwise (NaN stays NaN).
type relu struct{ shp tensor.Shape }

// rectify adds max(x, 0) to x's graph.
func rectify(x *G.Node) (*G.Node, error) { return apply(relu{x.Shape()}, x) }

func (o relu) name() string        { return fmt.Sprintf("relu%v", o.shp) }
func (o relu) shape() tensor.Shape { return o.shp }
func (o relu) diffWRT() []bool     { return []bool{true} }
func (o relu) inPlace() int        { return 0 }
func (o relu) run(y []float32, in [][]float32) {
	vec.Relu(y, in[0])
}
func (o relu) symDiff(_ G.Nodes, out, g *G.Node) (G.Nodes, error) {
	d, err := apply(reluGrad(o), out, g)
	return G.Nodes{d}, err
}

// reluGrad passes the gradient where the ReLU's output is positive.
type reluGrad struct{ shp tensor.Shape }

func (o reluGrad) name() string        { return fmt.Sprintf("relugrad%v", o.shp) }
func (o reluGrad) shape() tensor.Shape { return o.shp }
func (o reluGrad) inPlace() int        { return 1 }
func (o reluGrad) run(d []float32, in [][]float32) {
	vec.ReluGrad(d, in[0], in[1])
}

// mask multiplies x elementwise by a constant mask input (dropout).
type mask struct{ shp tensor.Shape }

// applyMask adds x ⊙ m to x's graph; m is not differentiated.
func applyMask(x, m *G.Node) (*G.Node, error) {
	if !x.Shape().Eq(m.Shape()) {
		return nil, fmt.Errorf("models: mask of shape %v for %v", m.Shape(), x.Shape())
	}
	return apply(mask{x.Shape()}, x, m)
}

func (o mask) name() string        { return fmt.Sprintf("mask%v", o.shp) }
func (o mask) shape() tensor.Shape { return o.shp }
func (o mask) diffWRT() []bool     { return []bool{true, false} }
func (o mask) inPlace() int        { return 0 }
func (o mask) run(y []float32, in [][]float32) {
	vec.Mul(y, in[0], in[1])
}
func (o mask) symDiff(in G.Nodes, _, g *G.Node) (G.Nodes, error) {
	d, err := apply(o, g, in[1])
	return G.Nodes{d, nil}, err
}
