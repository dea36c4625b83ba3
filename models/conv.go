package models

import (
	"fmt"

	"dpfl/models/internal/vec"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Convolution and max-pooling ops. Feature maps are NHWC (each example's
// pixels in row-major order, the channels of a pixel contiguous), flattened
// to [batch, h·w·c]; the first layer may read the channel-major (NCHW)
// images of a batch instead. Filters are [out, kh, kw, in] so that a filter
// row matches an im2col row; a convolution is one matrix product per chunk
// of examples, rows = output pixels: y = im2col(x) · Wᵀ + b. With dpfl's
// matrix product the forward pass and the filter gradient read the patches
// in place instead (convdirect.go), with the same bits; the input gradient
// scatters dy · W through col2im.

// convGeom is the static shape of one convolution.
type convGeom struct {
	batch, c, h, w int  // input
	nchw           bool // input is channel-major
	out, kh, kw    int
	stride, pad    int
	oh, ow         int
	chunk          int  // examples per matrix product
	xchunk         int  // examples per product of the input gradient
	viaIm2col      bool // build im2col matrices even where patches can be read in place
}

func newConvGeom(batch, c, h, w int, nchw bool, out, k, stride, pad int) convGeom {
	g := convGeom{batch: batch, c: c, h: h, w: w, nchw: nchw, out: out, kh: k, kw: k, stride: stride, pad: pad}
	g.oh = (h+2*pad-k)/stride + 1
	g.ow = (w+2*pad-k)/stride + 1
	// The im2col matrix of the whole batch when it is small (computed once
	// by the forward pass, read again for the filter gradient); otherwise
	// about a thousand rows at a time, recomputed.
	g.chunk = min(batch, max(1, 1024/(g.oh*g.ow)))
	g.xchunk = g.chunk
	if g.cached() {
		g.chunk = batch
	}
	return g
}

func (g convGeom) kdim() int { return g.kh * g.kw * g.c }

// cached reports whether the forward pass keeps the whole batch's im2col
// matrix for the filter gradient (at most 2M floats, 8 MB).
func (g convGeom) cached() bool { return g.batch*g.oh*g.ow*g.kdim() <= cacheLimit }

const cacheLimit = 1 << 21

func (g convGeom) filterShape() tensor.Shape {
	return tensor.Shape{g.out, g.kh, g.kw, g.c}
}
func (g convGeom) inDim() int  { return g.c * g.h * g.w }
func (g convGeom) outDim() int { return g.oh * g.ow * g.out }
func (g convGeom) pixels() int { return g.oh * g.ow }
func (g convGeom) String() string {
	return fmt.Sprintf("%dx%dx%dx%d(nchw=%v)*%dx%dx%d/s%dp%d", g.batch, g.h, g.w, g.c, g.nchw, g.out, g.kh, g.kw, g.stride, g.pad)
}

// im2col writes the patches of examples e0..e0+n of x into col: one row of
// kdim values (kernel row, kernel column, channel) per output pixel, zero
// where the kernel overhangs the padded border.
func (g convGeom) im2col(col, x []float32, e0, n int) {
	K, C, seg := g.kdim(), g.c, g.kw*g.c
	row := 0
	for e := e0; e < e0+n; e++ {
		img := x[e*g.inDim() : (e+1)*g.inDim()]
		for oy := 0; oy < g.oh; oy++ {
			for ox := 0; ox < g.ow; ox++ {
				dst := col[row*K : (row+1)*K]
				row++
				x0 := ox*g.stride - g.pad // input column of kernel column 0
				j0, j1 := max(0, -x0), min(g.kw, g.w-x0)
				for i := 0; i < g.kh; i++ {
					d := dst[i*seg : (i+1)*seg]
					iy := oy*g.stride - g.pad + i
					if iy < 0 || iy >= g.h || j1 <= j0 {
						zero(d)
						continue
					}
					zero(d[:j0*C])
					zero(d[j1*C:])
					if !g.nchw || C == 1 {
						copySmall(d[j0*C:j1*C], img[(iy*g.w+x0+j0)*C:(iy*g.w+x0+j1)*C])
						continue
					}
					for j := j0; j < j1; j++ {
						for c := 0; c < C; c++ {
							d[j*C+c] = img[(c*g.h+iy)*g.w+x0+j]
						}
					}
				}
			}
		}
	}
}

// copySmall is copy for the few values of a patch row, where a call to
// memmove costs more than the copy: fixed-size moves for the common widths,
// a plain loop for other short rows.
func copySmall(dst, src []float32) {
	switch len(src) {
	case 8:
		*(*[8]float32)(dst) = [8]float32(src)
		return
	case 16:
		*(*[16]float32)(dst) = [16]float32(src)
		return
	case 32:
		*(*[32]float32)(dst) = [32]float32(src)
		return
	}
	if len(src) > 32 {
		copy(dst, src)
		return
	}
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = v
	}
}

// zero clears a short slice.
func zero(d []float32) {
	if len(d) >= 32 {
		clear(d)
		return
	}
	for i := range d {
		d[i] = 0
	}
}

// col2im adds the rows of dcol (as im2col laid them out) into dx for
// examples e0..e0+n: each input value receives its terms in row order (the
// output pixels in order). For NHWC input it adds, per output row and
// kernel row, one kernel column of every output pixel of the row at a time
// (runs of c values, s·c apart in dx), the kernel columns from last to
// first: a value's terms then come in increasing output column, as in row
// order.
func (g convGeom) col2im(dx, dcol []float32, e0, n int) {
	if g.nchw && g.c > 1 {
		g.col2imNCHW(dx, dcol, e0, n)
		return
	}
	K, C, s := g.kdim(), g.c, g.stride
	row := 0
	for e := e0; e < e0+n; e++ {
		img := dx[e*g.inDim() : (e+1)*g.inDim()]
		for oy := 0; oy < g.oh; oy, row = oy+1, row+g.ow {
			for i := 0; i < g.kh; i++ {
				iy := oy*s - g.pad + i
				if iy < 0 || iy >= g.h {
					continue
				}
				for j := g.kw - 1; j >= 0; j-- {
					// The output columns whose kernel column j is inside
					// the image: 0 ≤ ox·s − pad + j < w.
					lo, hi := 0, g.w-1+g.pad-j
					if hi < 0 {
						continue
					}
					if d := g.pad - j; d > 0 {
						lo = (d + s - 1) / s
					}
					hi = min(g.ow-1, hi/s)
					if hi < lo {
						continue
					}
					dst := img[(iy*g.w+lo*s-g.pad+j)*C:]
					src := dcol[(row+lo)*K+(i*g.kw+j)*C:]
					vec.AddStrided(dst, s*C, src, K, C, hi-lo+1)
				}
			}
		}
	}
}

// col2imNCHW is col2im for channel-major input, in row order.
func (g convGeom) col2imNCHW(dx, dcol []float32, e0, n int) {
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
					if iy < 0 || iy >= g.h {
						continue
					}
					x0 := ox*g.stride - g.pad
					j0, j1 := max(0, -x0), min(g.kw, g.w-x0)
					for j := j0; j < j1; j++ {
						for c := 0; c < C; c++ {
							img[(c*g.h+iy)*g.w+x0+j] += src[i*g.kw*C+j*C+c]
						}
					}
				}
			}
		}
	}
}

