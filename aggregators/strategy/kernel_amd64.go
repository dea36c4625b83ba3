//go:build !purego

package strategy

import "golang.org/x/sys/cpu"

// useAVX2 selects the AVX2 kernels of the banded evaluator (lossGrad4).
var useAVX2 = cpu.X86.HasAVX2

// dot4AVX2 returns the four dot products of c with x0…x3 (each at least
// len(c) long), each bit-identical to gonum's Ddot (kernel_amd64.s).
//
//go:noescape
func dot4AVX2(c, x0, x1, x2, x3 []float64) (s0, s1, s2, s3 float64)

// axpy4AVX2 adds a[0]·x0, …, a[3]·x3 to the first len(dst) &^ 15
// coordinates of dst, in that order, each as gonum's Daxpy would.
//
//go:noescape
func axpy4AVX2(dst, a, x0, x1, x2, x3 []float64)

// selFwdAVX2 is selFwdGo in AVX2 (kernel_amd64.s), bit for bit.
//
//go:noescape
func selFwdAVX2(row, w, y []float64, wa float64, wide bool) float64

// selRevAVX2 is selRevGo in AVX2 (kernel_amd64.s), bit for bit.
//
//go:noescape
func selRevAVX2(row, srow, w, yb, wb []float64, wa, yba float64, wide bool) float64

// selAxpyAVX2 is selAxpyGo in AVX2 (kernel_amd64.s), bit for bit.
//
//go:noescape
func selAxpyAVX2(a float64, x, y []float64)
