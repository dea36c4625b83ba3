package vec

import "fmt"

// AxpyRows sets dst[j] += Σ_i x[i]·a[i·lda+j] for j < len(dst): the rows
// of a (lda floats apart) scaled by x and added to dst one after the
// other, each product rounded and then added, so the bits are those of
// len(x) calls Axpy(dst, x[i], a[i·lda:]) in order. The rows may overlap
// (lda < len(dst)); dst must not overlap a. It panics if lda < 0 or a is
// too short for len(x) rows of len(dst) values.
func AxpyRows(dst, x, a []float32, lda int) { rows(dst, x, a, lda, false) }

// MulRows sets dst[j] = Σ_i x[i]·a[i·lda+j]: AxpyRows from a cleared dst
// (the same bits), without reading dst.
func MulRows(dst, x, a []float32, lda int) { rows(dst, x, a, lda, true) }

func rows(dst, x, a []float32, lda int, zero bool) {
	m, n := len(x), len(dst)
	if m == 0 || n == 0 {
		if zero {
			clear(dst)
		}
		return
	}
	if lda < 0 || len(a) < (m-1)*lda+n {
		panic(fmt.Sprintf("vec: rows of %d rows of %d at stride %d from %d values", m, n, lda, len(a)))
	}
	j0 := axpyRowsAsm(dst, x, a, lda, zero)
	if j0 == n {
		return
	}
	if zero {
		clear(dst[j0:])
	}
	for i, s := range x {
		row := a[i*lda:]
		for j := j0; j < n; j++ {
			dst[j] += float32(s * row[j])
		}
	}
}
