package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"dpfl/datasets"
)

// synthetic returns a small labelled dataset whose label depends on the
// features (unit tests only).
func synthetic(n, dim, classes int, r *rand.Rand) *datasets.Dataset {
	d := &datasets.Dataset{X: make([]float32, n*dim), Y: make([]int32, n), Dim: dim, Classes: classes}
	centers := make([]float64, classes*dim)
	for i := range centers {
		centers[i] = r.NormFloat64()
	}
	for i := 0; i < n; i++ {
		c := r.IntN(classes)
		d.Y[i] = int32(c)
		for j := 0; j < dim; j++ {
			d.X[i*dim+j] = float32(centers[c*dim+j] + 0.5*r.NormFloat64())
		}
	}
	return d
}

func batchOf(d *datasets.Dataset, size int, idx []int) *datasets.Batch {
	b := datasets.NewBatch(size, d.Dim)
	b.Fill(d, idx)
	return b
}

// TestGradMatchesFiniteDifferences checks every model kind's gradient against
// central differences of its own loss. float32 arithmetic: step 1e-3 (small enough not to cross ReLU kinks here) and
// tolerance 2e-3 absolute + 2% relative on each checked coordinate.
func TestGradMatchesFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	d := synthetic(7, 5, 3, r)
	for _, spec := range []Spec{{Kind: LogReg}, {Kind: MLP, Hidden: []int{4}}, {Kind: MLP, Hidden: []int{6, 4}}} {
		m, err := spec.Build(d.Dim, d.Classes, 8)
		if err != nil {
			t.Fatal(err)
		}
		if m.NumParams() != spec.NumParams(d.Dim, d.Classes) {
			t.Fatalf("%v: NumParams %d, Spec.NumParams %d", spec, m.NumParams(), spec.NumParams(d.Dim, d.Classes))
		}
		m.Init(r)
		p := m.Params()
		for i := range p { // biases away from zero so every parameter matters
			p[i] += float32(0.1 * r.NormFloat64())
		}
		b := batchOf(d, 8, []int{0, 1, 2, 3, 4, 5, 6}) // one padding row
		grad := make([]float32, m.NumParams())
		if _, err := m.Grad(grad, b); err != nil {
			t.Fatal(err)
		}
		lossAt := func() float64 {
			l, err := m.Grad(make([]float32, m.NumParams()), b)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		const h = 1e-3
		for i := range p {
			old := p[i]
			p[i] = old + h
			up := lossAt()
			p[i] = old - h
			down := lossAt()
			p[i] = old
			fd := (up - down) / (2 * h)
			if math.Abs(fd-float64(grad[i])) > 2e-3+0.02*math.Abs(fd) {
				t.Errorf("%v: parameter %d: gradient %g, finite difference %g", spec, i, grad[i], fd)
			}
		}
	}
}

// TestPaddingRowsDoNotMatter checks that padding rows (weight 0) change
// neither the loss nor the gradient, whatever their content.
func TestPaddingRowsDoNotMatter(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	d := synthetic(10, 4, 3, r)
	m, err := Spec{Kind: MLP, Hidden: []int{5}}.Build(4, 3, 6)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(r)
	b := batchOf(d, 6, []int{0, 1, 2})
	g1 := make([]float32, m.NumParams())
	l1, _ := m.Grad(g1, b)
	for i := 3 * 4; i < len(b.X); i++ {
		b.X[i] = 100
	}
	b.Y[4] = 2
	g2 := make([]float32, m.NumParams())
	l2, _ := m.Grad(g2, b)
	if l1 != l2 {
		t.Fatalf("loss changed with padding content: %g vs %g", l1, l2)
	}
	for i := range g1 {
		if g1[i] != g2[i] {
			t.Fatalf("gradient %d changed with padding content", i)
		}
	}
}

// TestSGDReducesLoss runs a few hundred plain SGD steps and expects the
// training loss to fall well below its initial value.
func TestSGDReducesLoss(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	d := synthetic(200, 10, 4, r)
	for _, spec := range []Spec{{Kind: LogReg}, {Kind: MLP, Hidden: []int{16}}} {
		m, err := spec.Build(d.Dim, d.Classes, 20)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(r)
		full := datasets.NewBatch(200, d.Dim)
		all := make([]int, 200)
		for i := range all {
			all[i] = i
		}
		eval, _ := spec.Build(d.Dim, d.Classes, 200)
		lossOf := func() float64 {
			copy(eval.Params(), m.Params())
			full.Fill(d, all)
			s, err := eval.Eval(full)
			if err != nil {
				t.Fatal(err)
			}
			return s.LossSum / float64(s.Count)
		}
		before := lossOf()
		grad := make([]float32, m.NumParams())
		b := datasets.NewBatch(20, d.Dim)
		for step := 0; step < 300; step++ {
			lo := (step * 20) % 200
			b.Fill(d, all[lo:lo+20])
			if _, err := m.Grad(grad, b); err != nil {
				t.Fatal(err)
			}
			for i, g := range grad {
				m.Params()[i] -= 0.1 * g
			}
		}
		if after := lossOf(); after > 0.3*before {
			t.Errorf("%v: loss %g -> %g after 300 SGD steps; want at most 30%% of the start", spec, before, after)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	for _, s := range []Spec{{Kind: "cnn9"}, {Kind: MLP}, {Kind: MLP, Hidden: []int{0}}} {
		if _, err := s.Build(4, 3, 2); err == nil {
			t.Errorf("%v: built without error", s)
		}
	}
}

func benchGrad(b *testing.B, spec Spec, batch int) {
	r := rand.New(rand.NewPCG(1, 1))
	d := synthetic(batch, 784, 10, r)
	m, err := spec.Build(784, 10, batch)
	if err != nil {
		b.Fatal(err)
	}
	m.Init(r)
	idx := make([]int, batch)
	for i := range idx {
		idx[i] = i
	}
	bt := batchOf(d, batch, idx)
	grad := make([]float32, m.NumParams())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Grad(grad, bt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "examples/s")
}

func BenchmarkGradLogReg16(b *testing.B) { benchGrad(b, Spec{Kind: LogReg}, 16) }
func BenchmarkGradLogReg64(b *testing.B) { benchGrad(b, Spec{Kind: LogReg}, 64) }
func BenchmarkGradMLP16(b *testing.B)    { benchGrad(b, Spec{Kind: MLP, Hidden: []int{200}}, 16) }
func BenchmarkGradMLP64(b *testing.B)    { benchGrad(b, Spec{Kind: MLP, Hidden: []int{200}}, 64) }
