// Package gemm is dpfl's single-precision matrix product: a packed GEMM
// whose micro-kernels are Go assembly for AVX-512 or AVX2+FMA on amd64,
// chosen at run time, with a pure-Go kernel as the fallback elsewhere. With
// AVX-512, products of at most 16 columns (a convolution with 16 filters)
// use a 12×16 kernel: twelve independent accumulators keep both
// multiply-add units busy where the 6×16 tile has too few; products of
// exactly eight rows and 16 columns use an 8×16 kernel.
// Package models plugs it into Gorgonia as the BLAS Sgemm (see Impl).
//
// Every path computes each element of the product the same way: one fused
// multiply-add chain over k in increasing order,
//
//	c_ij ← fma(α·a_i,k-1, b_k-1,j, … fma(α·a_i1, b_1j, fma(α·a_i0, b_0j, β·c_ij)))
//
// (β·c_ij is 0 when β = 0, so C may hold NaNs then, as BLAS allows; α·a is
// rounded to float32 once, and is a itself when α = 1). The AVX-512 and AVX2
// kernels are therefore bit-identical to each other and to the exact
// reference in the tests; the pure-Go kernel writes a*b + c, which Go fuses
// on arm64, ppc64 and s390x but not on amd64 (where it differs from the
// fused chain by rounding only). The order does not depend on threading:
// each call runs on the calling goroutine (parallelism comes from dpfl's
// workers), so results are identical for any worker count.
//
// Package gemm imports golang.org/x/sys/cpu and the standard library.
package gemm

import (
	"fmt"
	"sync"
)

// Blocking: KC rows of k per pass (a B micro-panel of KC·NR floats stays in
// L1), MC rows of A at a time (L2), NC columns at a time.
const (
	kc = 256
	mc = 120
	nc = 1024
)

// transposedRows is the most rows of C = A·Bᵀ computed as Cᵀ = B·Aᵀ.
const transposedRows = 96

// kernel computes a full mr×nr tile of C (row stride ldc): for p < k,
// acc[r][c] = fma(a[r·rs+p·ps], b[p·ldb+c], acc[r][c]), starting from the
// tile of C when load, else from zero, and stores it into C. A packed panel
// has rs = 1, ps = mr; rows of a row-major matrix read in place have
// rs = lda, ps = 1.
type kernel struct {
	name   string
	mr, nr int
	fn     func(k int, a []float32, rs, ps int, b []float32, ldb int, c []float32, ldc int, load bool)
	// part, when set, computes a partial tile in place: only the first
	// rows rows and cols columns of C are read and written, and only the
	// first cols columns of B are read (so edges need no copies).
	part func(k int, a []float32, rs, ps int, b []float32, ldb int, c []float32, ldc int, rows, cols int, load bool)
}

// kernels is a main kernel and a narrower one (same mr) for the last
// columns when they fit it.
type kernels struct{ main, edge kernel }

// active is what this machine uses (set in init by the architecture's file);
// narrow, when set, replaces it for products of at most narrowCols columns,
// and eight for those of exactly narrowCols columns and eight rows.
var active, narrow, eight kernels

const narrowCols = 16

// Kernel names the micro-kernel in use: "avx512", "avx2" or "go".
func Kernel() string { return active.main.name }

// buffers are the packing areas of a Context.
type buffers struct {
	a, b, edge, tile, part []float32
}

// Context holds packing buffers, grown to the largest product it has run:
// products on one Context allocate nothing once it has seen their shapes.
// A Context is not safe for concurrent use; the zero value is ready.
type Context struct{ buf buffers }

var pool = sync.Pool{New: func() any { return new(Context) }}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// operand is one factor of the product: op(X)[i,p] = x[i·ld+p], or
// x[p·ld+i] when trans; scale multiplies it (applied while packing).
type operand struct {
	x     []float32
	ld    int
	trans bool
	scale float32
}

func (o operand) at(i, p int) float32 {
	if o.trans {
		return o.x[p*o.ld+i]
	}
	return o.x[i*o.ld+p]
}

// Sgemm computes C = α·op(A)·op(B) + β·C for row-major matrices, as
// gonum's blas.Float32Level3 Sgemm (op(A) is m×k, op(B) k×n, C m×n; transA
// means A is stored k×m). It panics on inconsistent arguments, like gonum.
//
// It packs in a Context taken from a pool; (*Context).Sgemm uses the
// caller's.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	ctx := pool.Get().(*Context)
	ctx.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	pool.Put(ctx)
}

