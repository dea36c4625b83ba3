//go:build !lapack

package strategy

import (
	"errors"

	"gonum.org/v1/gonum/mat"
)

// EigenBackend names the symmetric eigensolver compiled in: "gonum EigenSym
// (pure Go)" by default, "LAPACK dsyevd (cgo)" with the lapack build tag.
const EigenBackend = "gonum EigenSym (pure Go)"

// eigSym computes all eigenvalues (ascending) and orthonormal eigenvectors
// (columns of vecs) of the symmetric m.
func eigSym(vals []float64, vecs *mat.Dense, m *mat.SymDense) error {
	var es mat.EigenSym
	if !es.Factorize(m, true) {
		return errors.New("strategy: symmetric eigendecomposition did not converge")
	}
	es.Values(vals)
	es.VectorsTo(vecs)
	return nil
}
