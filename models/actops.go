package models

import (
	"fmt"

	"dpfl/models/internal/vec"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Elementwise ops of the layer lists: tanh, GELU and the sum of two
// activations (residual blocks).

// tanhOp is tanh(x) elementwise.
type tanhOp struct{ shp tensor.Shape }

// tanhAct adds tanh(x) to x's graph.
func tanhAct(x *G.Node) (*G.Node, error) { return apply(tanhOp{x.Shape()}, x) }

func (o tanhOp) name() string        { return fmt.Sprintf("tanh%v", o.shp) }
func (o tanhOp) shape() tensor.Shape { return o.shp }
func (o tanhOp) diffWRT() []bool     { return []bool{true} }
func (o tanhOp) inPlace() int        { return 0 }
func (o tanhOp) run(y []float32, in [][]float32) {
	vec.Tanh(y, in[0])
}
func (o tanhOp) symDiff(_ G.Nodes, out, g *G.Node) (G.Nodes, error) {
	d, err := apply(tanhGrad(o), out, g)
	return G.Nodes{d}, err
}

// tanhGrad is g·(1 − y²) for y = tanh(x).
type tanhGrad struct{ shp tensor.Shape }

func (o tanhGrad) name() string        { return fmt.Sprintf("tanhgrad%v", o.shp) }
func (o tanhGrad) shape() tensor.Shape { return o.shp }
func (o tanhGrad) inPlace() int        { return 1 }
func (o tanhGrad) run(d []float32, in [][]float32) {
	y, g := in[0], in[1]
	for i := range d {
		d[i] = g[i] * (1 - y[i]*y[i])
	}
}

// sum is a + b elementwise (a residual block's output); its gradient is the
// output's, to both inputs.
type sum struct{ shp tensor.Shape }

// addNodes adds a + b to their graph.
func addNodes(a, b *G.Node) (*G.Node, error) {
	if !a.Shape().Eq(b.Shape()) {
		return nil, fmt.Errorf("models: sum of shapes %v and %v", a.Shape(), b.Shape())
	}
	return apply(sum{a.Shape()}, a, b)
}

func (o sum) name() string        { return fmt.Sprintf("sum%v", o.shp) }
func (o sum) shape() tensor.Shape { return o.shp }
func (o sum) diffWRT() []bool     { return []bool{true, true} }
func (o sum) inPlace() int        { return 1 }
func (o sum) run(y []float32, in [][]float32) {
	if &y[0] == &in[1][0] { // written over b (inPlace)
		vec.Add(y, in[0])
		return
	}
	copy(y, in[0])
	vec.Add(y, in[1])
}
func (o sum) symDiff(_ G.Nodes, _, g *G.Node) (G.Nodes, error) {
	return G.Nodes{g, g}, nil
}

// gelu is x·Φ(x) elementwise (Φ the standard normal distribution
// function; the exact form, PyTorch's nn.GELU default), in float32 by
// vec.Gelu: Φ from e^(−x²/2) and a fitted polynomial, within 2.5e-7 of the
// true value (the vec package's doc states the bounds).
type gelu struct{ shp tensor.Shape }

// geluAct adds gelu(x) to x's graph.
func geluAct(x *G.Node) (*G.Node, error) { return apply(gelu{x.Shape()}, x) }

func (o gelu) name() string        { return fmt.Sprintf("gelu%v", o.shp) }
func (o gelu) shape() tensor.Shape { return o.shp }
func (o gelu) diffWRT() []bool     { return []bool{true} }
func (o gelu) run(y []float32, in [][]float32) {
	vec.Gelu(y, in[0])
}
func (o gelu) symDiff(in G.Nodes, _, g *G.Node) (G.Nodes, error) {
	d, err := apply(geluGrad(o), in[0], g)
	return G.Nodes{d}, err
}

// geluGrad is g·(Φ(x) + x·φ(x)), Φ and φ computed again from x (no state
// is kept from the forward pass).
type geluGrad gelu

func (o geluGrad) name() string        { return fmt.Sprintf("gelugrad%v", o.shp) }
func (o geluGrad) shape() tensor.Shape { return o.shp }
func (o geluGrad) inPlace() int        { return 1 }
func (o geluGrad) run(d []float32, in [][]float32) {
	vec.GeluGrad(d, in[0], in[1])
}
