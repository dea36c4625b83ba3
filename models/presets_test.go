package models

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dpfl/datasets"
)

// handBuilt builds a kind with its hand-written network (dense.go, cnn.go,
// lstm.go), the reference its preset must reproduce.
func handBuilt(t testing.TB, s Spec, dim, classes, batch int) Model {
	t.Helper()
	s.Normalize()
	var m Model
	var err error
	switch s.Kind {
	case LogReg:
		m, err = newDense(nil, dim, classes, batch, nil)
	case MLP:
		m, err = newDense(s.Hidden, dim, classes, batch, nil)
	case CNN, CNNLarge:
		m, err = newCNN(s.Kind == CNNLarge, dim, s.Channels, classes, batch, nil)
	case LSTM:
		var d lstmDims
		if d, err = s.lstmDims(dim, classes); err == nil {
			m, err = newLSTM(d, batch, nil)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// presetBuilt builds a kind as its preset layer list.
func presetBuilt(t *testing.T, s Spec, dim, classes, batch int) Model {
	t.Helper()
	s.Normalize()
	var sp stackSpec
	var err error
	switch s.Kind {
	case LogReg:
		sp, err = denseStack(s.Kind, nil, dim, classes)
	case MLP:
		sp, err = denseStack(s.Kind, s.Hidden, dim, classes)
	case CNN, CNNLarge:
		sp, err = cnnStack(s.Kind == CNNLarge, dim, s.Channels, classes)
	case LSTM:
		var d lstmDims
		if d, err = s.lstmDims(dim, classes); err == nil {
			sp, err = lstmStack(d)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	m, err := buildStack(sp, batch)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d values vs %d", what, len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s[%d]: hand-built %v, preset %v", what, i, a[i], b[i])
		}
	}
}

// TestPresetsMatchHandBuilt: each kind built as its preset layer list has
// the hand-built network's tensors (names, shapes, offsets), initial
// parameters (and leaves the RNG in the same state), Stochastic-ness, and
// bit for bit its loss, gradient and evaluation on batches with padding
// rows, with dropout masks from a caller's RNG and from the batch hash,
// over several SGD steps; and on an evaluation batch larger than evalRows.
func TestPresetsMatchHandBuilt(t *testing.T) {
	type tc struct {
		name         string
		spec         Spec
		dim, classes int
		data         func(n int, r *rand.Rand) *datasets.Dataset
	}
	all := []tc{
		{"logreg", Spec{Kind: LogReg}, 64, 3, images(8, 3)},
		{"mlp", Spec{Kind: MLP, Hidden: []int{16, 8}}, 64, 3, images(8, 3)},
		{"cnn", Spec{Kind: CNN}, 784, 10, images(28, 10)},
		{"cnn-large", Spec{Kind: CNNLarge}, 144, 5, images(12, 5)},
		{"lstm", Spec{Kind: LSTM, Embed: 6, Hidden: []int{8}, Proj: 5}, 5, 12 + datasets.NumSpecial, sequences(5, 12)},
	}
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			const batch = 6
			r := rand.New(rand.NewPCG(3, 4))
			d := c.data(80, r)
			hand, pre := handBuilt(t, c.spec, c.dim, c.classes, batch), presetBuilt(t, c.spec, c.dim, c.classes, batch)
			ht, pt := hand.(Layered).Tensors(), pre.(Layered).Tensors()
			if len(ht) != len(pt) {
				t.Fatalf("tensors: hand-built %v, preset %v", ht, pt)
			}
			for i := range ht {
				if ht[i].Name != pt[i].Name || !slices.Equal(ht[i].Shape, pt[i].Shape) || ht[i].Offset != pt[i].Offset {
					t.Fatalf("tensor %d: hand-built %v, preset %v", i, ht[i], pt[i])
				}
			}
			_, hs := hand.(Stochastic)
			_, ps := pre.(Stochastic)
			if hs != ps {
				t.Fatalf("Stochastic: hand-built %v, preset %v", hs, ps)
			}
			rh, rp := rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
			hand.Init(rh)
			pre.Init(rp)
			sameBits(t, "initial parameters", hand.Params(), pre.Params())
			if rh.Uint64() != rp.Uint64() {
				t.Fatal("Init left the RNGs in different states")
			}
			gh, gp := make([]float32, hand.NumParams()), make([]float32, pre.NumParams())
			for step := 0; step < 4; step++ {
				b := fill(d, batch, seq(step*5, step*5+batch-1)) // one padding row
				if hs && step%2 == 0 {
					hand.(Stochastic).SetRNG(rand.New(rand.NewPCG(uint64(step), 7)))
					pre.(Stochastic).SetRNG(rand.New(rand.NewPCG(uint64(step), 7)))
				} else if hs {
					hand.(Stochastic).SetRNG(nil)
					pre.(Stochastic).SetRNG(nil)
				}
				lh, err := hand.Grad(gh, b)
				if err != nil {
					t.Fatal(err)
				}
				lp, err := pre.Grad(gp, b)
				if err != nil {
					t.Fatal(err)
				}
				if math.Float64bits(lh) != math.Float64bits(lp) {
					t.Fatalf("step %d loss: hand-built %v, preset %v", step, lh, lp)
				}
				sameBits(t, "gradient", gh, gp)
				sh, _ := hand.Eval(b)
				sp, _ := pre.Eval(b)
				if sh != sp {
					t.Fatalf("step %d eval: hand-built %+v, preset %+v", step, sh, sp)
				}
				SGDStep(hand.Params(), gh, 0.1)
				SGDStep(pre.Params(), gp, 0.1)
			}
			// Evaluation in chunks (a model built for more than evalRows).
			big := evalRows + 6
			eh, ep := handBuilt(t, c.spec, c.dim, c.classes, big), presetBuilt(t, c.spec, c.dim, c.classes, big)
			copy(eh.Params(), hand.Params())
			copy(ep.Params(), pre.Params())
			b := fill(d, big, seq(0, big-3))
			sh, err1 := eh.Eval(b)
			sp, err2 := ep.Eval(b)
			if sh != sp || err1 != nil || err2 != nil {
				t.Fatalf("chunked eval: hand-built %+v (%v), preset %+v (%v)", sh, err1, sp, err2)
			}
		})
	}
}