// Sgemm is the package's Sgemm on this Context's buffers.
func (ctx *Context) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	check(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc, false)
	ctx.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmOverlap is Sgemm for factors whose stored rows may overlap: lda and
// ldb may be smaller than a stored row's length (at least 1), as when a
// convolution reads each output pixel's patch straight from the image, the
// rows of A (or B) starting stride·channels floats apart. A and B are only
// read; C must not overlap them. Each element is computed exactly as Sgemm
// computes it.
func (ctx *Context) SgemmOverlap(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	check(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc, true)
	ctx.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmSegments adds to C (m×n, row stride ldc) the products A_s·B_s of
// len(offs) pairs of factors, one pair after another: A_s is m×k with
// element (i, p) at a[offs[s] + i·lda + p] (rows that may overlap, as in
// SgemmOverlap) and B_s is rows s·k … s·k+k−1 of b (row stride ldb), as a
// convolution's kernel rows. Each element of C is one chain of multiply-adds
// from its value over the segments in order, each over p in increasing
// order: what len(offs) calls of SgemmOverlap with α = β = 1 compute, and
// what it does unless a kernel keeps the accumulators in registers across
// the segments (AVX-512: 16 columns and rows a multiple of 12, or columns
// and rows multiples of 32 and 6; at most 256 steps in all). It panics on
// inconsistent arguments.
func (ctx *Context) SgemmSegments(m, n, k int, offs []int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for s, off := range offs {
		if off < 0 || off > len(a) || s*k*ldb > len(b) {
			panic(fmt.Sprintf("gemm: segment %d at %d outside a (%d) or b (%d)", s, off, len(a), len(b)))
		}
		check(false, false, m, n, k, len(a)-off, lda, len(b)-s*k*ldb, ldb, len(c), ldc, true)
	}
	if m == 0 || n == 0 || k == 0 || len(offs) == 0 {
		return
	}
	switch {
	case len(offs)*k > kc: // B's panel would not stay in L1
	case segKernel != nil && n == 16 && m%12 == 0:
		for i0 := 0; i0 < m; i0 += 12 {
			segKernel(k, a[i0*lda:], lda, b, ldb, c[i0*ldc:], ldc, offs)
		}
		return
	case segKernel32 != nil && n%32 == 0 && m%6 == 0:
		for j0 := 0; j0 < n; j0 += 32 {
			for i0 := 0; i0 < m; i0 += 6 {
				segKernel32(k, a[i0*lda:], lda, b[j0:], ldb, c[i0*ldc+j0:], ldc, offs)
			}
		}
		return
	}
	for s, off := range offs {
		ctx.sgemm(false, false, m, n, k, 1, a[off:], lda, b[s*k*ldb:], ldb, 1, c, ldc)
	}
}

// segKernel and segKernel32, when set, compute one 12×16 or 6×32 tile of
// SgemmSegments from C (A's rows rs apart).
var segKernel, segKernel32 func(k int, a []float32, rs int, b []float32, ldb int, c []float32, ldc int, offs []int)

func (ctx *Context) sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	// With β = 0 the first pass over k starts from zero without reading C
	// (load below), so C is cleared here only when nothing is added to it.
	if beta != 1 && (beta != 0 || alpha == 0 || k == 0) {
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			if beta == 0 {
				clear(row)
				continue
			}
			for j := range row {
				row[j] *= beta
			}
		}
	}
	if alpha == 0 || k == 0 {
		return
	}
	buf := &ctx.buf
	A := operand{a, lda, transA, alpha}
	B := operand{b, ldb, transB, 1}
	if transB && !transA && m < n && m <= transposedRows && m < k {
		// C = A·Bᵀ with the wider B and few rows (a layer's input
		// gradient at a small batch): compute Cᵀ = B·Aᵀ instead, so B's
		// rows feed the kernel in place and only A is packed (the products
		// are the same, so are the bits). With more rows, C's transposed
		// write-back costs more than packing B once.
		buf.run(active, operand{b, ldb, false, 1}, operand{a, lda, true, alpha}, n, m, k, c, ldc, true, beta != 0)
		return
	}
	if transA && !transB && n < m && n <= active.edge.nr && !(n <= narrowCols && narrow.main.part != nil) {
		// C = Aᵀ·B with few columns: compute Cᵀ = Bᵀ·A, whose wide side
		// fills the kernel's columns (unless the narrow kernel computes
		// partial tiles in place: transposing C goes through a scratch
		// tile, which costs more than the narrow kernel's idle columns).
		buf.run(active, operand{b, ldb, true, alpha}, operand{a, lda, false, 1}, n, m, k, c, ldc, true, beta != 0)
		return
	}
	ks := active
	switch {
	case m == 8 && n == narrowCols && eight.main.fn != nil:
		ks = eight
	case n <= narrowCols && narrow.main.fn != nil:
		ks = narrow
	}
	buf.run(ks, A, B, m, n, k, c, ldc, false, beta != 0)
}