// conv2d adds y = conv(x, W) + b: x [batch, inDim], W [out, kh, kw, c],
// b [out]; y [batch, oh·ow·out] (NHWC).
func conv2d(mm *blasCtx, x, w, b *G.Node, g convGeom) (*G.Node, error) {
	if !x.Shape().Eq(tensor.Shape{g.batch, g.inDim()}) || !w.Shape().Eq(g.filterShape()) || !b.Shape().Eq(tensor.Shape{g.out}) {
		return nil, fmt.Errorf("models: convolution %v: shapes x %v, W %v, b %v", g, x.Shape(), w.Shape(), b.Shape())
	}
	return apply(conv{g, new(convScratch), mm}, x, w, b)
}

// convScratch holds the im2col matrix (one chunk, or the whole batch when
// cached) and the input-gradient's chunk, shared by a convolution and its
// gradient ops (they run one after another on the model's goroutine, the
// forward pass first). Each is allocated when first needed.
type convScratch struct {
	col, dcol, pad, yv, dyv, wt, dwt []float32
	offs                             []int // the kernel rows' offsets in a padded example
}

func (sc *convScratch) colBuf(g convGeom) []float32 {
	if sc.col == nil {
		sc.col = make([]float32, g.chunk*g.pixels()*g.kdim())
	}
	return sc.col
}

