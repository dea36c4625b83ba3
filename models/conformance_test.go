package models

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"dpfl/datasets"
)

// testCase is one model under the conformance suite, on inputs small enough
// for a fast test.
type testCase struct {
	name       string
	spec       Spec
	data       func(n int, r *rand.Rand) *datasets.Dataset
	batch      int
	steps, lr  float64
	fdCoords   int     // coordinates checked by finite differences
	fdStep     float64 // central-difference step
	absTol     float64 // finite-difference tolerance: abs + rel·|fd|
	relTol     float64
	lossFactor float64 // after steps of SGD, loss at most this fraction of the start
	dropout    bool    // the model drops units in training
}

// images returns n square images of the given side whose class is a blob
// position (unit tests only): class c lights a 3×3 patch near its own spot.
func images(side, classes int) func(n int, r *rand.Rand) *datasets.Dataset {
	return func(n int, r *rand.Rand) *datasets.Dataset {
		dim := side * side
		d := &datasets.Dataset{X: make([]float32, n*dim), Y: make([]int32, n), Dim: dim, Classes: classes}
		for i := 0; i < n; i++ {
			c := r.IntN(classes)
			d.Y[i] = int32(c)
			row := d.X[i*dim : (i+1)*dim]
			for j := range row {
				row[j] = float32(0.1 * r.Float64())
			}
			cy, cx := 1+(c*(side-3))/classes, 1+((classes-1-c)*(side-3))/classes
			for dy := 0; dy < 3; dy++ {
				for dx := 0; dx < 3; dx++ {
					row[(cy+dy-1)*side+cx+dx-1] += 1
				}
			}
		}
		return d
	}
}

func cases() []testCase {
	return []testCase{
		{name: "logreg", spec: Spec{Kind: LogReg}, data: images(8, 3), batch: 6, steps: 200, lr: 0.1,
			fdCoords: 400, fdStep: 1e-2, absTol: 2e-3, relTol: 0.03, lossFactor: 0.3},
		{name: "mlp", spec: Spec{Kind: MLP, Hidden: []int{16, 8}}, data: images(8, 3), batch: 6, steps: 200, lr: 0.1,
			fdCoords: 400, fdStep: 1e-3, absTol: 2e-3, relTol: 0.03, lossFactor: 0.3},
		{name: "cnn", spec: Spec{Kind: CNN}, data: images(8, 3), batch: 6, steps: 200, lr: 0.1,
			fdCoords: 400, fdStep: 1e-3, absTol: 2e-3, relTol: 0.03, lossFactor: 0.3},
		{name: "cnn-large", spec: Spec{Kind: CNNLarge}, data: images(8, 3), batch: 6, steps: 200, lr: 0.05, dropout: true,
			fdCoords: 400, fdStep: 1e-2, absTol: 2e-3, relTol: 0.03, lossFactor: 0.3},
		{name: "lstm", spec: Spec{Kind: LSTM, Embed: 6, Hidden: []int{8}}, data: sequences(5, 12), batch: 4, steps: 300, lr: 0.5,
			fdCoords: 400, fdStep: 1e-2, absTol: 1e-3, relTol: 0.03, lossFactor: 0.6},
		{name: "layers-image", spec: Spec{Kind: Layers, Layers: imageLayers()}, data: images(8, 3), batch: 6, steps: 200, lr: 0.05, dropout: true,
			fdCoords: 400, fdStep: 1e-3, absTol: 2e-3, relTol: 0.03, lossFactor: 0.3},
		{name: "layers-resnet", spec: Spec{Kind: Layers, Layers: resnetLayers()}, data: images(8, 3), batch: 6, steps: 200, lr: 0.05,
			fdCoords: 400, fdStep: 1e-3, absTol: 2e-3, relTol: 0.03, lossFactor: 0.3},
		{name: "layers-text", spec: Spec{Kind: Layers, Layers: textLayers()}, data: sequences(5, 12), batch: 4, steps: 300, lr: 0.2,
			fdCoords: 400, fdStep: 1e-2, absTol: 1e-3, relTol: 0.03, lossFactor: 0.6},
	}
}

