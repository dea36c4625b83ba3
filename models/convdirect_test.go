package models

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestConvImplicitMatchesIm2col: reading patches in place gives the forward
// pass and the filter gradient exactly the bits of the im2col products, for
// strides, paddings, channel layouts and kernel sizes of the presets and the
// layers.
func TestConvImplicitMatchesIm2col(t *testing.T) {
	if !implicitConv {
		t.Skip("convolutions build im2col matrices with this matrix product")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct {
		batch, c, h, w int
		nchw           bool
		out, k, s, p   int
	}{
		{5, 1, 28, 28, true, 16, 8, 2, 3}, {4, 16, 14, 14, false, 32, 4, 2, 1}, {3, 1, 28, 28, true, 32, 3, 1, 0},
		{3, 3, 9, 7, true, 8, 3, 2, 1}, {2, 8, 14, 14, false, 16, 1, 2, 0}, {2, 4, 5, 6, false, 5, 3, 1, 2},
	} {
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
