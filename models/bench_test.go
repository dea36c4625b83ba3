package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"dpfl/datasets"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// Local-SGD throughput (Grad + SGD update) per model, batch 16 and 64, one
// worker and two workers (two goroutines, each with its own model):
//
//	go test -run '^$' -bench LocalSGD -benchtime 3s ./models/
//
// The metric is examples (sequences for the LSTM) per second, all workers
// together.

type benchModel struct {
	name    string
	spec    Spec
	dim     int
	classes int
	data    func(n int, r *rand.Rand) *datasets.Dataset
	hand    bool // the kind's hand-built network instead of its preset (the comparison)
}

func benchModels() []benchModel {
	img := func(n int, r *rand.Rand) *datasets.Dataset { return images(28, 62)(n, r) }
	return []benchModel{
		{"logreg", Spec{Kind: LogReg}, 784, 62, img, false},
		{"mlp", Spec{Kind: MLP, Hidden: []int{200, 200}}, 784, 62, img, false},
		{"cnn", Spec{Kind: CNN}, 784, 62, img, false},
		{"cnn-large", Spec{Kind: CNNLarge}, 784, 62, img, false},
		{"lstm", Spec{Kind: LSTM}, 20, 1004, sequences(20, 1000), false},
		{"transformer", Spec{Kind: Layers, Layers: benchTransformer(128, 2, 4)}, 20, 1004, sequences(20, 1000), false},
		{"resnet-gn", Spec{Kind: Layers, Layers: benchResNet()}, 784, 62, img, false},
		{"cnn-hand", Spec{Kind: CNN}, 784, 62, img, true},
		{"lstm-hand", Spec{Kind: LSTM}, 20, 1004, sequences(20, 1000), true},
	}
}

// benchTransformer is a pre-norm transformer language model: embedding
// and learned positions of the given width, blocks of causal self-attention
// (heads) and a 4·width GELU MLP, each residual, a final layer norm and the
// dense output layer over the vocabulary (torch_layers.py in testdata is
// its PyTorch twin).
func benchTransformer(width, blocks, heads int) []Layer {
	ls := []Layer{{Type: "embedding", Dim: width}, {Type: "pos-embedding"}}
	for range blocks {
		ls = append(ls,
			Layer{Type: "residual", Layers: []Layer{{Type: "layer-norm"}, {Type: "attention", Heads: heads}}},
			Layer{Type: "residual", Layers: []Layer{{Type: "layer-norm"}, {Type: "dense", Units: 4 * width}, {Type: "gelu"}, {Type: "dense", Units: width}}})
	}
	return append(ls, Layer{Type: "layer-norm"}, Layer{Type: "dense"}, Layer{Type: "token-xent"})
}

// benchResNet is the small group-norm ResNet of experiments/resnet-gn.yaml
// (a strided stem, a 14×14×8 block, a block down to 7×7×16 with a
// projection shortcut, global average pooling, a dense head).
func benchResNet() []Layer {
	conv := func(f, k, s, p int) Layer { return Layer{Type: "conv2d", Filters: f, Kernel: k, Stride: s, Padding: p} }
	gn := func(g int) Layer { return Layer{Type: "group-norm", Groups: g} }
	relu := Layer{Type: "relu"}
	return []Layer{
		conv(8, 3, 2, 1), gn(2), relu,
		{Type: "residual", Layers: []Layer{conv(8, 3, 1, 1), gn(4), relu, conv(8, 3, 1, 1), gn(4)}}, relu,
		{Type: "residual", Layers: []Layer{conv(16, 3, 2, 1), gn(4), relu, conv(16, 3, 1, 1), gn(4)},
			Shortcut: []Layer{conv(16, 1, 2, 0), gn(4)}}, relu,
		{Type: "global-avg-pool"}, {Type: "dense"}, {Type: "xent"},
	}
}

