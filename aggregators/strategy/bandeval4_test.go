package strategy

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
)

func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// TestKernelsMatchGonum: dot4AVX2 equals gonum's Ddot and axpy4Band four
// gonum Daxpy calls, bit for bit, at every length 0…70 (all remainders mod
// 4 and 16) and at 341 (another summation order or a fused multiply-add
// fails it: checked by changing the kernel's final reduction).
func TestKernelsMatchGonum(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2: the kernels are not used")
	}
	r := rand.New(rand.NewPCG(5, 6))
	// Magnitudes within 2^±4: wide enough that rounding depends on the
	// order, narrow enough that no product absorbs the others.
	val := func() float64 { return r.NormFloat64() * math.Pow(2, float64(r.IntN(9)-4)) }
	vec := func(m int) []float64 {
		v := make([]float64, m)
		for i := range v {
			v[i] = val()
		}
		return v
	}
	impl := blas64.Implementation()
	lengths := []int{341}
	for m := 0; m <= 70; m++ {
		lengths = append(lengths, m)
	}
	for _, m := range lengths {
		c := vec(m)
		x := [4][]float64{vec(m + 2), vec(m + 2), vec(m + 2), vec(m + 2)}
		var got [4]float64
		got[0], got[1], got[2], got[3] = dot4AVX2(c, x[0], x[1], x[2], x[3])
		for q := range x {
			if want := impl.Ddot(m, x[q], 1, c, 1); !sameBits(got[q], want) {
				t.Fatalf("dot m = %d, vector %d: %v, gonum %v", m, q, got[q], want)
			}
		}
		a := [4]float64{val(), val(), val(), val()}
		dst, want := vec(m), make([]float64, m)
		copy(want, dst)
		axpy4Band(dst, &a, x[0][:m], x[1][:m], x[2][:m], x[3][:m])
		for q := range x {
			impl.Daxpy(m, a[q], x[q], 1, want, 1)
		}
		for i := range dst {
			if !sameBits(dst[i], want[i]) {
				t.Fatalf("axpy m = %d, coordinate %d: %v, gonum %v", m, i, dst[i], want[i])
			}
		}
	}
}

// TestRows4BitIdentical: the banded loss and G computed four rows at a time
// (rows4) equal the one-row passes bit for bit, for band counts from 2 to
// n, row counts that are and are not multiples of the four rows of both
// workers, the prefix workload and a momentum workload, at a start point
// and at a random feasible perturbation of it.
func TestRows4BitIdentical(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2: rows4 is not used")
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		w  *Workload
		bw int
	}{{Prefix(37), 2}, {Prefix(37), 3}, {Prefix(64), 5}, {Prefix(101), 17}, {Prefix(101), 101}, {Prefix(203), 40}, {Momentum(90, 0.9, nil), 12}} {
		p := newBandProblem(c.w, c.bw, func(i, j int) bool { return true })
		theta := p.start(nil)
		for k := range theta {
			theta[k] *= 1 + 0.01*r.NormFloat64()
		}
		xs := make([]float64, p.n*p.bw)
		p.xFromParams(xs, theta)
		f, ok := reverseCholesky(xs, p.n, p.bw)
		if !ok {
			t.Fatalf("n=%d bw=%d: start not positive definite", p.n, p.bw)
		}
		p.plain = true
		gPlain := make([]float64, p.n*p.bw)
		lPlain := p.lossGrad(f, gPlain)
		lPlainNoGrad := p.lossGrad(f, nil)
		p.plain = false
		g4 := make([]float64, p.n*p.bw)
		l4 := p.lossGrad(f, g4)
		l4NoGrad := p.lossGrad(f, nil)
		if !sameBits(l4, lPlain) || !sameBits(l4NoGrad, lPlainNoGrad) || !sameBits(l4, l4NoGrad) {
			t.Fatalf("n=%d bw=%d: loss %v / %v, one row at a time %v / %v", p.n, p.bw, l4, l4NoGrad, lPlain, lPlainNoGrad)
		}
		for i := range g4 {
			if !sameBits(g4[i], gPlain[i]) {
				t.Fatalf("n=%d bw=%d: G entry %d: %v, one row at a time %v", p.n, p.bw, i, g4[i], gPlain[i])
			}
		}
	}
}

// TestBandGramZeros: bandGram equals one gonum Daxpy per row and band row
// (skipped where z_i = 0, as lossGrad skips it) in row order, bit for bit,
// when some z entries are exactly zero (the fallback of the fused kernel),
// across several blocks of band rows.
func TestBandGramZeros(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2: bandGram is not used")
	}
	r := rand.New(rand.NewPCG(9, 10))
	n, bw := 3*bandGramBlock+5, 23
	p := &bandProblem{n: n, bw: bw}
	zs := make([][]float64, 8)
	for q := range zs {
		zs[q] = make([]float64, n)
		for i := range zs[q] {
			if r.IntN(7) > 0 {
				zs[q][i] = r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20))
			}
		}
	}
	got := make([]float64, n*bw)
	for i := range got {
		got[i] = r.NormFloat64()
	}
	want := append([]float64(nil), got...)
	p.bandGram(got, zs)
	impl := blas64.Implementation()
	for _, z := range zs {
		for i := 0; i < n; i++ {
			off := max(0, bw-1-i)
			if m := bw - 1 - off; m > 0 && z[i] != 0 {
				impl.Daxpy(m, z[i], z[i-bw+1+off:], 1, want[i*bw+off:], 1)
			}
			want[i*bw+bw-1] += float64(z[i] * z[i])
		}
	}
	for i := range got {
		if !sameBits(got[i], want[i]) {
			t.Fatalf("entry %d: %v, row by row %v", i, got[i], want[i])
		}
	}
}
