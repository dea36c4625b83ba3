//go:build lapack

package strategy

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"
	"gonum.org/v1/netlib/lapack/lapacke"
)

// DenseBackend names the Cholesky, inverse and Gram-product routines of the
// dense L-BFGS evaluator (multi-epoch MF): gonum (pure Go) by default,
// LAPACK/OpenBLAS with the lapack build tag.
const DenseBackend = "LAPACK dpotrf/dpotri + BLAS dsyrk (cgo)"

// potrfLower factors the row-major n×n symmetric a (lower triangle) as L Lᵀ
// in place; false if a is not positive definite.
func potrfLower(n int, a []float64) bool { return lapacke.Dpotrf('L', n, a, n) }

// potriLower overwrites the lower triangle of the factor L (from potrfLower)
// with the lower triangle of (L Lᵀ)⁻¹.
func potriLower(n int, a []float64) bool { return lapacke.Dpotri('L', n, a, n) }

// gramLower writes the lower triangle of YᵀY into g (row-major n×n).
func gramLower(n int, y, g []float64) {
	netlib.Implementation{}.Dsyrk(blas.Lower, blas.Trans, n, n, 1, y, n, 0, g, n)
}
