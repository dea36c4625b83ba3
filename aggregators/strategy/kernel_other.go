//go:build !amd64 || purego

package strategy

const useAVX2 = false

func dot4AVX2(c, x0, x1, x2, x3 []float64) (s0, s1, s2, s3 float64) {
	panic("strategy: dot4AVX2 without amd64 assembly")
}

func axpy4AVX2(dst, a, x0, x1, x2, x3 []float64) {
	panic("strategy: axpy4AVX2 without amd64 assembly")
}