func (sc *convScratch) dcolBuf(g convGeom) []float32 {
	if sc.dcol == nil {
		sc.dcol = make([]float32, g.xchunk*g.pixels()*g.kdim())
	}
	return sc.dcol
}

// colOf returns the im2col rows of examples e0..e0+n, computing them unless
// the forward pass cached them (reuse).
func (g convGeom) colOf(sc *convScratch, x []float32, e0, n int, reuse bool) []float32 {
	col := sc.colBuf(g)
	if g.cached() {
		c := col[e0*g.pixels()*g.kdim() : (e0+n)*g.pixels()*g.kdim()]
		if !reuse {
			g.im2col(c, x, e0, n)
		}
		return c
	}
	g.im2col(col, x, e0, n)
	return col[:n*g.pixels()*g.kdim()]
}

type conv struct {
	g  convGeom
	sc *convScratch
	mm *blasCtx
}

func (o conv) name() string        { return fmt.Sprintf("conv(%v)@%p", o.g, o.sc) }
func (o conv) shape() tensor.Shape { return tensor.Shape{o.g.batch, o.g.outDim()} }
func (o conv) diffWRT() []bool     { return []bool{true, true, true} }
func (o conv) run(y []float32, in [][]float32) {
	g := o.g
	x, w, b := in[0], in[1], in[2]
	if g.implicit() {
		o.runImplicit(y, x, w, b)
		return
	}
	K, P := g.kdim(), g.pixels()
	for e0 := 0; e0 < g.batch; e0 += g.chunk {
		n := min(g.chunk, g.batch-e0)
		rows := n * P
		col := g.colOf(o.sc, x, e0, n, false)
		yc := y[e0*P*g.out : (e0+n)*P*g.out]
		for r := 0; r < rows; r++ {
			copySmall(yc[r*g.out:(r+1)*g.out], b)
		}
		o.mm.Sgemm(false, true, rows, g.out, K, 1, col, K, w, K, 1, yc, g.out)
	}
}

func (o conv) symDiff(in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
	dx, err := apply(convGradX(o), dy, in[1])
	if err != nil {
		return nil, err
	}
	dw, err := apply(convGradW(o), in[0], dy)
	if err != nil {
		return nil, err
	}
	db, err := apply(colSum{o.g.batch * o.g.pixels(), o.g.out}, dy)
	return G.Nodes{dx, dw, db}, err
}

// convGradW is dL/dW = Σ over chunks of dyᵀ · im2col(x).
type convGradW conv

func (o convGradW) name() string        { return fmt.Sprintf("convGradW(%v)@%p", o.g, o.sc) }
func (o convGradW) shape() tensor.Shape { return o.g.filterShape() }
func (o convGradW) run(dw []float32, in [][]float32) {
	g := o.g
	x, dy := in[0], in[1]
	if g.implicit() {
		o.runImplicit(dw, dy)
		return
	}
	K, P := g.kdim(), g.pixels()
	for e0 := 0; e0 < g.batch; e0 += g.chunk {
		n := min(g.chunk, g.batch-e0)
		col := g.colOf(o.sc, x, e0, n, true)
		beta := float32(1)
		if e0 == 0 {
			beta = 0
		}
		o.mm.Sgemm(true, false, g.out, K, n*P, 1, dy[e0*P*g.out:], g.out, col, K, beta, dw, K)
	}
}

// convGradX is dL/dx = col2im(dy · W).
type convGradX conv

