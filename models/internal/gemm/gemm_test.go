package gemm

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// fma32 is float32 fused multiply-add, correctly rounded: the product of
// two float32 is exact in float64; the sum is rounded to odd in float64 (a
// round-to-nearest sum with its error from TwoSum, nudged to an odd last bit
// when inexact), and a round-to-odd result with 53 ≥ 24+2 bits rounds to
// float32 exactly as the infinitely precise value would.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	q := float64(c)
	s := p + q
	bb := s - p
	e := (p - (s - bb)) + (q - bb)
	if e != 0 && !math.IsInf(s, 0) {
		bits := math.Float64bits(s)
		if bits&1 == 0 {
			if (e > 0) == (s > 0) {
				bits++
			} else {
				bits--
			}
			s = math.Float64frombits(bits)
		}
	}
	return float32(s)
}

func TestFMA32(t *testing.T) {
	// Cases where an unfused float32 a*b+c or a double-rounded float64
	// evaluation differs from the fused result.
	one := float32(1)
	eps := float32(math.Nextafter32(1, 2) - 1) // 2^-23
	cases := []struct{ a, b, c, want float32 }{
		{1 + eps, 1 - eps, -1, -eps * eps},                       // a·b = 1 − 2^-46: lost without fusion
		{3, one / 3, -1, float32(3*float64(float32(one/3)) - 1)}, // exact residual of 1/3
		{1 + eps, 1 + eps, 0, 1 + 2*eps},                         // ties to even
		{float32(math.Ldexp(1, 12)) + 1, float32(math.Ldexp(1, 12)) - 1, 0, float32(math.Ldexp(1, 24)) - 1}, // exact
	}
	for _, c := range cases {
		if got := fma32(c.a, c.b, c.c); got != c.want {
			t.Errorf("fma32(%g, %g, %g) = %g, want %g", c.a, c.b, c.c, got, c.want)
		}
	}
	// Random and near-tie cases against exact rational arithmetic
	// (math/big), which rounds to float32 to nearest even.
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		x, y, z := float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		if i%2 == 1 { // c ≈ −a·b: cancellation, the rounding error of a·b exposed
			z = -x * y * float32(1+0x1p-20*r.NormFloat64())
		}
		if i%4 == 2 { // a·b tiny beside c: near-ties of c's last bit
			y = float32(math.Ldexp(float64(y), -24-r.IntN(8)))
		}
		bx, by, bz := new(big.Float).SetPrec(300).SetFloat64(float64(x)), new(big.Float).SetPrec(300).SetFloat64(float64(y)), new(big.Float).SetPrec(300).SetFloat64(float64(z))
		want, _ := bx.Mul(bx, by).Add(bx, bz).Float32()
		if got := fma32(x, y, z); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%g, %g, %g) = %g, exact %g", x, y, z, got, want)
		}
	}
}

// reference computes the package's definition of C = α·op(A)·op(B) + β·C
// element by element with the exact fma32.
func reference(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var acc float32
			if beta != 0 {
				acc = beta * c[i*ldc+j]
				if beta == 1 {
					acc = c[i*ldc+j]
				}
			}
			if alpha != 0 {
				for p := 0; p < k; p++ {
					av, bv := at(a, lda, transA, i, p), at(b, ldb, transB, p, j)
					if alpha != 1 {
						av *= alpha
					}
					acc = fma32(av, bv, acc)
				}
			}
			c[i*ldc+j] = acc
		}
	}
}

// at returns op(X)[i,j] of a row-major x.
func at(x []float32, ld int, trans bool, i, j int) float32 {
	if trans {
		return x[j*ld+i]
	}
	return x[i*ld+j]
}

