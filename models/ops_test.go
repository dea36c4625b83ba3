package models

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLinearBandsSameBits: the linear layer's forward pass, run a band of
// rows at a time, gives the bits of one product over all rows started from
// the bias rows, for row counts below, at and between multiples of the
// band. Negative control: the bias added after the product differs.
func TestLinearBandsSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, rows := range []int{1, 7, linearBand, linearBand + 5, 3*linearBand + 1} {
		const in, out = 37, 53
		x, w, b := make([]float32, rows*in), make([]float32, in*out), make([]float32, out)
		for _, s := range [][]float32{x, w, b} {
			for i := range s {
				s[i] = float32(r.NormFloat64())
			}
		}
		l := linear{rows, in, out, new(blasCtx)}
		got := make([]float32, rows*out)
		l.run(got, [][]float32{x, w, b})
		want, after := make([]float32, rows*out), make([]float32, rows*out)
		for i := 0; i < rows; i++ {
			copy(want[i*out:], b)
		}
		l.mm.Sgemm(false, false, rows, out, in, 1, x, in, w, out, 1, want, out)
		l.mm.Sgemm(false, false, rows, out, in, 1, x, in, w, out, 0, after, out)
		differs := false
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("rows=%d: element %d is %g, one product gives %g", rows, i, got[i], want[i])
			}
			differs = differs || after[i]+b[i%out] != want[i]
		}
		if !differs && rows > 7 {
			t.Errorf("rows=%d: negative control: adding the bias after the product gives the same bits", rows)
		}
	}
}
