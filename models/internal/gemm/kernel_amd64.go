package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Assembly micro-kernels (kernel_amd64.s), with the contract of
// kernel.fn; strides are in floats.
//
//go:noescape
func kern6x16AVX2(k int, a *float32, rs, ps int, b *float32, ldb int, c *float32, ldc int, load bool)

//go:noescape
func kern6x32AVX512(k int, a *float32, rs, ps int, b *float32, ldb int, c *float32, ldc int, load bool)

//go:noescape
func kern12x16AVX512(k int, a *float32, rs, ps int, b *float32, ldb int, c *float32, ldc int, load bool)

//go:noescape
func kern8x16AVX512(k int, a *float32, rs, ps int, b *float32, ldb int, c *float32, ldc int, load bool)

//go:noescape
func kern12x16AVX512s(k int, a *float32, rs, ps int, b *float32, ldb int, c *float32, ldc int, offs *int, nseg int)

//go:noescape
func kern6x32AVX512s(k int, a *float32, rs, ps int, b *float32, ldb int, c *float32, ldc int, offs *int, nseg int)

//go:noescape
func kern12x16AVX512p(k int, a *float32, rs, ps int, b *float32, ldb int, c *float32, ldc int, mask uint32, load bool)

//go:noescape
func kern6x32AVX512p(k int, a *float32, rs, ps int, b *float32, ldb int, c *float32, ldc int, rows int, mask uint32, load bool)

//go:noescape
func kern6x16AVX512p(k int, a *float32, rs, ps int, b *float32, ldb int, c *float32, ldc int, rows int, mask uint32, load bool)

var (
	avx2Kernel = kernel{name: "avx2", mr: 6, nr: 16, fn: func(k int, a []float32, rs, ps int, b []float32, ldb int, c []float32, ldc int, load bool) {
		boundsCheck(k, 6, 16, a, rs, ps, b, ldb, c, ldc)
		kern6x16AVX2(k, unsafe.SliceData(a), rs, ps, unsafe.SliceData(b), ldb, unsafe.SliceData(c), ldc, load)
	}}
	avx512Kernel = kernel{name: "avx512", mr: 6, nr: 32, fn: func(k int, a []float32, rs, ps int, b []float32, ldb int, c []float32, ldc int, load bool) {
		boundsCheck(k, 6, 32, a, rs, ps, b, ldb, c, ldc)
		kern6x32AVX512(k, unsafe.SliceData(a), rs, ps, unsafe.SliceData(b), ldb, unsafe.SliceData(c), ldc, load)
	}}
	avx512Kernel12x16 = kernel{name: "avx512", mr: 12, nr: 16, fn: func(k int, a []float32, rs, ps int, b []float32, ldb int, c []float32, ldc int, load bool) {
		boundsCheck(k, 12, 16, a, rs, ps, b, ldb, c, ldc)
		kern12x16AVX512(k, unsafe.SliceData(a), rs, ps, unsafe.SliceData(b), ldb, unsafe.SliceData(c), ldc, load)
	}}
	avx512Kernel8x16 = kernel{name: "avx512", mr: 8, nr: 16, fn: func(k int, a []float32, rs, ps int, b []float32, ldb int, c []float32, ldc int, load bool) {
		boundsCheck(k, 8, 16, a, rs, ps, b, ldb, c, ldc)
		kern8x16AVX512(k, unsafe.SliceData(a), rs, ps, unsafe.SliceData(b), ldb, unsafe.SliceData(c), ldc, load)
	}}
	avx2Kernels   = kernels{avx2Kernel, avx2Kernel}
	avx512Kernels kernels // set up in init
)