// imageLayers is a layer list with every image layer type: convolutions,
// group norm, GELU, a residual block, both pools, dropout, layer norm.
func imageLayers() []Layer {
	return []Layer{
		{Type: "conv2d", Filters: 4, Kernel: 3, Padding: 1}, // 8×8×4
		{Type: "group-norm", Groups: 2},
		{Type: "gelu"},
		{Type: "residual", Layers: []Layer{{Type: "conv2d", Filters: 4, Kernel: 3, Padding: 1}, {Type: "tanh"}}},
		{Type: "avg-pool"}, // 4×4×4
		{Type: "max-pool"}, // 2×2×4
		{Type: "flatten"},
		{Type: "dropout", Rate: 0.2},
		{Type: "dense", Units: 8},
		{Type: "layer-norm"},
		{Type: "relu"},
		{Type: "dense"},
		{Type: "xent"},
	}
}

// resnetLayers is a small ResNet with group norm: a stem, a residual
// block that halves the image and doubles the channels (its shortcut a
// strided 1×1 convolution and a group norm), global average pooling.
func resnetLayers() []Layer {
	return []Layer{
		{Type: "conv2d", Filters: 4, Kernel: 3, Padding: 1}, // 8×8×4
		{Type: "group-norm", Groups: 2},
		{Type: "relu"},
		{Type: "residual", Layers: []Layer{
			{Type: "conv2d", Filters: 8, Kernel: 3, Stride: 2, Padding: 1}, // 4×4×8
			{Type: "group-norm", Groups: 2},
			{Type: "relu"},
			{Type: "conv2d", Filters: 8, Kernel: 3, Padding: 1},
			{Type: "group-norm", Groups: 2},
		}, Shortcut: []Layer{
			{Type: "conv2d", Filters: 8, Kernel: 1, Stride: 2},
			{Type: "group-norm", Groups: 2},
		}},
		{Type: "relu"},
		{Type: "global-avg-pool"}, // 8 features
		{Type: "dense"},
		{Type: "xent"},
	}
}

// textLayers is a sequence model's layer list: embedding, positions, a
// transformer block (pre-norm attention and MLP, each residual), LSTM, a
// residual block, layer norm, GELU, the token-level head.
func textLayers() []Layer {
	return []Layer{
		{Type: "embedding", Dim: 8},
		{Type: "pos-embedding"},
		{Type: "residual", Layers: []Layer{{Type: "layer-norm"}, {Type: "attention", Heads: 2}}},
		{Type: "residual", Layers: []Layer{{Type: "layer-norm"}, {Type: "dense", Units: 16}, {Type: "gelu"}, {Type: "dense", Units: 8}}},
		{Type: "lstm", Hidden: 8},
		{Type: "residual", Layers: []Layer{{Type: "dense", Units: 8}, {Type: "tanh"}}},
		{Type: "layer-norm"},
		{Type: "gelu"},
		{Type: "dense"},
		{Type: "token-xent"},
	}
}

// sequences returns n token sequences of length seqLen over a vocabulary of
// words plus the special tokens, with targets that follow a deterministic
// successor rule most of the time (learnable), OOV and EOS targets included
// and the last sequences padded (unit tests only).
func sequences(seqLen, words int) func(n int, r *rand.Rand) *datasets.Dataset {
	return func(n int, r *rand.Rand) *datasets.Dataset {
		V := words + datasets.NumSpecial
		d := &datasets.Dataset{X: make([]float32, n*seqLen), Next: make([]int32, n*seqLen), Y: make([]int32, n), Dim: seqLen, Classes: V}
		for i := 0; i < n; i++ {
			tok := int32(datasets.BOSID)
			length := seqLen
			if i%3 == 2 {
				length = 2 + r.IntN(seqLen-2) // padded tail
			}
			for t := 0; t < length; t++ {
				next := int32(datasets.NumSpecial) + (tok*7+3)%int32(words)
				switch u := r.Float64(); {
				case u < 0.1:
					next = datasets.OOVID
				case u < 0.15:
					next = datasets.EOSID
				case u < 0.25:
					next = int32(datasets.NumSpecial + r.IntN(words))
				}
				d.X[i*seqLen+t], d.Next[i*seqLen+t] = float32(tok), next
				tok = next
			}
		}
		return d
	}
}

