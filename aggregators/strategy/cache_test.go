package strategy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/mat"

	"dpfl/aggregators/strategy/filecache"
	"dpfl/participation"
)

func TestCache(t *testing.T) {
	dir := t.TempDir()
	c := &Cache{Store: filecache.Dir(dir)}
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

// A file with a valid checksum but another format version (stale) or another
// key is ignored.
func TestCacheStale(t *testing.T) {
	c := &Cache{Store: filecache.Dir(t.TempDir())}
	ctx := context.Background()
	w := Prefix(16)
	// The dense path stores X (the O(n²) path stores its last iterate:
	// TestCacheOptimalFactored).
	f, err := c.Optimal(ctx, w, FixedPointOptions{Gap: 1e-8, Dense: true})
	if err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("v%d|optimal|%s|gap=%g|maxiter=%d", cacheFormat, w.Key(), 1e-8, 0)
	if c.load(key) == nil {
		t.Fatal("fresh entry not found under its key")
	}
	for _, mutate := range []func(e *cacheEntry){
		func(e *cacheEntry) { e.Version = cacheFormat + 1 },
		func(e *cacheEntry) { e.Key = "something else" },
		func(e *cacheEntry) { e.X = e.X[:3] },
	} {
		e := cacheEntry{Version: cacheFormat, Key: key, Name: "optimal", N: 16, Bands: 16, Status: f.Status(), X: make([]float64, 16*16)}
		for i := 0; i < 16; i++ {
			for d := 0; d <= i; d++ {
				e.X[i*16+d] = f.Gram().At(i, i-d)
			}
		}
		mutate(&e)
		var buf bytes.Buffer
		gob.NewEncoder(&buf).Encode(&e)
		sum := sha256.Sum256(buf.Bytes())
		buf.Write(sum[:])
		os.WriteFile(c.Store.(filecache.Dir).File(key), buf.Bytes(), 0o644)
		if c.load(key) != nil {
			t.Errorf("stale or mismatched entry accepted")
		}
	}
}

// TestCacheAddsCertificate: an entry cached before certificates existed
// (same format version, Status without one) is loaded with its certificate
// computed, and stored back: the next load reads it from the file (the
// stored status is certified), with the same X.
func TestCacheAddsCertificate(t *testing.T) {
	dir := t.TempDir()
	c := &Cache{Store: filecache.Dir(dir)}
	ctx := context.Background()
	w := Prefix(32)
	f, err := c.MultiEpoch(ctx, w, 8, LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := LBFGSOptions{}
	opts.defaults()
	key := fmt.Sprintf("v%d|multi-epoch|%s|b=%d|maxiter=%d|reltol=%g|store=%d|start=bandmf", cacheFormat, w.Key(), 8, opts.MaxIter, opts.RelTol, opts.Store)
	old := f.withStatus(Status{Method: "L-BFGS", Iterations: 3, Converged: true, Message: "old"})
	if err := c.store(key, old); err != nil {
		t.Fatal(err)
	}
	if st := c.load(key).Status(); st.Certified {
		t.Fatal("the old entry has a certificate")
	}
	g, err := c.MultiEpoch(ctx, w, 8, LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := g.Status()
	if !st.Certified || !st.Cached || !(st.Gap <= 1e-6) || st.Iterations != 3 || !mat.Equal(g.Gram(), f.Gram()) {
		t.Fatalf("loaded: %+v", st)
	}
	if again := c.load(key).Status(); !again.Certified || again.Gap != st.Gap || again.KKT != st.KKT {
		t.Fatalf("stored back: %+v", again)
	}
}

// memStore is a Store in memory: the cache needs no files.
type memStore map[string][]byte

func (m memStore) Load(key string) ([]byte, bool) { b, ok := m[key]; return b, ok }

func (m memStore) Save(key string, data []byte) error {
	m[key] = bytes.Clone(data)
	return nil
}

// TestCacheStore: the cache keeps its entries in any Store; a second
// request is served from it with the same X, and an entry corrupted in the
// store is recomputed.
func TestCacheStore(t *testing.T) {
	m := memStore{}
	c := &Cache{Store: m}
	ctx := context.Background()
	f1, err := c.BandMF(ctx, Prefix(24), 3, LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f2, err := c.BandMF(ctx, Prefix(24), 3, LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || f1.Status().Cached || !f2.Status().Cached || !mat.Equal(f1.Gram(), f2.Gram()) {
		t.Fatalf("%d entries, cached %v then %v", len(m), f1.Status().Cached, f2.Status().Cached)
	}
	for k, b := range m {
		b[0] ^= 0xff
		m[k] = b
	}
	if f3, _ := c.BandMF(ctx, Prefix(24), 3, LBFGSOptions{}); f3.Status().Cached {
		t.Error("a corrupted entry was used")
	}
}

// TestBandMFMomentumWarmStart: for a momentum workload, Cache.BandMF starts
// from the strategy optimized without momentum (same schedule), so with
// few iterations it ends with no more loss on the momentum workload than
// that start, and with less than BandMF from its default start after as
// many iterations (the slow convergence the warm start is for). Run to
// convergence, both reach the same optimum (the problem is convex).
func TestBandMFMomentumWarmStart(t *testing.T) {
	ctx := context.Background()
	const n, bands = 96, 4
	eta := LinearCooldown(n, 24, 0.05)
	w := Momentum(n, 0.95, eta)
	c := &Cache{Store: filecache.Dir(t.TempDir())}
	loss := func(f *Factorization) float64 {
		m, err := Evaluate(f, w, participation.Turns(n/bands, bands))
		if err != nil {
			t.Fatal(err)
		}
		return m.Loss
	}
	short := LBFGSOptions{MaxIter: 5}
	start, err := BandMF(ctx, Momentum(n, 0, eta), bands, short)
	if err != nil {
		t.Fatal(err)
	}
	warm, err := c.BandMF(ctx, w, bands, short)
	if err != nil {
		t.Fatal(err)
	}
	cold, err := BandMF(ctx, w, bands, short)
	if err != nil {
		t.Fatal(err)
	}
	ls, lw, lc := loss(start), loss(warm), loss(cold)
	t.Logf("5 iterations: start %.6g, warm %.6g, cold %.6g", ls, lw, lc)
	if !(lw <= ls) {
		t.Errorf("warm start ended above its start: %.8g > %.8g", lw, ls)
	}
	if !(lw < lc) {
		t.Errorf("after 5 iterations the default start reached %.8g, the warm start only %.8g", lc, lw)
	}
	warmFull, err := c.BandMF(ctx, w, bands, LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	coldFull, err := BandMF(ctx, w, bands, LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lw, lc = loss(warmFull), loss(coldFull)
	if !warmFull.Status().Converged || !coldFull.Status().Converged || math.Abs(lw-lc) > 1e-6*lc {
		t.Errorf("converged: warm %.10g (%v), cold %.10g (%v)", lw, warmFull.Status().Converged, lc, coldFull.Status().Converged)
	}
}
