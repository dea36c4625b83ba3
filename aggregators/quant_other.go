//go:build !amd64 || purego

package aggregators

const useAVX512 = false

func addQuantizedAVX512(lo []uint64, hi []int64, delta []float32, f float32, s1, s2 float64) {
	panic("aggregators: addQuantizedAVX512 without amd64 assembly")
}

func sumSquaresAVX512(lanes *[32]float64, x []float32) {
	panic("aggregators: sumSquaresAVX512 without amd64 assembly")
}
