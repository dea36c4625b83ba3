//go:build !purego

package aggregators

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernel of axpy8 (AVX2; the pure-Go loop
// otherwise, or with the purego build tag).
var useAVX2 = cpu.X86.HasAVX2

// axpy8AVX2 is axpy8 on the first len(dst) &^ 15 coordinates (axpy_amd64.s);
// all slices must be at least that long.
//
//go:noescape
func axpy8AVX2(dst, a, x0, x1, x2, x3, x4, x5, x6, x7 []float64)
