package vec

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useAVX2 selects the assembly, useAVX512 the 16-lane GELU loops (tests
// switch them off to compare).
var (
	useAVX2   = cpu.X86.HasAVX2
	useAVX512 = cpu.X86.HasAVX2 && cpu.X86.HasAVX512F
)

// AVX2 loops over the first n (a multiple of 8) elements (vec_amd64.s).
//
//go:noescape
func expAVX2(dst, x *float32, n int, shift float32)

//go:noescape
func sigmoidAVX2(dst, x *float32, n int)

//go:noescape
func tanhAVX2(dst, x *float32, n int)

//go:noescape
func reluAVX2(dst, x *float32, n int)

//go:noescape
func reluGradAVX2(dst, y, gr *float32, n int)

//go:noescape
func addAVX2(dst, x *float32, n int)

//go:noescape
func mulAVX2(dst, x, y *float32, n int)

//go:noescape
func axpySubAVX2(dst, b, p *float32, a float32, x *float32, n int)

//go:noescape
func scaleAVX2(dst *float32, a float32, x *float32, n int)

//go:noescape
func axpyAVX2(dst *float32, a float32, x *float32, n int)

// The callers have resliced every operand to len(dst).

func blocks(n int) int {
	if !useAVX2 {
		return 0
	}
	return n &^ 7
}

func expAsm(dst, x []float32, shift float32) int {
	n := blocks(len(dst))
	if n > 0 {
		expAVX2(unsafe.SliceData(dst), unsafe.SliceData(x), n, shift)
	}
	return n
}

func sigmoidAsm(dst, x []float32) int {
	n := blocks(len(dst))
	if n > 0 {
		sigmoidAVX2(unsafe.SliceData(dst), unsafe.SliceData(x), n)
	}
	return n
}

func tanhAsm(dst, x []float32) int {
	n := blocks(len(dst))
	if n > 0 {
		tanhAVX2(unsafe.SliceData(dst), unsafe.SliceData(x), n)
	}
	return n
}

func reluAsm(dst, x []float32) int {
	n := blocks(len(dst))
	if n > 0 {
		reluAVX2(unsafe.SliceData(dst), unsafe.SliceData(x), n)
	}
	return n
}

func reluGradAsm(dst, y, g []float32) int {
	n := blocks(len(dst))
	if n > 0 {
		reluGradAVX2(unsafe.SliceData(dst), unsafe.SliceData(y), unsafe.SliceData(g), n)
	}
	return n
}

func addAsm(dst, x []float32) int {
	n := blocks(len(dst))
	if n > 0 {
		addAVX2(unsafe.SliceData(dst), unsafe.SliceData(x), n)
	}
	return n
}

func mulAsm(dst, x, y []float32) int {
	n := blocks(len(dst))
	if n > 0 {
		mulAVX2(unsafe.SliceData(dst), unsafe.SliceData(x), unsafe.SliceData(y), n)
	}
	return n
}

func axpySubAsm(dst, g, p []float32, a float32, x []float32) int {
	n := blocks(len(dst))
	if n > 0 {
		axpySubAVX2(unsafe.SliceData(dst), unsafe.SliceData(g), unsafe.SliceData(p), a, unsafe.SliceData(x), n)
	}
	return n
}

func axpyAsm(dst []float32, a float32, x []float32) int {
	n := blocks(len(dst))
	if n > 0 {
		axpyAVX2(unsafe.SliceData(dst), a, unsafe.SliceData(x), n)
	}
	return n
}

func scaleAsm(dst []float32, a float32, x []float32) int {
	n := blocks(len(dst))
	if n > 0 {
		scaleAVX2(unsafe.SliceData(dst), a, unsafe.SliceData(x), n)
	}
	return n
}

//go:noescape
func geluAVX2(dst, x *float32, n int)

//go:noescape
func geluGradAVX2(dst, x, gr *float32, n int)

//go:noescape
func geluAVX512(dst, x *float32, n int)

//go:noescape
func geluGradAVX512(dst, x, gr *float32, n int)

// blocks16 is how many leading values the 16-lane loops take.
func blocks16(n int) int {
	if !useAVX2 || !useAVX512 {
		return 0
	}
	return n &^ 15
}

func geluAsm(dst, x []float32) int {
	n := blocks16(len(dst))
	if n > 0 {
		geluAVX512(unsafe.SliceData(dst), unsafe.SliceData(x), n)
	}
	if m := blocks(len(dst) - n); m > 0 {
		geluAVX2(unsafe.SliceData(dst[n:]), unsafe.SliceData(x[n:]), m)
		n += m
	}
	return n
}

func geluGradAsm(dst, x, g []float32) int {
	n := blocks16(len(dst))
	if n > 0 {
		geluGradAVX512(unsafe.SliceData(dst), unsafe.SliceData(x), unsafe.SliceData(g), n)
	}
	if m := blocks(len(dst) - n); m > 0 {
		geluGradAVX2(unsafe.SliceData(dst[n:]), unsafe.SliceData(x[n:]), unsafe.SliceData(g[n:]), m)
		n += m
	}
	return n
}

//go:noescape
func axpyRowsAVX2(dst, x, a *float32, m, n, lda int, zero bool)

func axpyRowsAsm(dst, x, a []float32, lda int, zero bool) int {
	n := blocks(len(dst))
	if n > 0 {
		axpyRowsAVX2(unsafe.SliceData(dst), unsafe.SliceData(x), unsafe.SliceData(a), len(x), n, lda, zero)
	}
	return n
}
