package models

import (
	"fmt"
	"math"

	"dpfl/models/internal/vec"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Ops of the sequence layers: a learned positional embedding and multi-head
// causal self-attention. Rows are time-major (row t·batch + i is token t of
// sequence i), as the embedding and the LSTM lay them out.

// posAdd adds row t of a table [seq, width] to every row of step t.
type posAdd struct{ seq, batch, width int }

// addPositions adds the table's rows to x [seq·batch, width] by step.
func addPositions(x, table *G.Node, seq, batch int) (*G.Node, error) {
	xs, ts := x.Shape(), table.Shape()
	if len(xs) != 2 || xs[0] != seq*batch || !ts.Eq(tensor.Shape{seq, xs[1]}) {
		return nil, fmt.Errorf("models: positions %v for x %v (%d steps of %d)", ts, xs, seq, batch)
	}
	return apply(posAdd{seq, batch, xs[1]}, x, table)
}

func (o posAdd) name() string        { return fmt.Sprintf("posadd(%dx%d,%d)", o.seq, o.batch, o.width) }
func (o posAdd) shape() tensor.Shape { return tensor.Shape{o.seq * o.batch, o.width} }
func (o posAdd) diffWRT() []bool     { return []bool{true, true} }
func (o posAdd) inPlace() int        { return 0 }
func (o posAdd) run(y []float32, in [][]float32) {
	x, p := in[0], in[1]
	W := o.width
	if &y[0] != &x[0] {
		copy(y, x)
	}
	for r := 0; r < o.seq*o.batch; r++ {
		t := r / o.batch
		vec.Add(y[r*W:(r+1)*W], p[t*W:(t+1)*W])
	}
}
func (o posAdd) symDiff(_ G.Nodes, _, g *G.Node) (G.Nodes, error) {
	dp, err := apply(posGrad(o), g)
	return G.Nodes{g, dp}, err
}

// posGrad sums each step's rows of the gradient (in row order).
type posGrad posAdd

func (o posGrad) name() string        { return "grad" + posAdd(o).name() }
func (o posGrad) shape() tensor.Shape { return tensor.Shape{o.seq, o.width} }
func (o posGrad) run(d []float32, in [][]float32) {
	g, W := in[0], o.width
	clear(d)
	for r := 0; r < o.seq*o.batch; r++ {
		t := r / o.batch
		vec.Add(d[t*W:(t+1)*W], g[r*W:(r+1)*W])
	}
}

// attention is multi-head causal self-attention on the projected queries,
// keys and values: in qkv [seq·batch, 3·width] (queries, keys, values side
// by side, each split into heads of width/heads), out [seq·batch, width]:
// head h of token t is Σ_{s ≤ t} p_ts v_s, p_t = softmax_s(q_t·k_s /
// sqrt(width/heads)) over the steps s ≤ t of its own sequence.
type attention struct {
	seq, batch, width, heads int
	st                       *attnState
}

// attnState keeps the attention weights for the gradient, and its scratch.
type attnState struct {
	p  []float32 // [batch, heads, seq, seq], zero above the diagonal
	dp []float32 // [seq]
}

// attend adds the attention of qkv to its graph.
func attend(qkv *G.Node, seq, batch, heads int) (*G.Node, error) {
	s := qkv.Shape()
	if len(s) != 2 || s[0] != seq*batch || s[1]%3 != 0 || (s[1]/3)%heads != 0 {
		return nil, fmt.Errorf("models: attention of %v with %d heads over %d steps of %d", s, heads, seq, batch)
	}
	return apply(attention{seq, batch, s[1] / 3, heads, new(attnState)}, qkv)
}

func (o attention) name() string {
	return fmt.Sprintf("attention(%dx%d,%d/%d)@%p", o.seq, o.batch, o.width, o.heads, o.st)
}
func (o attention) shape() tensor.Shape { return tensor.Shape{o.seq * o.batch, o.width} }
func (o attention) diffWRT() []bool     { return []bool{true} }

// vecs returns the query, key and value of head h of token t of sequence b.
func (o attention) vecs(qkv []float32, t, b, h int) (q, k, v []float32) {
	dh := o.width / o.heads
	row := qkv[(t*o.batch+b)*3*o.width:]
	return row[h*dh : (h+1)*dh], row[o.width+h*dh : o.width+(h+1)*dh], row[2*o.width+h*dh : 2*o.width+(h+1)*dh]
}

func (o attention) state() *attnState {
	if o.st.p == nil {
		o.st.p, o.st.dp = make([]float32, o.batch*o.heads*o.seq*o.seq), make([]float32, o.seq)
	}
	return o.st
}

func dot(a, b []float32) float32 {
	var s float32
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func (o attention) run(out []float32, in [][]float32) {
	qkv, st := in[0], o.state()
	T, dh := o.seq, o.width/o.heads
	scale := float32(1 / math.Sqrt(float64(dh)))
	for b := 0; b < o.batch; b++ {
		for h := 0; h < o.heads; h++ {
			for t := 0; t < T; t++ {
				q, _, _ := o.vecs(qkv, t, b, h)
				p := st.p[((b*o.heads+h)*T+t)*T:][:T]
				mx := float32(math.Inf(-1))
				for s := 0; s <= t; s++ {
					_, k, _ := o.vecs(qkv, s, b, h)
					p[s] = dot(q, k) * scale
					mx = max(mx, p[s])
				}
				vec.Exp(p[:t+1], p[:t+1], mx)
				inv := float32(1 / vec.Sum(p[:t+1]))
				clear(p[t+1:])
				y := out[(t*o.batch+b)*o.width+h*dh:][:dh]
				clear(y)
				for s := 0; s <= t; s++ {
					p[s] *= inv
					_, _, v := o.vecs(qkv, s, b, h)
					vec.Axpy(y, p[s], v)
				}
			}
		}
	}
}

func (o attention) symDiff(in G.Nodes, _, g *G.Node) (G.Nodes, error) {
	d, err := apply(attnGrad(o), in[0], g)
	return G.Nodes{d}, err
}

// attnGrad is the gradient of the attention's input qkv: with dp_ts =
// dy_t·v_s and ds_ts = p_ts (dp_ts − Σ_s' p_ts' dp_ts'), dq_t = Σ_s
// ds_ts k_s/√dh, dk_s = Σ_t ds_ts q_t/√dh, dv_s = Σ_t p_ts dy_t.
type attnGrad attention

func (o attnGrad) name() string {
	return fmt.Sprintf("attentionGrad(%dx%d,%d/%d)@%p", o.seq, o.batch, o.width, o.heads, o.st)
}
func (o attnGrad) shape() tensor.Shape { return tensor.Shape{o.seq * o.batch, 3 * o.width} }
func (o attnGrad) run(d []float32, in [][]float32) {
	a := attention(o)
	qkv, dy, st := in[0], in[1], a.state()
	T, dh := o.seq, o.width/o.heads
	scale := float32(1 / math.Sqrt(float64(dh)))
	clear(d)
	for b := 0; b < o.batch; b++ {
		for h := 0; h < o.heads; h++ {
			for t := 0; t < T; t++ {
				p := st.p[((b*o.heads+h)*T+t)*T:][:T]
				g := dy[(t*o.batch+b)*o.width+h*dh:][:dh]
				q, _, _ := a.vecs(qkv, t, b, h)
				dq, _, _ := a.vecs(d, t, b, h)
				var mean float32
				for s := 0; s <= t; s++ {
					_, _, v := a.vecs(qkv, s, b, h)
					st.dp[s] = dot(g, v)
					mean += p[s] * st.dp[s]
				}
				for s := 0; s <= t; s++ {
					_, k, _ := a.vecs(qkv, s, b, h)
					_, dk, dv := a.vecs(d, s, b, h)
					ds := p[s] * (st.dp[s] - mean) * scale
					vec.Axpy(dq, ds, k)
					vec.Axpy(dk, ds, q)
					vec.Axpy(dv, p[s], g)
				}
			}
		}
	}
}
