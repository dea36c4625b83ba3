package models

import (
	"fmt"
	"math"

	"dpfl/datasets"
)

// LSTM is the next-word model of the StackOverflow task (Kairouz et al. 2021 Table 2):
// token embedding (Spec.Embed), one LSTM layer (Spec.Hidden[0]) unrolled over
// the sequence, a linear projection (Spec.Proj, default Embed), a dense layer
// over the vocabulary and softmax. Inputs are sequences of token ids
// (datasets.Dataset with Next targets); dim is the sequence length and
// classes the vocabulary size with its special tokens. With vocabulary
// 10,004, embedding 96, hidden 670 it has the papers' 4,050,748 parameters;
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

// layout: embedding [V, E]; input weights Wx [E, 4H] and recurrent weights
// Wh [H, 4H] of the four gates side by side (columns g·H..(g+1)·H are gate
// g's), gate biases [4H]; projection [H, P], [P]; output [P, V], [V].
func (d lstmDims) layout() layout {
	var l layout
	l.add("emb", d.vocab, d.embed)
	l.add("Wx", d.embed, nGates*d.hidden)
	l.add("Wh", d.hidden, nGates*d.hidden)
	l.add("b", nGates*d.hidden)
	l.add("Wp", d.hidden, d.proj)
	l.add("bp", d.proj)
	l.add("Wo", d.proj, d.vocab)
	l.add("bo", d.vocab)
	return l
}

// loadTokens copies the batch's sequences (seq tokens each, batch rows) in
// time-major order (row t·batch+i) into ids and next, and sets the token
// weights w: 1/count on the real rows' non-padding targets, count their
// number, so the loss is their mean.
func loadTokens(ids, next, w []float32, b *datasets.Batch, seq, batch, vocab int) {
	T, B := seq, batch
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
			if tok < 0 || tok >= vocab || tg < 0 || tg >= vocab {
				panic(fmt.Sprintf("models: token %d or target %d outside the vocabulary of %d", tok, tg, vocab))
			}
			row := t*B + i
			ids[row] = float32(tok)
			next[row] = float32(tg)
			if i < b.Real && tg != datasets.PadID {
				w[row] = wt
			}
		}
	}
}

// scoreTokens scores a sequence model's time-major logits [seq·batch,
// vocab] on the batch's targets that are not PAD, OOV or EOS (name names
// the model in the error of a NaN loss).
func scoreTokens(logits []float32, b *datasets.Batch, seq, batch, vocab int, name string) (Score, error) {
	V, T, B := vocab, seq, batch
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
		return s, fmt.Errorf("models: %s evaluation loss is NaN", name)
	}
	return s, nil
}

func init() { Register(&lstmKind) }

var lstmKind = Kind{
	Name: LSTM, Order: 50, Doc: "next-word model: embedding (embed), one LSTM layer (hidden: [width]), projection (proj), softmax over the vocabulary",
	Text: true, Uses: []string{"hidden", "embed", "proj"},
	Defaults: func(s *Spec) {
		if len(s.Hidden) == 0 {
			s.Hidden = []int{DefaultHidden}
		}
		if s.Embed == 0 {
			s.Embed = DefaultEmbed
		}
		if s.Proj == 0 {
			s.Proj = s.Embed
		}
	},
	Validate: func(s Spec, add Problems) {
		if len(s.Hidden) != 1 {
			add("hidden", "lstm takes one width (its LSTM layer's), got %d", len(s.Hidden))
		}
		if s.Embed < 0 {
			add("embed", "%d must be positive", s.Embed)
		}
		if s.Proj < 0 {
			add("proj", "%d must be positive", s.Proj)
		}
	},
	Build: func(s Spec, dim, classes, batch int) (Model, error) {
		d, err := s.lstmDims(dim, classes)
		if err != nil {
			return nil, err
		}
		sp, err := lstmStack(d)
		if err != nil {
			return nil, err
		}
		return buildStack(sp, batch)
	},
	NumParams: func(s Spec, dim, classes int) int {
		d, err := s.lstmDims(dim, classes)
		if err != nil {
			return 0
		}
		return d.layout().n
	},
	Estimate: func(s Spec, dim, classes float64) Estimate {
		h := float64(DefaultHidden)
		if len(s.Hidden) > 0 {
			h = float64(max(s.Hidden[0], 0))
		}
		e, p := float64(max(s.Embed, 0)), float64(max(s.Proj, 0))
		n := classes*e + 4*(e*h+h*h+h) + h*p + p + p*classes + classes
		key := "hidden"
		switch {
		case classes*(e+p) > 4*(e*h+h*h) && classes >= h:
			key = "classes"
		case e > h && e >= p:
			key = "embed"
		case p > h:
			key = "proj"
		}
		// dim is the sequence length.
		return Estimate{Params: n, Key: key, ActivationBytes: 4 * (activationCopies * dim * (e + 6*h + p + 2*classes))}
	},
}