// setupAVX512 gives the AVX-512 kernels their partial-tile variants
// (masked loads and stores, so edges are computed in place); the 16-wide
// kernel's full tiles use the AVX2 kernel.
func setupAVX512() {
	avx512Kernel.part = func(k int, a []float32, rs, ps int, b []float32, ldb int, c []float32, ldc int, rows, cols int, load bool) {
		partCheck(k, 6, rows, cols, 32, a, rs, ps, b, ldb, c, ldc)
		kern6x32AVX512p(k, unsafe.SliceData(a), rs, ps, unsafe.SliceData(b), ldb, unsafe.SliceData(c), ldc, rows, colMask(cols), load)
	}
	avx512Kernel16 = avx2Kernel
	avx512Kernel16.name = "avx512"
	avx512Kernel16.part = func(k int, a []float32, rs, ps int, b []float32, ldb int, c []float32, ldc int, rows, cols int, load bool) {
		partCheck(k, 6, rows, cols, 16, a, rs, ps, b, ldb, c, ldc)
		kern6x16AVX512p(k, unsafe.SliceData(a), rs, ps, unsafe.SliceData(b), ldb, unsafe.SliceData(c), ldc, rows, colMask(cols), load)
	}
	avx512Kernels = kernels{avx512Kernel, avx512Kernel16}
	// The 12×16 kernel's partial tiles: all twelve rows masked to the
	// columns, or fewer rows as two 6-row partial tiles (each element
	// keeps its chain).
	avx512Kernel12x16.part = func(k int, a []float32, rs, ps int, b []float32, ldb int, c []float32, ldc int, rows, cols int, load bool) {
		if rows == 12 {
			partCheck(k, 12, rows, cols, 16, a, rs, ps, b, ldb, c, ldc)
			kern12x16AVX512p(k, unsafe.SliceData(a), rs, ps, unsafe.SliceData(b), ldb, unsafe.SliceData(c), ldc, colMask(cols), load)
			return
		}
		avx512Kernel16.part(k, a, rs, ps, b, ldb, c, ldc, min(rows, 6), cols, load)
		if rows > 6 {
			avx512Kernel16.part(k, a[6*rs:], rs, ps, b, ldb, c[6*ldc:], ldc, rows-6, cols, load)
		}
	}
}

var avx512Kernel16 kernel

// colMask has the low cols bits set.
func colMask(cols int) uint32 { return uint32(uint64(1)<<cols - 1) }

// partCheck is boundsCheck for a partial tile.
func partCheck(k, mr, rows, cols, nr int, a []float32, rs, ps int, b []float32, ldb int, c []float32, ldc int) {
	if k < 1 || rs < 1 || ps < 1 || rows < 1 || rows > mr || cols < 1 || cols > nr ||
		len(a) <= (mr-1)*rs+(k-1)*ps || len(b) < (k-1)*ldb+cols || len(c) < (rows-1)*ldc+cols {
		panic("gemm: kernel operands out of range")
	}
}

// boundsCheck makes sure an assembly kernel reads and writes only inside
// the slices it is given.
func boundsCheck(k, mr, nr int, a []float32, rs, ps int, b []float32, ldb int, c []float32, ldc int) {
	if k < 1 || rs < 1 || ps < 1 || len(a) <= (mr-1)*rs+(k-1)*ps || len(b) < (k-1)*ldb+nr || len(c) < (mr-1)*ldc+nr {
		panic("gemm: kernel operands out of range")
	}
}

// What this CPU (and OS) supports.
var (
	haveAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX2 && cpu.X86.HasFMA
	haveAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

func init() {
	setupAVX512()
	switch {
	case haveAVX512:
		active = avx512Kernels
		narrow = kernels{avx512Kernel12x16, avx512Kernel12x16}
		eight = kernels{avx512Kernel8x16, avx512Kernel8x16}
		segKernel = func(k int, a []float32, rs int, b []float32, ldb int, c []float32, ldc int, offs []int) {
			kern12x16AVX512s(k, unsafe.SliceData(a), rs, 1, unsafe.SliceData(b), ldb, unsafe.SliceData(c), ldc, unsafe.SliceData(offs), len(offs))
		}
		segKernel32 = func(k int, a []float32, rs int, b []float32, ldb int, c []float32, ldc int, offs []int) {
			kern6x32AVX512s(k, unsafe.SliceData(a), rs, 1, unsafe.SliceData(b), ldb, unsafe.SliceData(c), ldc, unsafe.SliceData(offs), len(offs))
		}
	case haveAVX2:
		active = avx2Kernels
	default:
		active = goKernels
	}
}

// archKernels lists the assembly kernel sets this CPU can run (for tests
// and benchmarks).
func archKernels() []kernels {
	var ks []kernels
	if haveAVX2 {
		ks = append(ks, avx2Kernels)
	}
	if haveAVX512 {
		ks = append(ks, avx512Kernels, kernels{avx512Kernel12x16, avx512Kernel12x16}, kernels{avx512Kernel8x16, avx512Kernel8x16})
	}
	return ks
}
