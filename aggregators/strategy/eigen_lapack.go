//go:build lapack

package strategy

import (
	"errors"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/netlib/lapack/lapacke"
)

// EigenBackend names the symmetric eigensolver compiled in: "gonum EigenSym
// (pure Go)" by default, "LAPACK dsyevd (cgo)" with the lapack build tag.
const EigenBackend = "LAPACK dsyevd (cgo)"

// eigSym computes all eigenvalues (ascending) and orthonormal eigenvectors
// (columns of vecs) of the symmetric m with LAPACK's divide-and-conquer
// dsyevd.
func eigSym(vals []float64, vecs *mat.Dense, m *mat.SymDense) error {
	n := m.SymmetricDim()
	vecs.Copy(m)
	raw := vecs.RawMatrix()
	lwork := 1 + 6*n + 2*n*n
	liwork := 3 + 5*n
	work := make([]float64, lwork)
	iwork := make([]int32, liwork)
	if !lapacke.Dsyevd('V', 'U', n, raw.Data, raw.Stride, vals, work, lwork, iwork, liwork) {
		return errors.New("strategy: dsyevd did not converge")
	}
	return nil
}
