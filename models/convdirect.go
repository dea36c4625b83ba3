package models

// Implicit convolution: the forward pass and the filter gradient read each
// output pixel's patch straight from a zero-padded copy of the input
// instead of an im2col matrix. The padded copy of an example (NHWC rows of
// wp pixels, wp a multiple of the stride s) is stored as s planes, plane φ
// holding the padded rows φ, φ+s, φ+2s, … (hs = ⌈hp/s⌉ rows each). Patch
// row i of output pixel (oy, ox) is padded row oy·s + i, that is row
// oy + ⌊i/s⌋ of plane i mod s, from column ox·s: kw·c contiguous values.
// Numbering the pixels of a "virtual" output of wp/s columns per row,
// v = oy·(wp/s) + ox, the patch row starts v·s·c floats after the start of
// row ⌊i/s⌋ of plane i mod s. So for each kernel row the patches form a
// matrix whose rows overlap, s·c floats apart, which gemm.SgemmOverlap
// multiplies in place (the forward pass takes the kernel rows one after
// another in one gemm.SgemmSegments). The virtual columns ox ≥ ow compute values nobody
// reads (forward) or meet a zero gradient (filter gradient).
//
// Every output element keeps im2col's floating-point operations: the
// forward chain runs over the kernel rows in order, each a chain over
// (kernel column, channel) as im2col lays them out, through C or a
// register between kernel rows (float32 either way); padding contributes the
// same zeros. The filter gradient's chain over pixels in order gains only
// the virtual pixels' terms 0·x, which leave a sum unchanged (a sum that
// starts at +0 never becomes −0) as long as the input is finite.

// implicit reports whether the convolution reads patches in place (the
// default matrix product; OpenBLAS needs rows that do not overlap).
func (g convGeom) implicit() bool { return implicitConv && !g.viaIm2col }

// padW is the padded row width, a multiple of the stride; virtW is the
// virtual output's row width.
func (g convGeom) padW() int   { return (g.w + 2*g.pad + g.stride - 1) / g.stride * g.stride }
func (g convGeom) planeH() int { return (g.h + 2*g.pad + g.stride - 1) / g.stride }
func (g convGeom) virtW() int  { return g.padW() / g.stride }

// padDim is one example's padded copy; the buffer adds (12·s + kw)·c + 12
// zeros after the last so the virtual pixels' patches (and the filter
// gradient's extra rows) stay inside it.
func (g convGeom) padDim() int { return g.stride * g.planeH() * g.padW() * g.c }

// kernelRow is the offset in an example's padded copy of the row that
// kernel row i of output row 0 reads.
func (g convGeom) kernelRow(i int) int {
	return ((i%g.stride)*g.planeH() + i/g.stride) * g.padW() * g.c
}

// virtRows is the number of virtual output pixels of one example, rounded
// up to a multiple of 12 so that no product has a partial tile of rows (the
// micro-kernels have 6 or 12 rows).
func (g convGeom) virtRows() int { return (g.oh*g.virtW() + 11) / 12 * 12 }

// padded copies x into the scratch's padded buffer (NHWC, zero borders,
// which are written once) and returns it.
func (g convGeom) padded(sc *convScratch, x []float32) []float32 {
	if sc.pad == nil {
		sc.pad = make([]float32, g.batch*g.padDim()+(12*g.stride+g.kw)*g.c+12)
	}
	wp, C := g.padW(), g.c
	for e := 0; e < g.batch; e++ {
		img := x[e*g.inDim() : (e+1)*g.inDim()]
		dst := sc.pad[e*g.padDim() : (e+1)*g.padDim()]
		for y := 0; y < g.h; y++ {
			py := y + g.pad
			r0 := ((py%g.stride)*g.planeH()+py/g.stride)*wp + g.pad
			row := dst[r0*C : (r0+g.w)*C]
			if !g.nchw || C == 1 {
				copy(row, img[y*g.w*C:(y+1)*g.w*C])
				continue
			}
			for xx := 0; xx < g.w; xx++ {
				for c := 0; c < C; c++ {
					row[xx*C+c] = img[(c*g.h+y)*g.w+xx]
				}
			}
		}
	}
	return sc.pad
}

