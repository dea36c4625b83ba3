package strategy

import "gonum.org/v1/gonum/blas/blas64"

// rows4 is lossGrad's substitutions for four rows r[0] > r[1] > r[2] > r[3]
// of A (consecutive rows of one worker) at once, through the AVX2 kernel:
// the four rows share their coefficient vectors, so one pass computes four
// dot products (dot4AVX2), each summed in gonum Ddot's order, and the loss
// terms are summed row by row as before, so y, z and the loss are
// bit-identical to four single-row passes (TestRows4BitIdentical). y is
// four scratch vectors of length n; z (nil without the gradient) receives
// the four rows' z = a X⁻¹. It returns loc plus the rows' loss terms.
func (p *bandProblem) rows4(f *bandFactor, r [4]int, y, z *[4][]float64, loc float64) float64 {
	n, bw := p.n, p.bw
	impl := blas64.Implementation()
	cc, rr := f.cc, f.rr
	var a [4][]float64
	for q := range r {
		a[q] = p.a[r[q]*n : r[q]*n+r[q]+1]
		clear(y[q])
	}
	y0, y1, y2, y3 := y[0], y[1], y[2], y[3]
	a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
	// y C = a for each row: y_j = (a_j − Σ_{d≥1} y_{j+d} C_{j+d,j}) / C_jj.
	for j := r[0]; j >= 0; j-- {
		if j+bw-1 <= r[3] { // every row uses the full band
			s0, s1, s2, s3 := dot4AVX2(cc[j*bw+1:j*bw+bw], y0[j+1:], y1[j+1:], y2[j+1:], y3[j+1:])
			d := cc[j*bw]
			y0[j], y1[j], y2[j], y3[j] = (a0[j]-s0)/d, (a1[j]-s1)/d, (a2[j]-s2)/d, (a3[j]-s3)/d
			continue
		}
		for q := range r {
			if r[q] < j {
				continue
			}
			m := min(r[q], j+bw-1) - j
			s := a[q][j]
			if m > 0 {
				s -= impl.Ddot(m, y[q][j+1:], 1, cc[j*bw+1:], 1)
			}
			y[q][j] = s / cc[j*bw]
		}
	}
	for q := range r {
		for j := r[q]; j >= 0; j-- {
			loc += float64(y[q][j] * y[q][j])
		}
	}
	if z == nil {
		return loc
	}
	// z Cᵀ = y: z_j = (y_j − Σ_{i<j} C_ji z_i) / C_jj, the same band for
	// every row.
	z0, z1, z2, z3 := z[0], z[1], z[2], z[3]
	for j := 0; j < n; j++ {
		off := max(0, bw-1-j)
		d := rr[j*bw+bw-1]
		if m := bw - 1 - off; m > 0 {
			lo := j - bw + 1 + off
			s0, s1, s2, s3 := dot4AVX2(rr[j*bw+off:j*bw+bw-1], z0[lo:], z1[lo:], z2[lo:], z3[lo:])
			z0[j], z1[j], z2[j], z3[j] = (y0[j]-s0)/d, (y1[j]-s1)/d, (y2[j]-s2)/d, (y3[j]-s3)/d
		} else {
			z0[j], z1[j], z2[j], z3[j] = y0[j]/d, y1[j]/d, y2[j]/d, y3[j]/d
		}
	}
	return loc
}

// bandGramBlock is the number of band rows of G that bandGram updates per
// pass over a chunk's rows (32 rows of 342 bands: 88 KB, in the core's
// cache while the chunk's z vectors stream through it).
const bandGramBlock = 32

// bandGram adds the rows' contributions z_i z_{i−bw+1+t} to G's band (lg,
// as lossGrad stores it), for the rows whose z vectors are zs (in lossGrad's
// row order; a multiple of four): in blocks of band rows, and in each block
// every row in order, four at a time (axpy4Band; a row whose z_i is 0 is
// skipped, as Daxpy with α = 0 does). Every entry receives the same
// contributions in the same order as one row at a time, with gonum Daxpy's
// roundings, so G is bit-identical; G is read and written once per chunk
// instead of once per row.
func (p *bandProblem) bandGram(lg []float64, zs [][]float64) {
	n, bw := p.n, p.bw
	impl := blas64.Implementation()
	var coef [4]float64
	for i0 := 0; i0 < n; i0 += bandGramBlock {
		i1 := min(i0+bandGramBlock, n)
		for q := 0; q+4 <= len(zs); q += 4 {
			z0, z1, z2, z3 := zs[q], zs[q+1], zs[q+2], zs[q+3]
			for i := i0; i < i1; i++ {
				off := max(0, bw-1-i)
				if m := bw - 1 - off; m > 0 {
					dst := lg[i*bw+off : i*bw+bw-1]
					lo := i - bw + 1 + off
					if z0[i] != 0 && z1[i] != 0 && z2[i] != 0 && z3[i] != 0 {
						coef = [4]float64{z0[i], z1[i], z2[i], z3[i]}
						axpy4Band(dst, &coef, z0[lo:lo+m], z1[lo:lo+m], z2[lo:lo+m], z3[lo:lo+m])
					} else {
						for _, zq := range zs[q : q+4] {
							if zq[i] != 0 {
								impl.Daxpy(m, zq[i], zq[lo:], 1, dst, 1)
							}
						}
					}
				}
				d := i*bw + bw - 1
				lg[d] += float64(z0[i] * z0[i])
				lg[d] += float64(z1[i] * z1[i])
				lg[d] += float64(z2[i] * z2[i])
				lg[d] += float64(z3[i] * z3[i])
			}
		}
	}
}

// axpy4Band is four gonum Daxpy calls dst += a[q]·x_q, q = 0…3 (all of
// len(dst)): the AVX2 kernel on the first len(dst) &^ 15 coordinates, then
// the same operations one coordinate at a time (explicit conversions keep
// the compiler from fusing a multiply-add, as gonum's kernel does not).
func axpy4Band(dst []float64, a *[4]float64, x0, x1, x2, x3 []float64) {
	m := len(dst) &^ 15
	if m > 0 {
		axpy4AVX2(dst, a[:], x0, x1, x2, x3)
	}
	a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
	x0, x1, x2, x3 = x0[:len(dst)], x1[:len(dst)], x2[:len(dst)], x3[:len(dst)]
	for i := m; i < len(dst); i++ {
		v := dst[i] + float64(a0*x0[i])
		v = v + float64(a1*x1[i])
		v = v + float64(a2*x2[i])
		dst[i] = v + float64(a3*x3[i])
	}
}