// operands draws A, B and C for the given shapes with padding columns
// (lda, ldb, ldc larger than the width by pad), filled with values that
// would spoil the result if read (NaN in the padding).
func operands(r *rand.Rand, transA, transB bool, m, n, k, pad int) (a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	lda, ldb, ldc = max(1, ac)+pad, max(1, bc)+pad, max(1, n)+pad
	fill := func(rows, cols, ld int) []float32 {
		s := make([]float32, max(0, rows*ld))
		for i := range s {
			if i%ld < cols {
				s[i] = float32(r.NormFloat64())
			} else {
				s[i] = float32(math.NaN())
			}
		}
		return s
	}
	return fill(ar, ac, lda), lda, fill(br, bc, ldb), ldb, fill(m, n, ldc), ldc
}

// kernels lists the micro-kernels this machine can run.
func kernelSets() []kernels {
	return append([]kernels{goKernels}, archKernels()...)
}

func withKernel(k kernels, f func()) {
	saved, savedNarrow, savedEight := active, narrow, eight
	active, narrow, eight = k, kernels{}, kernels{}
	defer func() { active, narrow, eight = saved, savedNarrow, savedEight }()
	f()
}

var testSizes = []int{1, 2, 5, 7, 16, 17, 31, 33, 63, 65, 130}

// TestSgemmExact: every assembly kernel gives the reference's bits for all
// transpose combinations, odd sizes, leading dimensions wider than the
// matrices, k beyond one block, and α, β ∈ {0, 1, other}. The pure-Go kernel
// (unfused a*b + c on amd64) is within 2·k·2⁻²⁴·Σ|α a b| + 2⁻²²|c| of it.
func TestSgemmExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	type shape struct{ m, n, k int }
	var shapes []shape
	for _, m := range testSizes {
		for _, n := range testSizes {
			shapes = append(shapes, shape{m, n, testSizes[(m*7+n)%len(testSizes)]})
		}
	}
	shapes = append(shapes, shape{7, 33, 300}, shape{130, 17, 600}, shape{13, 1100, 5}, shape{64, 200, 784}, shape{250, 40, 20}, shape{3, 3, 0},
		shape{transposedRows, transposedRows + 1, 9}, shape{transposedRows + 1, 300, 20}, shape{320, 512, 24})
	scalars := [][2]float32{{1, 0}, {1, 1}, {0.5, -0.75}, {0, 0.5}, {-1, 0}}
	for _, kern := range kernelSets() {
		for si, s := range shapes {
			for tr := 0; tr < 4; tr++ {
				tA, tB := tr&1 == 1, tr&2 == 2
				ab := scalars[(si+tr)%len(scalars)]
				pad := (si + tr) % 3 * 2
				a, lda, b, ldb, c, ldc := operands(r, tA, tB, s.m, s.n, s.k, pad)
				want := append([]float32(nil), c...)
				reference(tA, tB, s.m, s.n, s.k, ab[0], a, lda, b, ldb, ab[1], want, ldc)
				got := append([]float32(nil), c...)
				withKernel(kern, func() { Sgemm(tA, tB, s.m, s.n, s.k, ab[0], a, lda, b, ldb, ab[1], got, ldc) })
				name := fmt.Sprintf("%s tA=%v tB=%v m=%d n=%d k=%d α=%g β=%g ld+%d", kern.main.name, tA, tB, s.m, s.n, s.k, ab[0], ab[1], pad)
				for i := range got {
					if i%ldc >= s.n { // padding of C must be untouched
						if !math.IsNaN(float64(got[i])) {
							t.Fatalf("%s: wrote C padding at %d", name, i)
						}
						continue
					}
					if kern.main.name != "go" {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: C[%d] = %g, reference %g (must be bit-identical)", name, i, got[i], want[i])
						}
						continue
					}
					row, col := i/ldc, i%ldc
					var mag float64
					for p := 0; p < s.k; p++ {
						av, bv := at(a, lda, tA, row, p), at(b, ldb, tB, p, col)
						mag += math.Abs(float64(ab[0]) * float64(av) * float64(bv))
					}
					tol := 2*float64(s.k)*0x1p-24*mag + 0x1p-22*math.Abs(float64(want[i]))
					if d := math.Abs(float64(got[i] - want[i])); !(d <= tol) {
						t.Fatalf("%s: C[%d] = %g, reference %g, off by %g > %g", name, i, got[i], want[i], d, tol)
					}
				}
			}
		}
	}
}