func build(t testing.TB, tc testCase, d *datasets.Dataset, batch int) Model {
	t.Helper()
	m, err := tc.spec.Build(d.Dim, d.Classes, batch)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fill(d *datasets.Dataset, size int, idx []int) *datasets.Batch {
	b := datasets.NewBatch(size, d.Dim)
	b.Fill(d, idx)
	return b
}

func seq(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// fixMasks makes a stochastic model draw the same dropout masks on every
// call, so finite differences see one function.
func fixMasks(m Model) {
	if s, ok := m.(Stochastic); ok {
		s.SetRNG(rand.New(rand.NewPCG(42, 42)))
	}
}

// TestConformanceGradient: each model's gradient matches central finite
// differences of its own training loss (float32 graph; the step and
// tolerance of each case are in cases()), on a batch with padding rows.
// Dropout masks are held fixed across the evaluations.
func TestConformanceGradient(t *testing.T) {
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			d := tc.data(tc.batch, r)
			m := build(t, tc, d, tc.batch)
			if m.NumParams() != tc.spec.NumParams(d.Dim, d.Classes) {
				t.Fatalf("NumParams %d, Spec.NumParams %d", m.NumParams(), tc.spec.NumParams(d.Dim, d.Classes))
			}
			m.Init(r)
			p := m.Params()
			for i := range p { // biases away from zero so every parameter matters
				p[i] += float32(0.05 * r.NormFloat64())
			}
			b := fill(d, tc.batch, seq(0, tc.batch-1)) // one padding row
			grad := make([]float32, m.NumParams())
			fixMasks(m)
			if _, err := m.Grad(grad, b); err != nil {
				t.Fatal(err)
			}
			scratch := make([]float32, m.NumParams())
			lossAt := func() float64 {
				fixMasks(m)
				l, err := m.Grad(scratch, b)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			coords := r.Perm(len(p))[:min(tc.fdCoords, len(p))]
			bad, worst := 0, 0.0
			for _, i := range coords {
				old := p[i]
				p[i] = old + float32(tc.fdStep)
				up := lossAt()
				p[i] = old - float32(tc.fdStep)
				down := lossAt()
				p[i] = old
				fd := (up - down) / (2 * tc.fdStep)
				err := math.Abs(fd - float64(grad[i]))
				worst = max(worst, err/(tc.absTol+tc.relTol*math.Abs(fd)))
				if err > tc.absTol+tc.relTol*math.Abs(fd) {
					bad++
					t.Logf("parameter %d: gradient %g, finite difference %g", i, grad[i], fd)
				}
			}
			// A ReLU kink between p-h and p+h can spoil one coordinate; allow
			// at most 1% of them.
			if bad > len(coords)/100 {
				t.Errorf("%d of %d coordinates outside tolerance", bad, len(coords))
			}
			t.Logf("%d coordinates checked; worst error / tolerance %.3f; %d outside", len(coords), worst, bad)
		})
	}
}