// run computes the m×n product op(A)·op(B) into C (into Cᵀ when tC),
// starting from C's values when loadC.
func (buf *buffers) run(ks kernels, A, B operand, m, n, k int, c []float32, ldc int, tC, loadC bool) {
	mr := ks.main.mr
	buf.tile = grow(buf.tile, mr*ks.main.nr)
	// A is read in place unless scaled (rows of 6 at stride lda, or, for a
	// transposed A, 6 contiguous values per step of k); B unless transposed
	// or scaled.
	aDirect := A.scale == 1
	bPacked := B.trans || B.scale != 1
	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			load := loadC || pc > 0
			if bPacked {
				buf.b = grow(buf.b, (nb+ks.main.nr)*kb)
				off := 0
				for jr := 0; jr < nb; {
					kern, w := ks.panel(nb - jr)
					packB(buf.b[off:off+kb*kern.nr], B, pc, kb, jc+jr, w, kern.nr)
					off += kb * kern.nr
					jr += w
				}
			}
			for ic := 0; ic < m; ic += mc {
				mb := min(mc, m-ic)
				if !aDirect {
					buf.a = grow(buf.a, (mb+mr)*kb)
					for ir := 0; ir < mb; ir += mr {
						packA(buf.a[ir*kb:(ir+mr)*kb], A, ic+ir, min(mr, mb-ir), pc, kb, mr)
					}
				} else if last := mb - mb%mr; last < mb {
					// The last rows, fewer than mr, are read in place by
					// no kernel: pack them once for every panel of B.
					buf.part = grow(buf.part, mr*kb)
					packA(buf.part, A, ic+last, mb-last, pc, kb, mr)
				}
				off := 0
				for jr := 0; jr < nb; {
					kern, w := ks.panel(nb - jr)
					var panel []float32
					stride := kern.nr
					masked := false // the kernel must not read B past w columns
					switch {
					case bPacked:
						panel = buf.b[off:]
						off += kb * kern.nr
					case w == kern.nr:
						panel, stride = B.x[pc*B.ld+jc+jr:], B.ld
					case kern.part != nil:
						panel, stride, masked = B.x[pc*B.ld+jc+jr:], B.ld, true
					default:
						buf.edge = grow(buf.edge, kb*kern.nr)
						packB(buf.edge, B, pc, kb, jc+jr, w, kern.nr)
						panel = buf.edge
					}
					for ir := 0; ir < mb; ir += mr {
						rows := min(mr, mb-ir)
						var ap []float32
						rs, ps := 1, mr
						switch {
						case !aDirect:
							ap = buf.a[ir*kb:]
						case rows == mr && A.trans:
							ap, rs, ps = A.x[pc*A.ld+ic+ir:], 1, A.ld
						case rows == mr:
							ap, rs, ps = A.x[(ic+ir)*A.ld+pc:], A.ld, 1
						default:
							ap = buf.part
						}
						i0, j0 := ic+ir, jc+jr
						full := rows == mr && w == kern.nr
						switch {
						case !tC && full:
							kern.fn(kb, ap, rs, ps, panel, stride, c[i0*ldc+j0:], ldc, load)
							continue
						case !tC && kern.part != nil:
							kern.part(kb, ap, rs, ps, panel, stride, c[i0*ldc+j0:], ldc, rows, w, load)
							continue
						}
						// Edge or transposed tile: through a scratch tile.
						t := buf.tile[:mr*kern.nr]
						if load {
							for r := 0; r < rows; r++ {
								tr := t[r*kern.nr : r*kern.nr+w]
								if tC {
									for q := range tr {
										tr[q] = c[(j0+q)*ldc+i0+r]
									}
								} else {
									copy(tr, c[(i0+r)*ldc+j0:])
								}
							}
						}
						if masked {
							kern.part(kb, ap, rs, ps, panel, stride, t, kern.nr, mr, w, load)
						} else {
							kern.fn(kb, ap, rs, ps, panel, stride, t, kern.nr, load)
						}
						for r := 0; r < rows; r++ {
							tr := t[r*kern.nr : r*kern.nr+w]
							if tC {
								for q, v := range tr {
									c[(j0+q)*ldc+i0+r] = v
								}
							} else {
								copy(c[(i0+r)*ldc+j0:], tr)
							}
						}
					}
					jr += w
				}
			}
		}
	}
}

