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
//
// Every sum runs over its terms in order from zero, each product rounded
// before it is added (vec.MulRows): a dot product q_t·k_s over the head's
// coordinates, the outputs and the gradients over the steps. Each
// head's keys (values in the gradient) are copied transposed so that one
// call gives q_t·k_s for every s at once, with the same bits.
type attention struct {
	seq, batch, width, heads int
	st                       *attnState
}

// attnState keeps the attention weights for the gradient, and its scratch.
type attnState struct {
	p  []float32 // [batch, heads, seq, tp], zero above the diagonal
	tp int       // seq rounded up to a multiple of 8
	tr []float32 // [dh, tp]: a head's keys or values transposed, zero past seq
	sc []float32 // [tp]: q_t·k_s (or dy_t·v_s) for every s
	ds []float32 // [seq]
	// [seq, seq]: a head's p and ds transposed (row s holds p_ts, ds_ts by t)
	pT, dsT []float32
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

// head holds the offsets of head h of sequence b: in qkv (or its
// gradient) its query at q, key at q + width and value at q + 2·width for
// step 0, steps rs apart; in the output (or its gradient) at y, steps ry
// apart.
type head struct{ q, y, rs, ry int }

func (o attention) head(b, h int) head {
	dh := o.width / o.heads
	return head{b*3*o.width + h*dh, b*o.width + h*dh, 3 * o.width * o.batch, o.width * o.batch}
}

func (o attention) state() *attnState {
	st := o.st
	if st.p == nil {
		T, dh := o.seq, o.width/o.heads
		st.tp = (T + 7) &^ 7
		st.p, st.tr, st.sc = make([]float32, o.batch*o.heads*T*st.tp), make([]float32, dh*st.tp), make([]float32, st.tp)
		st.ds, st.pT, st.dsT = make([]float32, T), make([]float32, T*T), make([]float32, T*T)
	}
	return st
}

// transpose copies the keys or values of a head starting at off in qkv
// (steps rs apart) into st.tr, coordinate by coordinate.
func (o attention) transpose(st *attnState, qkv []float32, off, rs int) {
	dh, tp := o.width/o.heads, st.tp
	for i := 0; i < dh; i++ {
		col := qkv[off+i:]
		for s, d := 0, st.tr[i*tp:][:o.seq]; s < len(d); s++ {
			d[s] = col[s*rs]
		}
	}
}

func (o attention) run(out []float32, in [][]float32) {
	qkv, st := in[0], o.state()
	T, dh, W := o.seq, o.width/o.heads, o.width
	scale := float32(1 / math.Sqrt(float64(dh)))
	for b := 0; b < o.batch; b++ {
		for h := 0; h < o.heads; h++ {
			hd := o.head(b, h)
			o.transpose(st, qkv, hd.q+W, hd.rs)
			P := st.p[(b*o.heads+h)*T*st.tp:][:T*st.tp]
			for t := 0; t < T; t++ {
				p := P[t*st.tp:][:st.tp]
				n := (t + 8) &^ 7 // the exponentials in whole blocks of 8
				sc := st.sc
				vec.MulRows(sc, qkv[hd.q+t*hd.rs:][:dh], st.tr, st.tp)
				mx := float32(math.Inf(-1))
				for s := range p[:t+1] {
					p[s] = sc[s] * scale
					mx = max(mx, p[s])
				}
				for s := t + 1; s < n; s++ {
					p[s] = float32(math.Inf(-1))
				}
				vec.Exp(p[:n], p[:n], mx)
				inv := float32(1 / vec.Sum(p[:t+1]))
				clear(p[t+1 : n])
				for s := range p[:t+1] {
					p[s] *= inv
				}
				vec.MulRows(out[hd.y+t*hd.ry:][:dh], p[:t+1], qkv[hd.q+2*W:], hd.rs)
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
	T, dh, W := o.seq, o.width/o.heads, o.width
	scale := float32(1 / math.Sqrt(float64(dh)))
	// Every value of d is one sum (MulRows): dq_t over s ≤ t, dk_s and dv_s
	// over t ≥ s.
	for b := 0; b < o.batch; b++ {
		for h := 0; h < o.heads; h++ {
			hd := a.head(b, h)
			a.transpose(st, qkv, hd.q+2*W, hd.rs)
			P := st.p[(b*o.heads+h)*T*st.tp:][:T*st.tp]
			for t := 0; t < T; t++ {
				p := P[t*st.tp:][:t+1]
				dp := st.sc
				vec.MulRows(dp, dy[hd.y+t*hd.ry:][:dh], st.tr, st.tp)
				var mean float32
				for s, v := range p {
					mean += v * dp[s]
				}
				ds := st.ds[:t+1]
				for s, v := range p {
					ds[s] = v * (dp[s] - mean) * scale
					st.dsT[s*T+t], st.pT[s*T+t] = ds[s], v
				}
				vec.MulRows(d[hd.q+t*hd.rs:][:dh], ds, qkv[hd.q+W:], hd.rs)
			}
			for s := 0; s < T; s++ {
				vec.MulRows(d[hd.q+W+s*hd.rs:][:dh], st.dsT[s*T+s:(s+1)*T], qkv[hd.q+s*hd.rs:], hd.rs)
				vec.MulRows(d[hd.q+2*W+s*hd.rs:][:dh], st.pT[s*T+s:(s+1)*T], dy[hd.y+s*hd.ry:], hd.ry)
			}
		}
	}
}