// TestConformanceSGD: a few hundred SGD steps reduce the evaluation loss.
func TestConformanceSGD(t *testing.T) {
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 6))
			n := 16 * tc.batch
			d := tc.data(n, r)
			m := build(t, tc, d, tc.batch)
			m.Init(r)
			eval := build(t, tc, d, n)
			full := fill(d, n, seq(0, n))
			lossOf := func() float64 {
				copy(eval.Params(), m.Params())
				s, err := eval.Eval(full)
				if err != nil {
					t.Fatal(err)
				}
				return s.LossSum / float64(s.Count)
			}
			before := lossOf()
			grad := make([]float32, m.NumParams())
			b := datasets.NewBatch(tc.batch, d.Dim)
			order := seq(0, n)
			for step := 0; step < int(tc.steps); step++ {
				lo := (step * tc.batch) % n
				if lo == 0 {
					r.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
				}
				b.Fill(d, order[lo:lo+tc.batch])
				if _, err := m.Grad(grad, b); err != nil {
					t.Fatal(err)
				}
				for i, g := range grad {
					m.Params()[i] -= float32(tc.lr) * g
				}
			}
			after := lossOf()
			t.Logf("loss %.4f -> %.4f after %d steps", before, after, int(tc.steps))
			if !(after < tc.lossFactor*before) {
				t.Errorf("loss %g -> %g; want at most %g of the start", before, after, tc.lossFactor)
			}
		})
	}
}

// TestConformanceEvalIsolation: evaluation is deterministic (no dropout),
// does not change what the next training call computes, and does not reach
// another model instance; training with dropout differs from evaluation.
func TestConformanceEvalIsolation(t *testing.T) {
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 8))
			d := tc.data(tc.batch, r)
			a, other := build(t, tc, d, tc.batch), build(t, tc, d, tc.batch)
			a.Init(r)
			copy(other.Params(), a.Params())
			b := fill(d, tc.batch, seq(0, tc.batch))
			g1, g2 := make([]float32, a.NumParams()), make([]float32, a.NumParams())
			fixMasks(a)
			l1, err := a.Grad(g1, b)
			if err != nil {
				t.Fatal(err)
			}
			s1, _ := a.Eval(b)
			s2, _ := other.Eval(b)
			if s1 != s2 {
				t.Fatalf("two instances evaluate differently: %+v vs %+v", s1, s2)
			}
			if s3, _ := a.Eval(b); s3 != s1 {
				t.Fatalf("evaluation not deterministic: %+v vs %+v", s1, s3)
			}
			fixMasks(a)
			l2, err := a.Grad(g2, b)
			if err != nil {
				t.Fatal(err)
			}
			if l1 != l2 {
				t.Fatalf("training loss %g before evaluation, %g after", l1, l2)
			}
			for i := range g1 {
				if g1[i] != g2[i] {
					t.Fatalf("gradient %d changed after evaluation", i)
				}
			}
			if tc.dropout {
				// Dropout is on in training: the training loss is not the
				// evaluation loss, and the default masks (no SetRNG) depend
				// only on batch and parameters, so two instances agree.
				if math.Abs(l1-s1.LossSum/float64(s1.Count)) < 1e-6 {
					t.Fatalf("training loss %g equals evaluation loss: dropout inactive", l1)
				}
				a.(Stochastic).SetRNG(nil)
				other.(Stochastic).SetRNG(nil)
				la, _ := a.Grad(g1, b)
				lb, _ := other.Grad(g2, b)
				if la != lb {
					t.Fatalf("default dropout masks differ between instances: loss %g vs %g", la, lb)
				}
			}
		})
	}
}

// TestConformanceReuse: one model reused for many clients (new parameters,
// training and evaluation each time) does not grow the heap. Tolerance: the
// live heap after 150 clients at most 25% + 4 MiB above that after 30.
func TestConformanceReuse(t *testing.T) {
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(9, 10))
			d := tc.data(4*tc.batch, r)
			m := build(t, tc, d, tc.batch)
			m.Init(r)
			global := append([]float32(nil), m.Params()...)
			grad := make([]float32, m.NumParams())
			b := datasets.NewBatch(tc.batch, d.Dim)
			heap := func() uint64 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				return ms.HeapAlloc
			}
			var base uint64
			for client := 0; client < 150; client++ {
				if client == 30 {
					base = heap()
				}
				copy(m.Params(), global)
				for s := 0; s < 2; s++ {
					lo := ((client + s) % 4) * tc.batch
					b.Fill(d, seq(lo, lo+tc.batch))
					if _, err := m.Grad(grad, b); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := m.Eval(b); err != nil {
					t.Fatal(err)
				}
			}
			end := heap()
			t.Logf("heap %d KiB after 30 clients, %d KiB after 150", base>>10, end>>10)
			if float64(end) > 1.25*float64(base)+4<<20 {
				t.Errorf("heap grew from %d to %d bytes over 120 reuses", base, end)
			}
		})
	}
}