// panel picks the kernel for the next panel of columns given how many
// remain, and the panel's width.
func (ks kernels) panel(rem int) (kernel, int) {
	if rem < ks.main.nr && rem <= ks.edge.nr {
		return ks.edge, rem
	}
	return ks.main, min(rem, ks.main.nr)
}

// packA copies rows i0..i0+rows, columns pc..pc+kb of op(A), scaled, into
// one panel: for each p, mr values (zero past the last row).
func packA(dst []float32, A operand, i0, rows, pc, kb, mr int) {
	d := dst[:kb*mr]
	if A.trans { // rows of the stored matrix are contiguous here
		for p := 0; p < kb; p++ {
			dp := d[p*mr : p*mr+mr]
			src := A.x[(pc+p)*A.ld+i0 : (pc+p)*A.ld+i0+rows]
			for r, v := range src { // a loop: a copy call costs more for a few values
				dp[r] = v
			}
			for r := rows; r < mr; r++ {
				dp[r] = 0
			}
		}
	} else {
		for r := 0; r < rows; r++ {
			for p, v := range A.x[(i0+r)*A.ld+pc : (i0+r)*A.ld+pc+kb] {
				d[p*mr+r] = v
			}
		}
		for r := rows; r < mr; r++ {
			for p := 0; p < kb; p++ {
				d[p*mr+r] = 0
			}
		}
	}
	if A.scale != 1 {
		for i := range d {
			d[i] *= A.scale
		}
	}
}

// packB copies rows pc..pc+kb, columns j0..j0+cols of op(B), scaled, into
// one panel of nr columns (zero-padded).
func packB(dst []float32, B operand, pc, kb, j0, cols, nr int) {
	d := dst[:kb*nr]
	if B.trans {
		for q := 0; q < cols; q++ {
			for p, v := range B.x[(j0+q)*B.ld+pc : (j0+q)*B.ld+pc+kb] {
				d[p*nr+q] = v
			}
		}
		for q := cols; q < nr; q++ {
			for p := 0; p < kb; p++ {
				d[p*nr+q] = 0
			}
		}
	} else {
		for p := 0; p < kb; p++ {
			dp := d[p*nr : p*nr+nr]
			src := B.x[(pc+p)*B.ld+j0 : (pc+p)*B.ld+j0+cols]
			for q, v := range src {
				dp[q] = v
			}
			for q := cols; q < nr; q++ {
				dp[q] = 0
			}
		}
	}
	if B.scale != 1 {
		for i := range d {
			d[i] *= B.scale
		}
	}
}

// check panics on inconsistent arguments; with overlap, the leading
// dimensions of A and B need only be positive.
func check(transA, transB bool, m, n, k, la, lda, lb, ldb, lc, ldc int, overlap bool) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	minA, minB := max(1, ac), max(1, bc)
	if overlap {
		minA, minB = 1, 1
	}
	if lda < minA || ldb < minB || ldc < max(1, n) {
		panic(fmt.Sprintf("gemm: bad leading dimension lda=%d ldb=%d ldc=%d for %d×%d·%d×%d", lda, ldb, ldc, ar, ac, br, bc))
	}
	need := func(rows, cols, ld int) int {
		if rows == 0 || cols == 0 {
			return 0
		}
		return (rows-1)*ld + cols
	}
	if la < need(ar, ac, lda) || lb < need(br, bc, ldb) || lc < need(m, n, ldc) {
		panic(fmt.Sprintf("gemm: short slice: len(a)=%d len(b)=%d len(c)=%d for m=%d n=%d k=%d", la, lb, lc, m, n, k))
	}
}
