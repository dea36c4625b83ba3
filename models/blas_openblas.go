//go:build openblas

package models

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"
)

// BLASBackend names the matrix product the models' ops use: with the
// openblas build tag, OpenBLAS's sgemm through cgo (gonum.org/v1/netlib).
// Build with CGO_LDFLAGS=-lopenblas (Debian: apt-get install
// libopenblas-dev) and set OPENBLAS_NUM_THREADS=1 when several workers train
// at once. Results then differ from the default build's in rounding (another
// summation order); the default build is about as fast (see README).
var BLASBackend = "OpenBLAS (cgo)"

// blasCtx is one model's matrix product, C = α·op(A)·op(B) + β·C for
// row-major matrices (method Sgemm).
type blasCtx struct{}

func (*blasCtx) Sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	netlib.Implementation{}.Sgemm(trans(tA), trans(tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// implicitConv: convolutions build im2col matrices, since BLAS requires
// rows that do not overlap.
const implicitConv = false

// SgemmOverlap is never called with OpenBLAS (implicitConv is false).
func (*blasCtx) SgemmOverlap(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	panic("models: overlapping rows need dpfl's gemm")
}

// SgemmSegments is never called with OpenBLAS (implicitConv is false).
func (*blasCtx) SgemmSegments(m, n, k int, offs []int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	panic("models: overlapping rows need dpfl's gemm")
}
