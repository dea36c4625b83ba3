package models

import (
	"math/rand/v2"
	"testing"

	"dpfl/datasets"
)

// TestLSTMParamCount: the papers' StackOverflow model (vocabulary 10,000 + 4
// special tokens, embedding 96, LSTM 670, projection 96) has 4,050,748
// parameters (Kairouz et al. 2021 Table 2: 960,384 + 2,055,560 + 64,416 + 970,388).
func TestLSTMParamCount(t *testing.T) {
	if n := (Spec{Kind: LSTM, Embed: 96, Hidden: []int{670}}).NumParams(20, 10004); n != 4050748 {
		t.Fatalf("%d parameters, want 4,050,748", n)
	}
	for _, bad := range []Spec{{Kind: LSTM, Hidden: []int{4, 4}}, {Kind: LSTM, Embed: -1}} {
		if _, err := bad.Build(5, 20, 2); err == nil {
			t.Errorf("%+v built", bad)
		}
	}
	if _, err := (Spec{Kind: LSTM}).Build(5, datasets.NumSpecial, 2); err == nil {
		t.Error("vocabulary of special tokens only accepted")
	}
}

// TestLSTMEvalExcludesSpecialTokens: Eval counts exactly the targets that
// are not PAD, OOV or EOS (counted here from the data), and a model that
// always predicts OOV scores zero correct even where the target is OOV.
func TestLSTMEvalExcludesSpecialTokens(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	d := sequences(6, 10)(9, r)
	spec := Spec{Kind: LSTM, Embed: 4, Hidden: []int{5}}
	m, err := spec.Build(d.Dim, d.Classes, 8)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(r)
	b := fill(d, 8, seq(0, 7)) // one padding row
	want, oov := 0, 0
	for i := 0; i < 7; i++ {
		for _, tg := range d.Next[i*6 : (i+1)*6] {
			switch tg {
			case datasets.PadID, datasets.EOSID:
			case datasets.OOVID:
				oov++
			default:
				want++
			}
		}
	}
	if oov == 0 {
		t.Fatal("fixture has no OOV target")
	}
	s, err := m.Eval(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Count != want {
		t.Fatalf("Eval counted %d tokens, want %d (non-PAD/OOV/EOS)", s.Count, want)
	}
	// Output bias: OOV wins every argmax.
	bo := m.Params()[len(m.Params())-d.Classes:]
	bo[datasets.OOVID] = 100
	if s, _ = m.Eval(b); s.Correct != 0 {
		t.Fatalf("always-OOV model scored %d correct; OOV targets must not count", s.Correct)
	}
	// Control: favouring the most common counted target gives credit.
	freq := map[int32]int{}
	best := int32(0)
	for i := 0; i < 7; i++ {
		for _, tg := range d.Next[i*6 : (i+1)*6] {
			if tg >= datasets.NumSpecial {
				freq[tg]++
				if freq[tg] > freq[best] {
					best = tg
				}
			}
		}
	}
	bo[datasets.OOVID], bo[best] = 0, 100
	if s, _ = m.Eval(b); s.Correct != freq[best] {
		t.Fatalf("always-%d model scored %d correct, want %d", best, s.Correct, freq[best])
	}
}

// TestLSTMPaddingRowsDoNotMatter: padding rows (zero weight) change neither
// loss nor gradient whatever their tokens.
func TestLSTMPaddingRowsDoNotMatter(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	d := sequences(5, 8)(6, r)
	m, err := Spec{Kind: LSTM, Embed: 4, Hidden: []int{6}}.Build(5, d.Classes, 6)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(r)
	b := fill(d, 6, seq(0, 3))
	g1, g2 := make([]float32, m.NumParams()), make([]float32, m.NumParams())
	l1, _ := m.Grad(g1, b)
	for i := 3 * 5; i < len(b.X); i++ {
		b.X[i], b.Next[i] = 5, 6
	}
	l2, _ := m.Grad(g2, b)
	if l1 != l2 {
		t.Fatalf("loss %g vs %g with different padding", l1, l2)
	}
	for i := range g1 {
		if g1[i] != g2[i] {
			t.Fatalf("gradient %d changed with padding content", i)
		}
	}
}