func (o convGradX) name() string        { return fmt.Sprintf("convGradX(%v)@%p", o.g, o.sc) }
func (o convGradX) shape() tensor.Shape { return tensor.Shape{o.g.batch, o.g.inDim()} }
func (o convGradX) run(dx []float32, in [][]float32) {
	g := o.g
	dy, w := in[0], in[1]
	K, P := g.kdim(), g.pixels()
	dcol := o.sc.dcolBuf(g)
	for e0 := 0; e0 < g.batch; e0 += g.xchunk {
		n := min(g.xchunk, g.batch-e0)
		o.mm.Sgemm(false, false, n*P, K, g.out, 1, dy[e0*P*g.out:], g.out, w, K, 0, dcol, K)
		clear(dx[e0*g.inDim() : (e0+n)*g.inDim()]) // only these examples' patches reach it
		g.col2im(dx, dcol, e0, n)
	}
}

// maxPool is 2×2 max-pooling with stride 2 of NHWC maps [batch, h·w·c]
// (a last odd row or column is dropped).
type maxPool struct{ batch, h, w, c int }

func maxPool2(x *G.Node, batch, h, w, c int) (*G.Node, error) {
	if !x.Shape().Eq(tensor.Shape{batch, h * w * c}) {
		return nil, fmt.Errorf("models: max-pool of %dx%dx%d maps given %v", h, w, c, x.Shape())
	}
	return apply(maxPool{batch, h, w, c}, x)
}

func (o maxPool) name() string        { return fmt.Sprintf("maxpool(%dx%dx%dx%d)", o.batch, o.h, o.w, o.c) }
func (o maxPool) shape() tensor.Shape { return tensor.Shape{o.batch, (o.h / 2) * (o.w / 2) * o.c} }
func (o maxPool) diffWRT() []bool     { return []bool{true} }
func (o maxPool) run(y []float32, in [][]float32) {
	x := in[0]
	oh, ow, C := o.h/2, o.w/2, o.c
	for e := 0; e < o.batch; e++ {
		for py := 0; py < oh; py++ {
			for px := 0; px < ow; px++ {
				d := y[((e*oh+py)*ow+px)*C:][:C]
				r0 := x[((e*o.h+2*py)*o.w+2*px)*C:][:2*C]
				r1 := x[((e*o.h+2*py+1)*o.w+2*px)*C:][:2*C]
				for c := range d {
					d[c] = max(r0[c], r0[C+c], r1[c], r1[C+c])
				}
			}
		}
	}
}
func (o maxPool) symDiff(in G.Nodes, out, dy *G.Node) (G.Nodes, error) {
	dx, err := apply(maxPoolGrad(o), in[0], out, dy)
	return G.Nodes{dx}, err
}

// maxPoolGrad routes each output's gradient to the first input of its
// window (row-major order) that equals the maximum.
type maxPoolGrad maxPool

func (o maxPoolGrad) name() string {
	return fmt.Sprintf("maxpoolgrad(%dx%dx%dx%d)", o.batch, o.h, o.w, o.c)
}
func (o maxPoolGrad) shape() tensor.Shape { return tensor.Shape{o.batch, o.h * o.w * o.c} }
func (o maxPoolGrad) run(dx []float32, in [][]float32) {
	x, y, dy := in[0], in[1], in[2]
	oh, ow, C := o.h/2, o.w/2, o.c
	clear(dx)
	for e := 0; e < o.batch; e++ {
		for py := 0; py < oh; py++ {
			for px := 0; px < ow; px++ {
				k := ((e*oh+py)*ow + px) * C
				m, g := y[k:k+C], dy[k:k+C]
				i0 := ((e*o.h+2*py)*o.w + 2*px) * C
				i1 := i0 + o.w*C
				for c := 0; c < C; c++ {
					// The first match in window order, chosen without
					// branches (the compiler turns these into conditional
					// moves; which input is the maximum is unpredictable).
					mc := m[c]
					k := i1 + C + c
					if x[i1+c] == mc {
						k = i1 + c
					}
					if x[i0+C+c] == mc {
						k = i0 + C + c
					}
					if x[i0+c] == mc {
						k = i0 + c
					}
					dx[k] = g[c]
				}
			}
		}
	}
}
