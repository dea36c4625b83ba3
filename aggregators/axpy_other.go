//go:build !amd64 || purego

package aggregators

const useAVX2 = false

func axpy8AVX2(dst, a, x0, x1, x2, x3, x4, x5, x6, x7 []float64) {
	panic("aggregators: axpy8AVX2 without amd64 assembly")
}
