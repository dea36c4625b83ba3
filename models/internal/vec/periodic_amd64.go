package vec

import "unsafe"

// AVX2 loops of the periodic kernels (periodic_amd64.s) over the first n
// (a multiple of 8) values; the slots wrap at the periods t, ts and tc.

//go:noescape
func sumPAVX2(acc *float64, t int, x *float32, n int)

//go:noescape
func sumSqDevPAVX2(acc, mean *float64, t int, x *float32, n int)

//go:noescape
func normPAVX2(dst, x *float32, mean, scale *float64, t, n int)

//go:noescape
func affinePAVX2(dst, x, gain, bias *float32, t, n int)

//go:noescape
func sumProdPAVX2(su, suv *float64, t int, u, v *float32, n int)

//go:noescape
func dotsPAVX2(sh, shx *float64, ts int, gr, gain *float32, tc int, x *float32, n int)

//go:noescape
func gradXPAVX2(dst, gr, gain, x *float32, tc int, a, b, r *float64, ts, n int)

// The callers have checked the periods and resliced the operands.

func sumPAsm(acc []float64, x []float32) int {
	n := blocks(len(x))
	if n > 0 {
		sumPAVX2(unsafe.SliceData(acc), len(acc), unsafe.SliceData(x), n)
	}
	return n
}

func sumSqDevPAsm(acc, mean []float64, x []float32) int {
	n := blocks(len(x))
	if n > 0 {
		sumSqDevPAVX2(unsafe.SliceData(acc), unsafe.SliceData(mean), len(acc), unsafe.SliceData(x), n)
	}
	return n
}

func normPAsm(dst, x []float32, mean, scale []float64) int {
	n := blocks(len(dst))
	if n > 0 {
		normPAVX2(unsafe.SliceData(dst), unsafe.SliceData(x), unsafe.SliceData(mean), unsafe.SliceData(scale), len(mean), n)
	}
	return n
}

func affinePAsm(dst, x, gain, bias []float32) int {
	n := blocks(len(dst))
	if n > 0 {
		affinePAVX2(unsafe.SliceData(dst), unsafe.SliceData(x), unsafe.SliceData(gain), unsafe.SliceData(bias), len(gain), n)
	}
	return n
}

func sumProdPAsm(su, suv []float64, u, v []float32) int {
	n := blocks(len(u))
	if n > 0 {
		sumProdPAVX2(unsafe.SliceData(su), unsafe.SliceData(suv), len(su), unsafe.SliceData(u), unsafe.SliceData(v), n)
	}
	return n
}

func dotsPAsm(sh, shx []float64, g, gain, x []float32) int {
	n := blocks(len(g))
	if n > 0 {
		dotsPAVX2(unsafe.SliceData(sh), unsafe.SliceData(shx), len(sh), unsafe.SliceData(g), unsafe.SliceData(gain), len(gain), unsafe.SliceData(x), n)
	}
	return n
}

func gradXPAsm(dst, g, gain, x []float32, a, b, r []float64) int {
	n := blocks(len(dst))
	if n > 0 {
		gradXPAVX2(unsafe.SliceData(dst), unsafe.SliceData(g), unsafe.SliceData(gain), unsafe.SliceData(x), len(gain), unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(r), len(a), n)
	}
	return n
}

//go:noescape
func addStridedAVX2(dst *float32, ds int, src *float32, ss, width, count int)

// addStridedAsm adds the first width&^7 values of each run and returns
// how many (the caller has checked the ranges).
func addStridedAsm(dst []float32, ds int, src []float32, ss, width, count int) int {
	w := blocks(width)
	if w > 0 {
		addStridedAVX2(unsafe.SliceData(dst), ds, unsafe.SliceData(src), ss, w, count)
	}
	return w
}

//go:noescape
func sumRowsAVX2(acc *float32, t int, x *float32, n int)

func sumRowsAsm(acc, x []float32) int {
	n := blocks(len(x))
	if n > 0 {
		sumRowsAVX2(unsafe.SliceData(acc), len(acc), unsafe.SliceData(x), n)
	}
	return n
}
