package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"dpfl/datasets"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LSTM is the next-word model of the StackOverflow task (K21 Table 2):
// token embedding (Spec.Embed), one LSTM layer (Spec.Hidden[0]) unrolled over
// the sequence, a linear projection (Spec.Proj, default Embed), a dense layer
// over the vocabulary and softmax. Inputs are sequences of token ids
// (datasets.Dataset with Next targets); dim is the sequence length and
// classes the vocabulary size with its special tokens. With vocabulary
// 10,004, embedding 96, hidden 670 it has the seeds' 4,050,748 parameters;
// the default (embedding 32, hidden 128) suits a 1,000-word vocabulary.
//
// Training loss: mean cross-entropy over the non-padding target tokens of the
// batch's real rows (OOV and EOS targets included, as in TFF). Eval scores
// accuracy and loss over the targets that are not PAD, OOV or EOS, the
// tokens the papers' accuracy counts; Score.Count is that token count.
const LSTM = "lstm"

// Default LSTM sizes.
const (
	DefaultEmbed  = 32
	DefaultHidden = 128
)

// lstmDims are the sizes of an LSTM model.
type lstmDims struct{ seq, vocab, embed, hidden, proj int }

func (s Spec) lstmDims(dim, classes int) (lstmDims, error) {
	d := lstmDims{seq: dim, vocab: classes, embed: s.Embed, hidden: DefaultHidden, proj: s.Proj}
	if d.embed == 0 {
		d.embed = DefaultEmbed
	}
	if d.proj == 0 {
		d.proj = d.embed
	}
	switch len(s.Hidden) {
	case 0:
	case 1:
		d.hidden = s.Hidden[0]
	default:
		return d, fmt.Errorf("models: lstm takes one hidden width, got %v", s.Hidden)
	}
	if d.embed <= 0 || d.hidden <= 0 || d.proj <= 0 {
		return d, fmt.Errorf("models: lstm sizes must be positive (embed %d, hidden %d, proj %d)", d.embed, d.hidden, d.proj)
	}
	if classes <= datasets.NumSpecial {
		return d, fmt.Errorf("models: lstm vocabulary of %d ids has no words beyond the %d special tokens", classes, datasets.NumSpecial)
	}
	return d, nil
}

// gates in parameter order: input, forget, cell candidate, output.
const nGates = 4

// layout: embedding [V, E]; per gate Wx [E, H], Wh [H, H], b [H];
// projection [H, P], [P]; output [P, V], [V].
func (d lstmDims) layout() layout {
	var l layout
	l.add("emb", d.vocab, d.embed)
	for g := 0; g < nGates; g++ {
		l.add(fmt.Sprintf("Wx%d", g), d.embed, d.hidden)
		l.add(fmt.Sprintf("Wh%d", g), d.hidden, d.hidden)
		l.add(fmt.Sprintf("b%d", g), d.hidden)
	}
	l.add("Wp", d.hidden, d.proj)
	l.add("bp", d.proj)
	l.add("Wo", d.proj, d.vocab)
	l.add("bo", d.vocab)
	return l
}

type lstm struct {
	*graphModel
	d       lstmDims
	batch   int
	idxT    *tensor.Dense // time-major token ids, tensor.Int
	yT, wT  *tensor.Dense // one-hot targets [T·B, V], token weights [T·B]
	logitsV G.Value
}

var _ Model = (*lstm)(nil)

func newLSTM(d lstmDims, batch int) (*lstm, error) {
	gm := newGraphModel(d.layout())
	m := &lstm{graphModel: gm, d: d, batch: batch}
	n := d.seq * batch
	m.idxT = tensor.New(tensor.WithShape(n), tensor.Of(tensor.Int))
	idx := G.NewVector(gm.g, tensor.Int, G.WithShape(n), G.WithName("tokens"), G.WithValue(m.idxT))
	y, yT := gm.input("y", n, d.vocab)
	w, wT := gm.input("w", n)
	m.yT, m.wT = yT, wT
	p := gm.wrt
	fail := func(what string, err error) (*lstm, error) { return nil, fmt.Errorf("models: lstm %s: %w", what, err) }

	emb, err := G.ByIndices(p[0], idx, 0) // [T·B, E], row t·B+i
	if err != nil {
		return fail("embedding", err)
	}
	// Input contributions of all steps at once, one matrix per gate.
	var xg [nGates]*G.Node
	for g := 0; g < nGates; g++ {
		if xg[g], err = G.Mul(emb, p[1+3*g]); err != nil {
			return fail("input weights", err)
		}
		if xg[g], err = G.BroadcastAdd(xg[g], p[3+3*g], nil, []byte{0}); err != nil {
			return fail("gate bias", err)
		}
	}
	var h, c *G.Node
	hs := make(G.Nodes, 0, d.seq)
	for t := 0; t < d.seq; t++ {
		var gate [nGates]*G.Node
		for g := 0; g < nGates; g++ {
			z, err := G.Slice(xg[g], G.S(t*batch, (t+1)*batch))
			if err != nil {
				return fail("step slice", err)
			}
			if h != nil {
				rec, err := G.Mul(h, p[2+3*g])
				if err != nil {
					return fail("recurrent weights", err)
				}
				if z, err = G.Add(z, rec); err != nil {
					return fail("gate sum", err)
				}
			}
			if g == 2 {
				z, err = G.Tanh(z)
			} else {
				z, err = G.Sigmoid(z)
			}
			if err != nil {
				return fail("gate activation", err)
			}
			gate[g] = z
		}
		ig, err := G.HadamardProd(gate[0], gate[2])
		if err != nil {
			return fail("cell", err)
		}
		if c == nil {
			c = ig
		} else {
			fc, err := G.HadamardProd(gate[1], c)
			if err != nil {
				return fail("cell", err)
			}
			if c, err = G.Add(fc, ig); err != nil {
				return fail("cell", err)
			}
		}
		tc, err := G.Tanh(c)
		if err != nil {
			return fail("cell", err)
		}
		if h, err = G.HadamardProd(gate[3], tc); err != nil {
			return fail("hidden", err)
		}
		hs = append(hs, h)
	}
	out := hs[0]
	if len(hs) > 1 {
		if out, err = G.Concat(0, hs...); err != nil { // [T·B, H]
			return fail("concat", err)
		}
	}
	k := 1 + 3*nGates
	for i := 0; i < 2; i++ {
		if out, err = G.Mul(out, p[k+2*i]); err != nil {
			return fail("dense", err)
		}
		if out, err = G.BroadcastAdd(out, p[k+2*i+1], nil, []byte{0}); err != nil {
			return fail("dense bias", err)
		}
	}
	loss, err := SoftmaxXent(out, y, w)
	if err != nil {
		return fail("loss", err)
	}
	if err := gm.finish(loss, G.Read(out, &m.logitsV)); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *lstm) BatchSize() int { return m.batch }

