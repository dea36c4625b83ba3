//go:build !openblas

package models

// BLASBackend names the BLAS that Gorgonia's matrix products use: gonum's
// pure-Go BLAS by default; OpenBLAS with the openblas build tag (see
// blas_openblas.go).
const BLASBackend = "gonum (pure Go)"
