package strategy

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestCache(t *testing.T) {
	dir := t.TempDir()
	c := &Cache{Dir: dir}
	ctx := context.Background()
	w := Prefix(32)
	f1, err := c.BandMF(ctx, w, 4, LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f1.Status().Cached {
		t.Fatal("first call reported cached")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.strategy"))
	if len(files) != 1 {
		t.Fatalf("want 1 cache file, got %v", files)
	}
	f2, err := c.BandMF(ctx, w, 4, LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !f2.Status().Cached || !mat.Equal(f1.Gram(), f2.Gram()) || f2.Bands() != 4 {
		t.Fatalf("second call: cached %v, X equal %v, bands %d", f2.Status().Cached, mat.Equal(f1.Gram(), f2.Gram()), f2.Bands())
	}
	// A different parameter is a different key.
	f3, _ := c.BandMF(ctx, w, 5, LBFGSOptions{})
	if f3.Status().Cached {
		t.Error("bands=5 served from the bands=4 entry")
	}
	// Corrupt the file: it must be detected and recomputed.
	b, _ := os.ReadFile(files[0])
	b[len(b)/2] ^= 0xff
	os.WriteFile(files[0], b, 0o644)
	f4, err := c.BandMF(ctx, w, 4, LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f4.Status().Cached {
		t.Error("corrupt file was used")
	}
	if !mat.EqualApprox(f4.Gram(), f1.Gram(), 1e-12) {
		t.Error("recomputed result differs")
	}
	// Truncated file, then the optimal strategy through the cache.
	os.WriteFile(files[0], b[:10], 0o644)
	if f5, _ := c.BandMF(ctx, w, 4, LBFGSOptions{}); f5.Status().Cached {
		t.Error("truncated file was used")
	}
	o1, _ := c.Optimal(ctx, w, FixedPointOptions{Gap: 1e-8})
	o2, _ := c.Optimal(ctx, w, FixedPointOptions{Gap: 1e-8})
	if o1.Status().Cached || !o2.Status().Cached || !mat.EqualApprox(o1.Gram(), o2.Gram(), 0) {
		t.Error("optimal strategy not cached exactly")
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}
