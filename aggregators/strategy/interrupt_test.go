package strategy

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestMulContextBitIdentical: the tiled product equals gonum's one product
// bit for bit, for sizes below, at and above the tile sizes (including
// serial-sized products), and a cancelled context stops it with its error.
func TestMulContextBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 30))
	for _, d := range [][3]int{{1, 1, 1}, {3, 5, 2}, {64, 64, 64}, {65, 130, 70}, {200, 300, 1100}, {130, 1500, 700}} {
		a, b := mat.NewDense(d[0], d[1], nil), mat.NewDense(d[1], d[2], nil)
		for i := 0; i < d[0]; i++ {
			for j := 0; j < d[1]; j++ {
				a.Set(i, j, rng.NormFloat64())
			}
		}
		for i := 0; i < d[1]; i++ {
			for j := 0; j < d[2]; j++ {
				b.Set(i, j, rng.NormFloat64())
			}
		}
		var want mat.Dense
		want.Mul(a, b)
		got, err := mulContext(context.Background(), a, b)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < d[0]; i++ {
			for j := 0; j < d[2]; j++ {
				if math.Float64bits(got.At(i, j)) != math.Float64bits(want.At(i, j)) {
					t.Fatalf("%v: entry (%d,%d) %v, one product %v", d, i, j, got.At(i, j), want.At(i, j))
				}
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := mulContext(ctx, mat.NewDense(2, 2, nil), mat.NewDense(2, 2, nil)); err != context.Canceled {
		t.Errorf("cancelled: %v", err)
	}
}