func BenchmarkLocalSGD(b *testing.B) {
	for _, bm := range benchModels() {
		for _, batch := range []int{16, 64} {
			for _, workers := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/batch=%d/workers=%d", bm.name, batch, workers), func(b *testing.B) {
					benchLocalSGD(b, bm, batch, workers)
				})
			}
		}
	}
}

func benchLocalSGD(b *testing.B, bm benchModel, batch, workers int) {
	type worker struct {
		m    Model
		bt   *datasets.Batch
		grad []float32
	}
	r := rand.New(rand.NewPCG(1, 1))
	d := bm.data(batch, r)
	ws := make([]worker, workers)
	for w := range ws {
		m, err := bm.spec.Build(bm.dim, bm.classes, batch)
		if err != nil {
			b.Fatal(err)
		}
		if bm.hand {
			m = handBuilt(b, bm.spec, bm.dim, bm.classes, batch)
		}
		m.Init(r)
		ws[w] = worker{m: m, bt: fill(d, batch, seq(0, batch)), grad: make([]float32, m.NumParams())}
		if _, err := m.Grad(ws[w].grad, ws[w].bt); err != nil { // first step outside the timing
			b.Fatal(err)
		}
	}
	runtime.GC() // the setup's garbage is not collected inside the timing
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range ws {
		wg.Add(1)
		go func(wk worker) {
			defer wg.Done()
			p := wk.m.Params()
			for i := 0; i < b.N; i++ {
				if _, err := wk.m.Grad(wk.grad, wk.bt); err != nil {
					b.Error(err)
					return
				}
				SGDStep(p, wk.grad, 0.01) // as clients.Trainer does
			}
		}(ws[w])
	}
	wg.Wait()
	b.ReportMetric(float64(workers*batch*b.N)/b.Elapsed().Seconds(), "examples/s")
}

// gonumMLP is a hand-written float32 MLP (ReLU hidden layers, softmax
// cross-entropy) on gonum's BLAS, the speed reference for dpfl's Gorgonia
// path. Its parameters use the dense model's layout (per layer W [in, out]
// row-major, then b), so the two can be compared on the same vector.
type gonumMLP struct {
	widths []int
	params []float32
	acts   [][]float32 // per layer input activations [B, in]; last = logits
	deltas [][]float32
}

func newGonumMLP(widths []int, batch int) *gonumMLP {
	m := &gonumMLP{widths: widths}
	n := 0
	for i := 0; i+1 < len(widths); i++ {
		n += widths[i]*widths[i+1] + widths[i+1]
	}
	m.params = make([]float32, n)
	for _, w := range widths {
		m.acts = append(m.acts, make([]float32, batch*w))
		m.deltas = append(m.deltas, make([]float32, batch*w))
	}
	return m
}

func gonumGemm(tA, tB blas.Transpose, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32) {
	blas32.Implementation().Sgemm(tA, tB, m, n, k, 1, a, lda, b, ldb, beta, c, n)
}