// TestCNNParamCounts checks the architectures against published counts: the
// federated-EMNIST CNN has 1,206,590 parameters for 62 classes on 28×28
// (TFF's model), and the papers' CNN is
// 16·64+16 + 32·16·16+32 + 1568·32+32 + 32·10+10 for MNIST.
func TestCNNParamCounts(t *testing.T) {
	if n := (Spec{Kind: CNNLarge}).NumParams(784, 62); n != 1206590 {
		t.Errorf("cnn-large: %d parameters, want 1,206,590", n)
	}
	if n := (Spec{Kind: CNN}).NumParams(784, 10); n != 16*64+16+32*16*16+32+1568*32+32+32*10+10 {
		t.Errorf("cnn: %d parameters", n)
	}
	for _, bad := range []struct {
		s   Spec
		dim int
	}{{Spec{Kind: CNN}, 783}, {Spec{Kind: CNN}, 9}, {Spec{Kind: CNNLarge}, 16}, {Spec{Kind: CNN, Channels: 3}, 784}} {
		if _, err := bad.s.Build(bad.dim, 10, 2); err == nil {
			t.Errorf("%+v built for dim %d", bad.s, bad.dim)
		}
	}
	// The real 28×28 shapes build and run.
	for _, k := range []string{CNN, CNNLarge} {
		m, err := Spec{Kind: k}.Build(784, 10, 2)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(rand.New(rand.NewPCG(1, 1)))
		d := images(28, 10)(2, rand.New(rand.NewPCG(2, 2)))
		if _, err := m.Grad(make([]float32, m.NumParams()), fill(d, 2, seq(0, 2))); err != nil {
			t.Fatalf("%s on 28x28: %v", k, err)
		}
	}
}

// TestForwardEvalMatchesFullGraph: Eval runs only the forward program (no
// backward pass); the logits it computes equal those of a run of the whole
// graph on the same inputs (to 1e-6 relative), and for classifiers without
// dropout its loss is the training loss. The whole graph runs first on
// another batch, so a forward pass that computed nothing would leave that
// batch's logits behind and fail.
func TestForwardEvalMatchesFullGraph(t *testing.T) {
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, 12))
			d := tc.data(2*tc.batch, r)
			m := build(t, tc, d, tc.batch)
			m.Init(r)
			b1, b2 := fill(d, tc.batch, seq(0, tc.batch)), fill(d, tc.batch, seq(tc.batch, 2*tc.batch))
			var load func(*datasets.Batch)
			switch mm := m.(type) {
			case *cnn:
				load = func(b *datasets.Batch) { mm.load(b); mm.off() }
			case *lstm:
				load = mm.load
			case *dense:
				load = mm.load
			case *stack:
				load = func(b *datasets.Batch) { mm.load(b); mm.drop.off() }
			case stochasticStack:
				load = func(b *datasets.Batch) { mm.load(b); mm.drop.off() }
			default:
				t.Fatalf("unexpected model type %T", m)
			}
			gm := graphOf(t, m)
			load(b2)
			gm.train.run()
			s, err := m.Eval(b1)
			if err != nil {
				t.Fatal(err)
			}
			fwd := append([]float32(nil), gm.fwd.out(0)...)
			load(b1)
			gm.train.run()
			full := gm.train.out(1)
			for i := range full {
				if math.Abs(float64(full[i]-fwd[i])) > 1e-6*(1+math.Abs(float64(full[i]))) {
					t.Fatalf("logit %d: forward pass %g, whole graph %g", i, fwd[i], full[i])
				}
			}
			if tc.name == "logreg" || tc.name == "mlp" || tc.name == "cnn" {
				l := float64(gm.train.out(0)[0])
				if e := s.LossSum / float64(s.Count); math.Abs(e-l) > 1e-5*math.Abs(l) {
					t.Fatalf("evaluation loss %g, training loss %g", e, l)
				}
			}
		})
	}
}