// TestSgemmEightRows: products of eight rows go through the machine's own
// kernel choice (the 8×16 kernel with AVX-512, which TestSgemmExact also
// runs on every shape) and keep the reference's bits, beside at most 16
// columns and beside more.
func TestSgemmEightRows(t *testing.T) {
	if Kernel() == "go" {
		t.Skip("no assembly kernel")
	}
	if haveAVX512 && eight.main.mr != 8 {
		t.Fatalf("AVX-512 without the 8×16 kernel for eight rows")
	}
	r := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{3, 16, 17, 40} {
		for _, k := range []int{1, 9, 240, 300} {
			for tr := 0; tr < 4; tr++ {
				tA, tB := tr&1 == 1, tr&2 == 2
				for _, beta := range []float32{0, 1} {
					a, lda, b, ldb, c, ldc := operands(r, tA, tB, 8, n, k, tr%2)
					want := append([]float32(nil), c...)
					reference(tA, tB, 8, n, k, 1, a, lda, b, ldb, beta, want, ldc)
					Sgemm(tA, tB, 8, n, k, 1, a, lda, b, ldb, beta, c, ldc)
					for i := range c {
						if i%ldc < n && math.Float32bits(c[i]) != math.Float32bits(want[i]) {
							t.Fatalf("n=%d k=%d tA=%v tB=%v β=%g: C[%d] = %g, reference %g", n, k, tA, tB, beta, i, c[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestSgemmSegments: products over segments of overlapping rows (a
// convolution's kernel rows) give the bits of the exact chain from C over
// the segments in order, on the AVX-512 tile paths (16 columns, rows a
// multiple of 12; columns a multiple of 32, rows of 6) and on the fallback
// (other shapes, or no segment kernel).
// Negative control: the segments in the other order give other bits.
func TestSgemmSegments(t *testing.T) {
	if haveAVX512 && (segKernel == nil || segKernel32 == nil) {
		t.Fatal("AVX-512 without the segment kernels")
	}
	r := rand.New(rand.NewPCG(15, 16))
	for _, s := range []struct{ m, n, k, lda int }{{240, 16, 8, 2}, {12, 16, 1, 1}, {60, 16, 64, 32}, {48, 16, 24, 8}, {19, 16, 8, 2}, {24, 13, 8, 2}, {36, 32, 9, 3}, {60, 32, 64, 32}, {30, 64, 3, 1}, {20, 32, 5, 2}, {12, 16, 40, 8}} {
		for _, nseg := range []int{1, 3, 8} {
			offs := make([]int, nseg)
			for i := range offs {
				offs[i] = r.IntN(200)
			}
			a := randVals(r, 200+s.m*s.lda+s.k)
			b := randVals(r, nseg*s.k*s.n)
			c := randVals(r, s.m*s.n)
			want := append([]float32(nil), c...)
			for i, off := range offs {
				reference(false, false, s.m, s.n, s.k, 1, a[off:], s.lda, b[i*s.k*s.n:], s.n, 1, want, s.n)
			}
			rev := append([]float32(nil), c...)
			for i := nseg - 1; i >= 0; i-- {
				reference(false, false, s.m, s.n, s.k, 1, a[offs[i]:], s.lda, b[i*s.k*s.n:], s.n, 1, rev, s.n)
			}
			for _, fast := range []bool{true, false} {
				got := append([]float32(nil), c...)
				saved, saved32 := segKernel, segKernel32
				if !fast {
					segKernel, segKernel32 = nil, nil
				}
				var ctx Context
				ctx.SgemmSegments(s.m, s.n, s.k, offs, a, s.lda, b, s.n, got, s.n)
				segKernel, segKernel32 = saved, saved32
				differs := false
				for i := range got {
					if Kernel() != "go" && math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%+v nseg=%d fast=%v: C[%d] = %g, reference %g", s, nseg, fast, i, got[i], want[i])
					}
					differs = differs || got[i] != rev[i]
				}
				if nseg > 1 && s.k > 1 && !differs {
					t.Errorf("%+v nseg=%d: the segments in reverse order give the same values", s, nseg)
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a segment past the end of a did not panic")
		}
	}()
	var ctx Context
	ctx.SgemmSegments(12, 16, 8, []int{0, 100}, make([]float32, 120), 2, make([]float32, 2*8*16), 16, make([]float32, 12*16), 16)
}

// randVals draws n values spread over several magnitudes (so that the order
// of a sum shows in its bits).
func randVals(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(5)-2)))
	}
	return x
}

// TestSgemmMatchesGonum: a second, independent oracle (gonum's Sgemm) on the
// models' shapes, within the same rounding bound.
func TestSgemmMatchesGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range modelShapes {
		tA, tB := s.tA, s.tB
		a, lda, b, ldb, c, ldc := operands(r, tA, tB, s.m, s.n, s.k, 0)
		want := append([]float32(nil), c...)
		gonum.Implementation{}.Sgemm(tr(tA), tr(tB), s.m, s.n, s.k, 1, a, lda, b, ldb, 0, want, ldc)
		Sgemm(tA, tB, s.m, s.n, s.k, 1, a, lda, b, ldb, 0, c, ldc)
		for i := range c {
			if d := math.Abs(float64(c[i] - want[i])); d > 1e-5*float64(s.k) {
				t.Fatalf("%s: C[%d] = %g, gonum %g", s.name, i, c[i], want[i])
			}
		}
	}
}

func TestSgemmPanics(t *testing.T) {
	for _, f := range []func(){
		func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 3), 2, make([]float32, 4), 2, 0, make([]float32, 4), 2)
		},
		func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 1, make([]float32, 4), 2, 0, make([]float32, 4), 2)
		},
		func() { Sgemm(false, false, -1, 2, 2, 1, nil, 2, nil, 2, 0, nil, 2) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("bad arguments did not panic")
				}
			}()
			f()
		}()
	}
}

func TestSgemmAllocatesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	a, lda, b, ldb, c, ldc := operands(r, true, true, 70, 90, 300, 0)
	Sgemm(true, true, 70, 90, 300, 1, a, lda, b, ldb, 0, c, ldc)
	if n := testing.AllocsPerRun(20, func() { Sgemm(true, true, 70, 90, 300, 1, a, lda, b, ldb, 0, c, ldc) }); n != 0 {
		t.Errorf("%v allocations per call", n)
	}
}

func tr(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// modelShapes are the products dpfl's models run (batch 16 and 64): forward
// (x·W), input gradient (δ·Wᵀ) and weight gradient (xᵀ·δ) of their layers.
var modelShapes = func() []struct {
	name    string
	tA, tB  bool
	m, n, k int
} {
	type sh = struct {
		name    string
		tA, tB  bool
		m, n, k int
	}
	var out []sh
	layer := func(name string, batch, in, outw int) {
		out = append(out,
			sh{fmt.Sprintf("%s/b%d/fwd", name, batch), false, false, batch, outw, in},
			sh{fmt.Sprintf("%s/b%d/dx", name, batch), false, true, batch, in, outw},
			sh{fmt.Sprintf("%s/b%d/dW", name, batch), true, false, in, outw, batch})
	}
	// A convolution as package models runs it: rows = output pixels of a
	// chunk of examples; forward im2col·Wᵀ, filter gradient dyᵀ·im2col, input
	// gradient dy·W.
	conv := func(name string, rows, k, o int) {
		out = append(out,
			sh{fmt.Sprintf("%s/r%d/fwd", name, rows), false, true, rows, o, k},
			sh{fmt.Sprintf("%s/r%d/dW", name, rows), true, false, o, k, rows},
			sh{fmt.Sprintf("%s/r%d/dx", name, rows), false, false, rows, k, o})
	}
	for _, b := range []int{16, 64} {
		layer("mlp-784x200", b, 784, 200)
		layer("mlp-200x62", b, 200, 62)
		layer("cnn-dense-1568x32", b, 1568, 32)
		layer("cnnlarge-dense-9216x128", b, 9216, 128)
		layer("lstm-gates-128x512", b, 128, 512)
		layer("lstm-out-32x1004", b*20, 32, 1004)
		conv("cnn-conv1", b*196, 64, 16)
		conv("cnn-conv2", b*49, 256, 32)
		conv("cnnlarge-conv1", b*676, 9, 32)
	}
	conv("cnnlarge-conv2", 576, 288, 64)
	return out
}()

// BenchmarkSgemm compares this package's kernels (pure Go, AVX2, AVX-512 as
// the machine has them) with gonum's Sgemm at the models' shapes, side by
// side, in GFLOP/s.
func BenchmarkSgemm(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, s := range modelShapes {
		a, lda, bb, ldb, c, ldc := operands(r, s.tA, s.tB, s.m, s.n, s.k, 0)
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		for _, ks := range kernelSets() {
			b.Run(s.name+"/"+ks.main.name, func(b *testing.B) {
				var ctx Context
				withKernel(ks, func() {
					for i := 0; i < b.N; i++ {
						ctx.Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, ldc)
					}
				})
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
		b.Run(s.name+"/gonum", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				gonum.Implementation{}.Sgemm(tr(s.tA), tr(s.tB), s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, ldc)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestSgemmOverlap: products whose factors' rows overlap (a stride smaller
// than a row, as a convolution's patches read from the image) give exactly
// the bits of Sgemm on the same rows copied out, for every transposition,
// including edge tiles and panels of several passes over k.
func TestSgemmOverlap(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	// rows copies the rows×cols matrix read at stride ld from x.
	rows := func(x []float32, nr, nc, ld int) []float32 {
		d := make([]float32, nr*nc)
		for i := 0; i < nr; i++ {
			copy(d[i*nc:(i+1)*nc], x[i*ld:i*ld+nc])
		}
		return d
	}
	for _, s := range []struct{ m, n, k, step int }{{238, 16, 8, 2}, {56, 32, 64, 32}, {16, 8, 238, 2}, {8, 16, 240, 2}, {32, 64, 56, 32}, {7, 13, 300, 3}} {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				ar, ac := s.m, s.k
				if tA {
					ar, ac = s.k, s.m
				}
				br, bc := s.k, s.n
				if tB {
					br, bc = s.n, s.k
				}
				x := make([]float32, (ar+br)*s.step+ac+bc+64)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				a, b := x, x[7:] // A and B overlap each other too
				c := make([]float32, s.m*s.n)
				want := make([]float32, s.m*s.n)
				for i := range c {
					c[i] = float32(r.NormFloat64())
				}
				copy(want, c)
				var ctx Context
				ctx.SgemmOverlap(tA, tB, s.m, s.n, s.k, 1, a, s.step, b, s.step, 1, c, s.n)
				Sgemm(tA, tB, s.m, s.n, s.k, 1, rows(a, ar, ac, s.step), ac, rows(b, br, bc, s.step), bc, 1, want, s.n)
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%+v tA=%v tB=%v: C[%d] = %g, copied rows give %g", s, tA, tB, i, c[i], want[i])
					}
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a zero stride did not panic")
		}
	}()
	var ctx Context
	ctx.SgemmOverlap(false, false, 2, 2, 2, 1, make([]float32, 4), 0, make([]float32, 4), 2, 0, make([]float32, 4), 2)
}
