package vec

import (
	"math/rand/v2"
	"testing"
)

// TestAxpyRows: AxpyRows gives the bits of one Axpy per row, in order
// (MulRows those of the same calls from zeros, whatever dst held before),
// with and without the assembly, for widths with and without tails and
// strides wider than, equal to and narrower than a row.
func TestAxpyRows(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 7, 8, 16, 24, 32, 40, 48, 63, 64, 100} {
		for _, m := range []int{1, 2, 5, 20} {
			for _, lda := range []int{n, n + 5, max(n-3, 1)} {
				a := inputs((m-1)*lda+n, r)
				x, d0 := inputs(m, r), inputs(n, r)
				want, zeroWant := append([]float32(nil), d0...), make([]float32, n)
				for i := range x {
					Axpy(want, x[i], a[i*lda:i*lda+n])
					Axpy(zeroWant, x[i], a[i*lda:i*lda+n])
				}
				for _, asm := range []bool{true, false} {
					saved := useAVX2
					useAVX2 = asm && saved
					got := append([]float32(nil), d0...)
					AxpyRows(got, x, a, lda)
					fresh := append([]float32(nil), d0...) // MulRows must not read it
					MulRows(fresh, x, a, lda)
					useAVX2 = saved
					for j := range got {
						if !same(got[j], want[j]) {
							t.Fatalf("n=%d m=%d lda=%d asm=%v: element %d is %g, Axpy in order gives %g", n, m, lda, asm, j, got[j], want[j])
						}
						if !same(fresh[j], zeroWant[j]) {
							t.Fatalf("n=%d m=%d lda=%d asm=%v: MulRows element %d is %g, Axpy in order from 0 gives %g", n, m, lda, asm, j, fresh[j], zeroWant[j])
						}
					}
				}
			}
		}
	}
}

// TestAxpyRowsBounds: a too short a panics instead of reading past it.
func TestAxpyRowsBounds(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	AxpyRows(make([]float32, 8), make([]float32, 3), make([]float32, 2*10+7), 10)
}

// TestMulRowsNoRows: the sum of no rows is zero.
func TestMulRowsNoRows(t *testing.T) {
	d := []float32{1, 2, 3}
	MulRows(d, nil, nil, 5)
	if d[0] != 0 || d[1] != 0 || d[2] != 0 {
		t.Errorf("got %v", d)
	}
}