// Init: embedding U(-0.05, 0.05) (Keras' default), every weight matrix
// Glorot-uniform, biases zero except the forget gate's, which start at 1.
func (m *lstm) Init(r *rand.Rand) {
	d := m.d
	m.uniform(r, 0, 0.05)
	for g := 0; g < nGates; g++ {
		m.glorot(r, 1+3*g, d.embed, d.hidden)
		m.glorot(r, 2+3*g, d.hidden, d.hidden)
		b := m.lay.view(m.params, 3+3*g)
		for i := range b {
			b[i] = 0
			if g == 1 {
				b[i] = 1
			}
		}
	}
	k := 1 + 3*nGates
	m.glorot(r, k, d.hidden, d.proj)
	clear(m.lay.view(m.params, k+1))
	m.glorot(r, k+2, d.proj, d.vocab)
	clear(m.lay.view(m.params, k+3))
}

// load copies the batch in time-major order and sets the token weights.
func (m *lstm) load(b *datasets.Batch) {
	T, B := m.d.seq, m.batch
	if b.Size != B || b.Dim != T || len(b.Next) != B*T {
		panic(fmt.Sprintf("models: batch of %d x %d (%d targets) given to an lstm built for %d x %d", b.Size, b.Dim, len(b.Next), B, T))
	}
	idx := m.idxT.Data().([]int)
	y, w := m.yT.Data().([]float32), m.wT.Data().([]float32)
	clear(y)
	clear(w)
	count := 0
	for i := 0; i < b.Real; i++ {
		for t := 0; t < T; t++ {
			if b.Next[i*T+t] != datasets.PadID {
				count++
			}
		}
	}
	wt := float32(0)
	if count > 0 {
		wt = 1 / float32(count)
	}
	for i := 0; i < B; i++ {
		for t := 0; t < T; t++ {
			tok, tg := int(b.X[i*T+t]), int(b.Next[i*T+t])
			if tok < 0 || tok >= m.d.vocab || tg >= m.d.vocab {
				panic(fmt.Sprintf("models: token %d or target %d outside the vocabulary of %d", tok, tg, m.d.vocab))
			}
			row := t*B + i
			idx[row] = tok
			y[row*m.d.vocab+tg] = 1
			if i < b.Real && tg != datasets.PadID {
				w[row] = wt
			}
		}
	}
}

func (m *lstm) Grad(grad []float32, b *datasets.Batch) (float64, error) {
	m.load(b)
	return m.grad(grad)
}

// Eval scores the targets that are not PAD, OOV or EOS.
func (m *lstm) Eval(b *datasets.Batch) (Score, error) {
	m.load(b)
	if err := m.forward(); err != nil {
		return Score{}, err
	}
	logits := m.logitsV.Data().([]float32)
	V, T, B := m.d.vocab, m.d.seq, m.batch
	var s Score
	for i := 0; i < b.Real; i++ {
		for t := 0; t < T; t++ {
			tg := b.Next[i*T+t]
			if tg == datasets.PadID || tg == datasets.OOVID || tg == datasets.EOSID {
				continue
			}
			row := logits[(t*B+i)*V : (t*B+i+1)*V]
			mx, lse := rowLogSumExp(row)
			s.LossSum += mx + lse - float64(row[tg])
			s.Count++
			if argmax(row) == int(tg) {
				s.Correct++
			}
		}
	}
	if math.IsNaN(s.LossSum) {
		return s, fmt.Errorf("models: lstm evaluation loss is NaN")
	}
	return s, nil
}