// grad computes the gradient of the batch's weighted loss into grad and
// returns the loss (same definition as Model.Grad).
func (m *gonumMLP) grad(grad []float32, bt *datasets.Batch) float64 {
	B, L := bt.Size, len(m.widths)-1
	copy(m.acts[0], bt.X)
	off := 0
	offs := make([]int, L)
	for l := 0; l < L; l++ {
		in, out := m.widths[l], m.widths[l+1]
		offs[l] = off
		W, bias := m.params[off:off+in*out], m.params[off+in*out:off+in*out+out]
		z := m.acts[l+1]
		for i := 0; i < B; i++ {
			copy(z[i*out:(i+1)*out], bias)
		}
		gonumGemm(blas.NoTrans, blas.NoTrans, B, out, in, m.acts[l], in, W, out, 1, z)
		if l+1 < L {
			for i, v := range z {
				z[i] = max(v, 0)
			}
		}
		off += in*out + out
	}
	C := m.widths[L]
	logits, dl := m.acts[L], m.deltas[L]
	var loss float64
	for i := 0; i < B; i++ {
		row, drow := logits[i*C:(i+1)*C], dl[i*C:(i+1)*C]
		w := float64(bt.W[i])
		if w == 0 {
			clear(drow)
			continue
		}
		mx, lse := rowLogSumExp(row)
		y := int(bt.Y[i])
		loss -= w * (float64(row[y]) - mx - lse)
		for k := range row {
			drow[k] = float32(w * math.Exp(float64(row[k])-mx-lse))
		}
		drow[y] -= float32(w)
	}
	for l := L - 1; l >= 0; l-- {
		in, out := m.widths[l], m.widths[l+1]
		gW, gb := grad[offs[l]:offs[l]+in*out], grad[offs[l]+in*out:offs[l]+in*out+out]
		d := m.deltas[l+1]
		gonumGemm(blas.Trans, blas.NoTrans, in, out, B, m.acts[l], in, d, out, 0, gW)
		clear(gb)
		for i := 0; i < B; i++ {
			for k, v := range d[i*out : (i+1)*out] {
				gb[k] += v
			}
		}
		if l > 0 {
			W := m.params[offs[l] : offs[l]+in*out]
			dp := m.deltas[l]
			gonumGemm(blas.NoTrans, blas.Trans, B, in, out, d, out, W, out, 0, dp)
			for i, a := range m.acts[l] {
				if a <= 0 {
					dp[i] = 0
				}
			}
		}
	}
	return loss
}

// TestGonumMLPMatchesModel: the reference computes what dpfl's MLP computes
// (loss within 1e-5 relative, gradient within 1e-4 + 1e-3 relative), so the
// benchmark compares equal work.
func TestGonumMLPMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	d := images(28, 10)(12, r)
	m, err := Spec{Kind: MLP, Hidden: []int{20, 15}}.Build(784, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(r)
	ref := newGonumMLP([]int{784, 20, 15, 10}, 16)
	copy(ref.params, m.Params())
	bt := fill(d, 16, seq(0, 12))
	g1, g2 := make([]float32, m.NumParams()), make([]float32, m.NumParams())
	l1, _ := m.Grad(g1, bt)
	l2 := ref.grad(g2, bt)
	if math.Abs(l1-l2) > 1e-5*math.Abs(l1) {
		t.Fatalf("loss %g vs reference %g", l1, l2)
	}
	for i := range g1 {
		if math.Abs(float64(g1[i]-g2[i])) > 1e-4+1e-3*math.Abs(float64(g2[i])) {
			t.Fatalf("gradient %d: %g vs reference %g", i, g1[i], g2[i])
		}
	}
}

// BenchmarkGonumMLP is the hand-written reference for the "mlp" rows of
// BenchmarkLocalSGD (784-200-200-62).
func BenchmarkGonumMLP(b *testing.B) {
	for _, batch := range []int{16, 64} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("batch=%d/workers=%d", batch, workers), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 1))
				d := images(28, 62)(batch, r)
				var wg sync.WaitGroup
				ms := make([]*gonumMLP, workers)
				for w := range ms {
					ms[w] = newGonumMLP([]int{784, 200, 200, 62}, batch)
					for i := range ms[w].params {
						ms[w].params[i] = float32(0.05 * r.NormFloat64())
					}
				}
				b.ResetTimer()
				for w := range ms {
					wg.Add(1)
					go func(m *gonumMLP) {
						defer wg.Done()
						bt := fill(d, batch, seq(0, batch))
						grad := make([]float32, len(m.params))
						for i := 0; i < b.N; i++ {
							m.grad(grad, bt)
							for k, g := range grad {
								m.params[k] -= 0.01 * g
							}
						}
					}(ms[w])
				}
				wg.Wait()
				b.ReportMetric(float64(workers*batch*b.N)/b.Elapsed().Seconds(), "examples/s")
			})
		}
	}
}
