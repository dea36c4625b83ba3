package models

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SoftmaxXent returns the scalar node -Σ_i w_i log softmax(logits_i)[label_i]
// for logits [B, C], one-hot targets y [B, C] and row weights w [B].
//
// It replaces Gorgonia v0.9.18's LogSoftMax, whose float32 kernel subtracts
// the first row's first entry instead of each row's maximum (exp overflows on
// large logits) and starts one goroutine per row. Here each row subtracts its
// own maximum and the work runs on the calling goroutine.
func SoftmaxXent(logits, y, w *G.Node) (*G.Node, error) {
	return G.ApplyOp(xentOp{}, logits, y, w)
}

// xentOp is the forward op of SoftmaxXent.
type xentOp struct{}

func (xentOp) Arity() int { return 3 }
func (xentOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m, v := G.TensorType{Dims: 2, Of: a}, G.TensorType{Dims: 1, Of: a}
	return hm.NewFnType(m, m, v, a)
}
func (xentOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return tensor.ScalarShape(), nil }
func (xentOp) ReturnsPtr() bool                               { return false }
func (xentOp) CallsExtern() bool                              { return false }
func (xentOp) OverwritesInput() int                           { return -1 }
func (op xentOp) WriteHash(h hash.Hash)                       { fmt.Fprint(h, op.String()) }
func (op xentOp) Hashcode() uint32                            { return hashOf(op) }
func (xentOp) String() string                                 { return "dpflSoftmaxXent" }
func (xentOp) DiffWRT(int) []bool                             { return []bool{true, false, false} }

func (xentOp) Do(vals ...G.Value) (G.Value, error) {
	lg, y, w, err := xentInputs(vals)
	if err != nil {
		return nil, err
	}
	c := len(y) / len(w)
	var loss float64
	for i, wi := range w {
		if wi == 0 {
			continue
		}
		row, yr := lg[i*c:(i+1)*c], y[i*c:(i+1)*c]
		mx, lse := rowLogSumExp(row)
		for k, yk := range yr {
			if yk != 0 {
				loss -= float64(wi) * float64(yk) * (float64(row[k]) - mx - lse)
			}
		}
	}
	return G.NewF32(float32(loss)), nil
}

func (xentOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(xentGradOp{}, inputs[0], inputs[1], inputs[2], grad)
	return G.Nodes{d, nil, nil}, err
}

// xentGradOp computes d loss / d logits = g · w_i (softmax_i Σ_k y_ik − y_i).
type xentGradOp struct{}

func (xentGradOp) Arity() int { return 4 }
func (xentGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m, v := G.TensorType{Dims: 2, Of: a}, G.TensorType{Dims: 1, Of: a}
	return hm.NewFnType(m, m, v, a, m)
}
func (xentGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("models: softmax-xent gradient: input shape %v", in[0])
	}
	return s.Clone(), nil
}
func (xentGradOp) ReturnsPtr() bool         { return false }
func (xentGradOp) CallsExtern() bool        { return false }
func (xentGradOp) OverwritesInput() int     { return -1 }
func (op xentGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op xentGradOp) Hashcode() uint32      { return hashOf(op) }
func (xentGradOp) String() string           { return "dpflSoftmaxXentGrad" }
func (xentGradOp) DiffWRT(int) []bool       { return []bool{false, false, false, false} }
func (xentGradOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("models: softmax-xent gradient is not differentiable")
}

func (xentGradOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 4 {
		return nil, fmt.Errorf("models: softmax-xent gradient takes 4 inputs, got %d", len(vals))
	}
	lg, y, w, err := xentInputs(vals[:3])
	if err != nil {
		return nil, err
	}
	g, ok := vals[3].Data().(float32)
	if !ok {
		return nil, fmt.Errorf("models: softmax-xent gradient: upstream gradient is %T, want float32", vals[3].Data())
	}
	c := len(y) / len(w)
	out := make([]float32, len(lg))
	for i, wi := range w {
		if wi == 0 {
			continue
		}
		row, yr, o := lg[i*c:(i+1)*c], y[i*c:(i+1)*c], out[i*c:(i+1)*c]
		mx, lse := rowLogSumExp(row)
		var ysum float64
		for _, yk := range yr {
			ysum += float64(yk)
		}
		scale := float64(g) * float64(wi)
		for k := range row {
			p := math.Exp(float64(row[k]) - mx - lse)
			o[k] = float32(scale * (p*ysum - float64(yr[k])))
		}
	}
	return tensor.New(tensor.WithShape(len(w), c), tensor.WithBacking(out)), nil
}

// rowLogSumExp returns the row maximum m and log Σ exp(row − m).
func rowLogSumExp(row []float32) (m, lse float64) {
	// A plain comparison (math.Max's NaN and signed-zero handling showed up
	// in profiles); a NaN entry still makes lse NaN through exp below.
	mx := float32(math.Inf(-1))
	for _, v := range row {
		if v > mx {
			mx = v
		}
	}
	m = float64(mx)
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v) - m)
	}
	return m, math.Log(s)
}

func xentInputs(vals []G.Value) (logits, y, w []float32, err error) {
	if len(vals) != 3 {
		return nil, nil, nil, fmt.Errorf("models: softmax-xent takes 3 inputs, got %d", len(vals))
	}
	var ok [3]bool
	logits, ok[0] = vals[0].Data().([]float32)
	y, ok[1] = vals[1].Data().([]float32)
	w, ok[2] = vals[2].Data().([]float32)
	if !ok[0] || !ok[1] || !ok[2] {
		return nil, nil, nil, fmt.Errorf("models: softmax-xent needs float32 tensors")
	}
	if len(w) == 0 || len(logits) != len(y) || len(y)%len(w) != 0 {
		return nil, nil, nil, fmt.Errorf("models: softmax-xent shapes: %d logits, %d targets, %d weights", len(logits), len(y), len(w))
	}
	return logits, y, w, nil
}

func hashOf(op fmt.Stringer) uint32 {
	h := fnv.New32a()
	fmt.Fprint(h, op.String())
	return h.Sum32()
}