// TestEvalInChunks: a model built for batches larger than evalRows scores
// them in chunks on a second graph; the scores equal those of a small-batch
// model on the same rows (counts exactly, loss to 1e-9 relative: only the
// float64 sums are grouped differently).
func TestEvalInChunks(t *testing.T) {
	const big, small = 150, 10
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(13, 14))
			d := tc.data(big, r)
			m := build(t, tc, d, big)
			m.Init(r)
			ref := build(t, tc, d, small)
			copy(ref.Params(), m.Params())
			b := fill(d, big, seq(0, big-7)) // padding rows at the end
			got, err := m.Eval(b)
			if err != nil {
				t.Fatal(err)
			}
			var want Score
			for lo := 0; lo < big-7; lo += small {
				s, err := ref.Eval(fill(d, small, seq(lo, min(lo+small, big-7))))
				if err != nil {
					t.Fatal(err)
				}
				want.Add(s)
			}
			if got.Count != want.Count || got.Correct != want.Correct || math.Abs(got.LossSum-want.LossSum) > 1e-9*math.Abs(want.LossSum) {
				t.Fatalf("chunked evaluation %+v, small batches %+v", got, want)
			}
			if want.Count == 0 {
				t.Fatal("nothing scored")
			}
		})
	}
}

// TestConformanceReusedMatchesFresh: a machine that has run many steps on
// other batches and parameters computes exactly (bit for bit) what a freshly
// built one computes. This guards the executor's buffers, reused for every
// run, and any state a reused model could carry over.
func TestConformanceReusedMatchesFresh(t *testing.T) {
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, 12))
			d := tc.data(3*tc.batch, r)
			used := build(t, tc, d, tc.batch)
			used.Init(r)
			grad := make([]float32, used.NumParams())
			for s := 0; s < 5; s++ {
				lo := (s % 2) * tc.batch
				if s == 3 { // a short batch (padding rows) in between
					used.Eval(fill(d, tc.batch, seq(lo, lo+tc.batch/2)))
				}
				if _, err := used.Grad(grad, fill(d, tc.batch, seq(lo, lo+tc.batch))); err != nil {
					t.Fatal(err)
				}
				for i, g := range grad {
					used.Params()[i] -= 0.05 * g
				}
			}
			fresh := build(t, tc, d, tc.batch)
			copy(fresh.Params(), used.Params())
			b := fill(d, tc.batch, seq(2*tc.batch, 3*tc.batch-1))
			for _, m := range []Model{used, fresh} {
				if s, ok := m.(Stochastic); ok {
					s.SetRNG(rand.New(rand.NewPCG(5, 5)))
				}
			}
			g1, g2 := make([]float32, used.NumParams()), make([]float32, used.NumParams())
			l1, err1 := used.Grad(g1, b)
			l2, err2 := fresh.Grad(g2, b)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if l1 != l2 || !slices.Equal(g1, g2) {
				t.Fatalf("reused machine: loss %v, fresh: %v (gradients equal: %v)", l1, l2, slices.Equal(g1, g2))
			}
			s1, _ := used.Eval(b)
			s2, _ := fresh.Eval(b)
			if s1 != s2 {
				t.Fatalf("reused machine scores %+v, fresh %+v", s1, s2)
			}
		})
	}
}
