//go:build !purego

package aggregators

import "golang.org/x/sys/cpu"

// useAVX512 selects the assembly kernel of addQuantized (AVX-512 F and DQ:
// the conversion of float64 to int64 is DQ's; the pure-Go loop otherwise,
// or with the purego build tag).
var useAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

// addQuantizedAVX512 is addQuantizedGo on len(delta) coordinates, a
// multiple of 16 (quant_amd64.s); lo and hi must be at least as long.
//
//go:noescape
func addQuantizedAVX512(lo []uint64, hi []int64, delta []float32, f float32, s1, s2 float64)

// sumSquaresAVX512 is laneSumSquares's loop on len(x) coordinates, a
// multiple of 32 (quant_amd64.s).
//
//go:noescape
func sumSquaresAVX512(lanes *[32]float64, x []float32)
