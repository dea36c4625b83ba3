//go:build !amd64 || purego

package strategy

const useAVX2 = false

func dot4AVX2(c, x0, x1, x2, x3 []float64) (s0, s1, s2, s3 float64) {
	panic("strategy: dot4AVX2 without amd64 assembly")
}

func axpy4AVX2(dst, a, x0, x1, x2, x3 []float64) {
	panic("strategy: axpy4AVX2 without amd64 assembly")
}

func selFwdAVX2(row, w, y []float64, wa float64, wide bool) float64 {
	panic("strategy: selFwdAVX2 without amd64 assembly")
}

func selRevAVX2(row, srow, w, yb, wb []float64, wa, yba float64, wide bool) float64 {
	panic("strategy: selRevAVX2 without amd64 assembly")
}

func selAxpyAVX2(a float64, x, y []float64) {
	panic("strategy: selAxpyAVX2 without amd64 assembly")
}