// runImplicit is conv.run reading patches in place.
func (o conv) runImplicit(y, x, w, b []float32) {
	g := o.g
	pad := g.padded(o.sc, x)
	V, K, seg, wv := g.virtRows(), g.kdim(), g.kw*g.c, g.virtW()
	if o.sc.yv == nil {
		o.sc.yv, o.sc.wt = make([]float32, V*g.out), make([]float32, K*g.out)
		for i := 0; i < g.kh; i++ {
			o.sc.offs = append(o.sc.offs, g.kernelRow(i))
		}
	}
	yv, wt, offs := o.sc.yv, o.sc.wt, o.sc.offs
	for j := 0; j < g.out; j++ { // the filters as k×out, read in place
		for p, v := range w[j*K : (j+1)*K] {
			wt[p*g.out+j] = v
		}
	}
	for e := 0; e < g.batch; e++ {
		repeatRow(yv[:V*g.out], b)
		o.mm.SgemmSegments(V, g.out, seg, offs, pad[e*g.padDim():], g.stride*g.c, wt, g.out, yv, g.out)
		ye := y[e*g.outDim() : (e+1)*g.outDim()]
		for oy := 0; oy < g.oh; oy++ {
			copy(ye[oy*g.ow*g.out:(oy+1)*g.ow*g.out], yv[oy*wv*g.out:])
		}
	}
}

// gradRows is the number of filter-gradient rows computed per kernel row:
// kw·c rounded up to the micro-kernel's rows (8 when kw·c ≤ 8 beside 16
// filters, 12 beside at most 16, else 6), the extra rows reading
// the next values of the image and being dropped, so that the products
// read both factors in place.
func (g convGeom) gradRows() int {
	m := 6
	switch {
	case g.out == 16 && g.kw*g.c <= 8:
		m = 8
	case g.out <= 16:
		m = 12
	}
	return (g.kw*g.c + m - 1) / m * m
}

// runImplicit is convGradW.run reading the patches the forward pass padded
// (the forward pass of the same batch runs first). It accumulates dWᵀ, one
// gradRows×out block per kernel row, over the examples in order, then
// transposes it into dw. Each example's chain stops at its last real pixel
// (the virtual pixels after it would add only zero terms).
func (o convGradW) runImplicit(dw, dy []float32) {
	g := o.g
	V, K, seg, wv, M := g.virtRows(), g.kdim(), g.kw*g.c, g.virtW(), g.gradRows()
	P := (g.oh-1)*wv + g.ow // the pixels up to the last real one
	if o.sc.dyv == nil {
		o.sc.dyv = make([]float32, V*g.out) // virtual pixels' gradients stay 0
		o.sc.dwt = make([]float32, g.kh*M*g.out)
	}
	dyv, dwt := o.sc.dyv, o.sc.dwt
	for e := 0; e < g.batch; e++ {
		de := dy[e*g.outDim() : (e+1)*g.outDim()]
		for oy := 0; oy < g.oh; oy++ {
			copy(dyv[oy*wv*g.out:], de[oy*g.ow*g.out:(oy+1)*g.ow*g.out])
		}
		beta := float32(1)
		if e == 0 {
			beta = 0
		}
		img := o.sc.pad[e*g.padDim():]
		for i := 0; i < g.kh; i++ {
			o.mm.SgemmOverlap(true, false, M, g.out, P, 1, img[g.kernelRow(i):], g.stride*g.c, dyv, g.out, beta, dwt[i*M*g.out:], g.out)
		}
	}
	for j := 0; j < g.out; j++ {
		for i := 0; i < g.kh; i++ {
			row := dw[j*K+i*seg : j*K+(i+1)*seg]
			for q := range row {
				row[q] = dwt[(i*M+q)*g.out+j]
			}
		}
	}
}

// repeatRow fills dst with copies of row (len(dst) a multiple of
// len(row)), doubling the filled prefix with each copy.
func repeatRow(dst, row []float32) {
	n := copy(dst, row)
	for n < len(dst) {
		n += copy(dst[n:], dst[:n])
	}
}
