//go:build !openblas

package models

import "dpfl/models/internal/gemm"

// BLASBackend names the matrix product the models' ops use: by default
// dpfl's own single-precision GEMM (package models/internal/gemm, Go
// assembly for AVX-512 or AVX2+FMA picked at run time, pure Go elsewhere);
// OpenBLAS with the openblas build tag (see blas_openblas.go).
var BLASBackend = "dpfl gemm (" + gemm.Kernel() + ")"

// blasCtx is one model's matrix product, C = α·op(A)·op(B) + β·C for
// row-major matrices (method Sgemm), with the model's own packing buffers.
type blasCtx = gemm.Context

// implicitConv: convolutions read patches straight from the padded image
// (convdirect.go) through gemm.SgemmOverlap.
const implicitConv = true
