package strategy

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
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

// TestWithContext: f's result when it ends first; ctx's error at once when
// ctx is done first (f still blocked); f's panic raised in the caller; and
// Build of an optimized strategy returns promptly on a cancelled context.
func TestWithContext(t *testing.T) {
	if v, err := withContext(context.Background(), func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("background: %v %v", v, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if v, err := withContext(ctx, func() (int, error) { return 8, nil }); v != 8 || err != nil {
		t.Errorf("live context: %v %v", v, err)
	}
	block := make(chan struct{})
	defer close(block)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	start := time.Now()
	if _, err := withContext(ctx, func() (int, error) { <-block; return 0, nil }); err != context.Canceled || time.Since(start) > 5*time.Second {
		t.Errorf("cancelled while f blocks: %v after %v", err, time.Since(start))
	}
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("panic %v, want boom", p)
			}
		}()
		live, stop := context.WithCancel(context.Background())
		defer stop()
		withContext(live, func() (int, error) { panic("boom") })
	}()
	if _, err := Build(ctx, "bandmf", Config{Workload: Prefix(64), Participation: participation.AtMostOnce, Bands: 4}); !errors.Is(err, context.Canceled) {
		t.Errorf("Build on a cancelled context: %v", err)
	}
}
