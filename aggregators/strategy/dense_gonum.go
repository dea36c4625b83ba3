//go:build !lapack

package strategy

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/gonum"
)

// DenseBackend names the Cholesky, inverse and Gram-product routines of the
// dense L-BFGS evaluator (multi-epoch MF): gonum (pure Go) by default,
// LAPACK/OpenBLAS with the lapack build tag.
const DenseBackend = "gonum (pure Go)"

// potrfLower factors the row-major n×n symmetric a (lower triangle) as L Lᵀ
// in place; false if a is not positive definite.
func potrfLower(n int, a []float64) bool {
	return gonum.Implementation{}.Dpotrf(blas.Lower, n, a, n)
}

// potriLower overwrites the lower triangle of the factor L (from potrfLower)
// with the lower triangle of (L Lᵀ)⁻¹.
func potriLower(n int, a []float64) bool {
	return gonum.Implementation{}.Dpotri(blas.Lower, n, a, n)
}

// gramLower writes the lower triangle (at least) of YᵀY into g (row-major
// n×n), through the parallel Dgemm (gonum's Dsyrk is serial).
func gramLower(n int, y, g []float64) {
	blas64.Implementation().Dgemm(blas.Trans, blas.NoTrans, n, n, n, 1, y, n, y, n, 0, g, n)
}
