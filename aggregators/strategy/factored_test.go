package strategy

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"dpfl/participation"

	"dpfl/aggregators/strategy/filecache"
)

// TestFactoredMetricsMatchFormed: the O(n²) single-participation metrics of
// the optimal strategy agree with those of the formed X and C.
func TestFactoredMetricsMatchFormed(t *testing.T) {
	single := participation.AtMostOnce
	eta := make([]float64, 300)
	for i := range eta {
		eta[i] = 0.5 + 0.5*math.Cos(math.Pi*float64(i)/300)
	}
	for _, w := range []*Workload{Prefix(300), Momentum(300, 0, eta)} {
		f, err := OptimalSingle(context.Background(), w, FixedPointOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fast, err := Evaluate(f, w, single)
		if err != nil {
			t.Fatal(err)
		}
		formed, err := NewFactorization("optimal", f.Gram(), f.Status())
		if err != nil {
			t.Fatal(err)
		}
		slow, err := Evaluate(formed, w, single)
		if err != nil {
			t.Fatal(err)
		}
		if !fast.ResidualEstimated || slow.ResidualEstimated {
			t.Fatalf("estimated flags: %v %v", fast.ResidualEstimated, slow.ResidualEstimated)
		}
		for _, c := range []struct {
			name      string
			got, want float64
			tol       float64
		}{
			{"loss", fast.Loss, slow.Loss, 1e-11},
			{"worst round", fast.MaxRoundStd, slow.MaxRoundStd, 1e-11},
			{"sensitivity", fast.Sensitivity.Value, slow.Sensitivity.Value, 0},
			{"single sensitivity", fast.SingleSensitivity, slow.SingleSensitivity, 0},
			{"cost", fast.Cost.Memory, slow.Cost.Memory, 0},
		} {
			if math.Abs(c.got-c.want) > c.tol*math.Abs(c.want) {
				t.Errorf("%s: factored %.15g, formed %.15g", c.name, c.got, c.want)
			}
		}
		if fast.Sensitivity != slow.Sensitivity || fast.Cost.Note != slow.Cost.Note {
			t.Errorf("sensitivity %+v vs %+v, cost %+v vs %+v", fast.Sensitivity, slow.Sensitivity, fast.Cost, slow.Cost)
		}
		if !(fast.Residual < 1e-12) || !(slow.Residual < 1e-12) {
			t.Errorf("residuals %.2e (estimated), %.2e", fast.Residual, slow.Residual)
		}
		t.Logf("loss %.15g / %.15g, worst %.15g / %.15g, residual %.2e (estimated) / %.2e", fast.Loss, slow.Loss, fast.MaxRoundStd, slow.MaxRoundStd, fast.Residual, slow.Residual)
		// Other workloads take the formed path.
		if _, ok := f.factoredMetrics(Prefix(300)); ok != (w.Eta == nil) {
			t.Errorf("factoredMetrics for the prefix workload: %v", ok)
		}
		// Negative control: a Y that is not the inverse's partner (one
		// eigenvector scaled by 1.001) shows in the residual estimate.
		row := f.single.qt.RawRowView(150)
		for i := range row {
			row[i] *= 1.001
		}
		bad, _ := f.factoredMetrics(w)
		if !(bad.Residual > 1e-6) {
			t.Errorf("perturbed Y: residual estimate %.2e", bad.Residual)
		}
	}
}

// TestCacheOptimalFactored: the cache stores the fixed point's last iterate
// (a small file), and the strategy loaded from it has the bits of the one
// computed, which are those of OptimalSingle; a damaged file is recomputed.
func TestCacheOptimalFactored(t *testing.T) {
	dir := t.TempDir()
	c := &Cache{Store: filecache.Dir(dir)}
	w := Prefix(200)
	ctx := context.Background()
	f1, err := c.Optimal(ctx, w, FixedPointOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f2, err := c.Optimal(ctx, w, FixedPointOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f3, err := OptimalSingle(ctx, w, FixedPointOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f1.Status().Cached || !f2.Status().Cached {
		t.Fatalf("cached flags %v %v", f1.Status().Cached, f2.Status().Cached)
	}
	x1, x2, x3 := f1.Gram(), f2.Gram(), f3.Gram()
	for i := 0; i < 200; i++ {
		for j := 0; j <= i; j++ {
			if math.Float64bits(x1.At(i, j)) != math.Float64bits(x2.At(i, j)) || math.Float64bits(x1.At(i, j)) != math.Float64bits(x3.At(i, j)) {
				t.Fatalf("X[%d,%d]: %v computed, %v loaded, %v direct", i, j, x1.At(i, j), x2.At(i, j), x3.At(i, j))
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.strategy"))
	if len(files) != 1 {
		t.Fatalf("%d cache files", len(files))
	}
	st, _ := os.Stat(files[0])
	if st.Size() > 200*8+4096 {
		t.Errorf("cache file of %d bytes for n = 200", st.Size())
	}
	b, _ := os.ReadFile(files[0])
	b[len(b)/2] ^= 1
	os.WriteFile(files[0], b, 0o600)
	f4, err := c.Optimal(ctx, w, FixedPointOptions{})
	if err != nil || f4.Status().Cached {
		t.Fatalf("damaged file: err %v, cached %v", err, f4.Status().Cached)
	}
}
