package models

import (
	"math"
	"math/rand/v2"
	"testing"
)

// convTestGeom is a convolution's shape: input batch × c × h × w (NCHW or
// NHWC), out filters of k×k, stride s, padding p.
type convTestGeom struct {
	batch, c, h, w int
	nchw           bool
	out, k, s, p   int
}

// convTestGeoms are the presets' and the layers' geometries and odd ones.
var convTestGeoms = []convTestGeom{
	{5, 1, 28, 28, true, 16, 8, 2, 3}, {4, 16, 14, 14, false, 32, 4, 2, 1}, {3, 1, 28, 28, true, 32, 3, 1, 0},
	{3, 3, 9, 7, true, 8, 3, 2, 1}, {2, 8, 14, 14, false, 16, 1, 2, 0}, {2, 4, 5, 6, false, 5, 3, 1, 2},
}

// TestConvImplicitMatchesIm2col: reading patches in place gives the forward
// pass and the filter gradient exactly the bits of the im2col products, for
// strides, paddings, channel layouts and kernel sizes of the presets and the
// layers.
func TestConvImplicitMatchesIm2col(t *testing.T) {
	if !implicitConv {
		t.Skip("convolutions build im2col matrices with this matrix product")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, c := range convTestGeoms {
		g := newConvGeom(c.batch, c.c, c.h, c.w, c.nchw, c.out, c.k, c.s, c.p)
		ge := g
		ge.viaIm2col = true
		x, w, b, dy := randn(r, g.batch*g.inDim()), randn(r, g.out*g.kdim()), randn(r, g.out), randn(r, g.batch*g.outDim())
		for i := range dy { // a rectifier's zeros
			if i%3 == 0 {
				dy[i] = 0
			}
		}
		run := func(g convGeom) (y, dw []float32) {
			o := conv{g, new(convScratch), new(blasCtx)}
			y, dw = make([]float32, g.batch*g.outDim()), make([]float32, len(w))
			o.run(y, [][]float32{x, w, b})
			convGradW(o).run(dw, [][]float32{x, dy})
			return y, dw
		}
		y, dw := run(g)
		ye, dwe := run(ge)
		for name, p := range map[string][2][]float32{"y": {y, ye}, "dW": {dw, dwe}} {
			for i := range p[0] {
				if math.Float32bits(p[0][i]) != math.Float32bits(p[1][i]) {
					t.Fatalf("%v: %s[%d] = %g in place, %g through im2col", g, name, i, p[0][i], p[1][i])
				}
			}
		}
	}
}

func randn(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// col2imRowOrder is the definition of col2im: the rows of dcol added into
// dx one after another, each kernel row's values in order.
func (g convGeom) col2imRowOrder(dx, dcol []float32, e0, n int) {
	K, C := g.kdim(), g.c
	row := 0
	for e := e0; e < e0+n; e++ {
		img := dx[e*g.inDim() : (e+1)*g.inDim()]
		for oy := 0; oy < g.oh; oy++ {
			for ox := 0; ox < g.ow; ox++ {
				src := dcol[row*K : (row+1)*K]
				row++
				for i := 0; i < g.kh; i++ {
					iy := oy*g.stride - g.pad + i
					for j := 0; j < g.kw; j++ {
						ix := ox*g.stride - g.pad + j
						if iy < 0 || iy >= g.h || ix < 0 || ix >= g.w {
							continue
						}
						for c := 0; c < C; c++ {
							k := (iy*g.w+ix)*C + c
							if g.nchw {
								k = (c*g.h+iy)*g.w + ix
							}
							img[k] += src[(i*g.kw+j)*C+c]
						}
					}
				}
			}
		}
	}
}

// TestCol2imRowOrder: col2im gives the bits of adding the rows in order
// (each input value's terms in the same order), for the presets' and the
// layers' geometries and odd ones (strides 1–3, paddings 0–2, channels 1–16,
// both layouts); a part of the examples only, as the input gradient's
// chunks do. Negative control: the kernel columns in the other order give
// other bits somewhere.
func TestCol2imRowOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, c := range append(convTestGeoms[:len(convTestGeoms):len(convTestGeoms)], []convTestGeom{
		{2, 8, 14, 14, false, 8, 3, 1, 1}, {2, 8, 14, 14, false, 16, 3, 2, 1}, {2, 16, 7, 7, false, 16, 3, 1, 1},
		{2, 3, 8, 9, false, 4, 5, 3, 2}, {2, 12, 6, 5, false, 4, 2, 1, 0}, {2, 1, 10, 10, false, 4, 3, 2, 2},
	}...) {
		g := newConvGeom(c.batch, c.c, c.h, c.w, c.nchw, c.out, c.k, c.s, c.p)
		dcol := randn(r, g.batch*g.pixels()*g.kdim())
		for i := range dcol {
			dcol[i] *= float32(math.Pow(10, float64(r.IntN(7)-3))) // magnitudes that expose the order
		}
		got, want := randn(r, g.batch*g.inDim()), []float32(nil)
		want = append(want, got...)
		g.col2im(got, dcol[g.pixels()*g.kdim():], 1, g.batch-1)
		g.col2imRowOrder(want, dcol[g.pixels()*g.kdim():], 1, g.batch-1)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%v: dx[%d] = %g, in row order %g", g, i, got[i], want[i])
			}
		}
	}
	// Negative control: one pass per kernel column, in increasing order.
	g := newConvGeom(2, 8, 14, 14, false, 8, 3, 1, 1)
	dcol := randn(r, g.batch*g.pixels()*g.kdim())
	for i := range dcol {
		dcol[i] *= float32(math.Pow(10, float64(r.IntN(7)-3)))
	}
	a, b := make([]float32, g.batch*g.inDim()), make([]float32, g.batch*g.inDim())
	g.col2imRowOrder(a, dcol, 0, g.batch)
	for j := 0; j < g.kw; j++ {
		for row := 0; row < g.batch*g.pixels(); row++ {
			for i := 0; i < g.kh; i++ {
				oy, ox := row%g.pixels()/g.ow, row%g.ow
				iy, ix := oy-g.pad+i, ox-g.pad+j
				if iy < 0 || iy >= g.h || ix < 0 || ix >= g.w {
					continue
				}
				for c := 0; c < g.c; c++ {
					b[row/g.pixels()*g.inDim()+(iy*g.w+ix)*g.c+c] += dcol[row*g.kdim()+(i*g.kw+j)*g.c+c]
				}
			}
		}
	}
	differ := false
	for i := range a {
		differ = differ || math.Float32bits(a[i]) != math.Float32bits(b[i])
	}
	if !differ {
		t.Fatal("negative control: another order of the terms gave the same bits")
	}
}
