package strategy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// cacheFormat is bumped whenever the file layout or the meaning of a cached
// result changes; files of another version are recomputed.
const cacheFormat = 1

// Cache stores optimized strategies in a Store, keyed by every parameter
// that changes them (strategy kind, workload with n, β and η, bands or b,
// the optimizer's tolerances) and the entry format version. An entry is
// its gob encoding followed by its SHA-256; an entry whose checksum,
// version or key does not match is ignored and recomputed. A nil *Cache or
// a nil Store disables caching. A cache that cannot be written is not an
// error: the strategy is computed and returned, and the failure is passed
// to Warn.
type Cache struct {
	// Store keeps the entries (package filecache: files of a directory).
	Store Store
	// Warn, if not nil, receives the error of a cache write that failed.
	Warn func(error)
}

// Store keeps a Cache's entries: opaque bytes under a key. Load reports
// false when it has none for key; Save replaces the entry of key as a
// whole (a concurrent Load sees the old entry or the new one).
type Store interface {
	Load(key string) ([]byte, bool)
	Save(key string, data []byte) error
}

type cacheEntry struct {
	Version int
	Key     string
	Name    string
	N       int
	Bands   int
	Status  Status
	X       []float64 // band storage, X[i*Bands+d] = X_{i,i−d}
	// V, for the optimal strategy of the O(n²) fixed point (Bands 0, no
	// X), is its last iterate: the strategy is rebuilt from it in O(n²)
	// (optimalFromV, the same bits), so that neither storing nor loading
	// forms X (n = 8192: minutes, and 270 MB on disk).
	V []float64
}

// loadEntry returns the intact cache entry for key, or nil.
func (c *Cache) loadEntry(key string) *cacheEntry {
	if c == nil || c.Store == nil {
		return nil
	}
	b, ok := c.Store.Load(key)
	if !ok || len(b) < sha256.Size {
		return nil
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if h := sha256.Sum256(body); !bytes.Equal(h[:], sum) {
		return nil
	}
	var e cacheEntry
	if gob.NewDecoder(bytes.NewReader(body)).Decode(&e) != nil {
		return nil
	}
	if e.Version != cacheFormat || e.Key != key || e.N <= 0 {
		return nil
	}
	return &e
}

// load returns the cached factorization for key, or nil.
func (c *Cache) load(key string) *Factorization {
	e := c.loadEntry(key)
	if e == nil || e.Bands < 1 || e.Bands > e.N || len(e.X) != e.N*e.Bands {
		return nil
	}
	x := mat.NewSymDense(e.N, nil)
	for i := 0; i < e.N; i++ {
		for d := 0; d < e.Bands && d <= i; d++ {
			x.SetSym(i, i-d, e.X[i*e.Bands+d])
		}
	}
	e.Status.Cached = true
	f, err := NewFactorization(e.Name, x, e.Status)
	if err != nil {
		return nil
	}
	return f
}

// store writes f under key atomically.
func (c *Cache) store(key string, f *Factorization) error {
	if c == nil || c.Store == nil {
		return nil
	}
	if err := f.Explicit(); err != nil {
		return err
	}
	n, bw := f.N(), max(f.bands, 1)
	e := cacheEntry{Version: cacheFormat, Key: key, Name: f.name, N: n, Bands: bw, Status: f.status, X: make([]float64, n*bw)}
	for i := 0; i < n; i++ {
		for d := 0; d < bw && d <= i; d++ {
			e.X[i*bw+d] = f.x.At(i, i-d)
		}
	}
	return c.storeEntry(&e)
}

// storeEntry writes e under e.Key: its encoding and checksum, through the
// Store.
func (c *Cache) storeEntry(e *cacheEntry) error {
	if c == nil || c.Store == nil {
		return nil
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(e); err != nil {
		return fmt.Errorf("strategy: cache: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	if err := c.Store.Save(e.Key, buf.Bytes()); err != nil {
		return fmt.Errorf("strategy: cache: %w", err)
	}
	return nil
}

// get returns the factorization for key from the cache, or computes and
// stores it. A computed factorization is rebuilt from the stored form (X's
// bands), exactly as a later load rebuilds it, so a run gives bit-identical
// noise whether its strategy came from the cache or not.
func (c *Cache) get(key string, compute func() (*Factorization, error)) (*Factorization, error) {
	if f := c.load(key); f != nil {
		return f, nil
	}
	f, err := compute()
	if err != nil {
		return nil, err
	}
	if f, err = canonical(f); err != nil {
		return nil, err
	}
	if err := c.store(key, f); err != nil && c.Warn != nil {
		c.Warn(fmt.Errorf("%w (the strategy is used, but will be computed again next time)", err))
	}
	return f, nil
}

// canonical rebuilds f from the band storage of X that the cache keeps.
// A dense X (bands = n) is stored whole, and C is a deterministic function
// of X, so f is returned as it is (once X and C are formed): rebuilding it
// would repeat the O(n³) Cholesky factorization for the same bits.
func canonical(f *Factorization) (*Factorization, error) {
	if err := f.Explicit(); err != nil {
		return nil, err
	}
	n, bw := f.N(), max(f.bands, 1)
	if bw >= n {
		return f, nil
	}
	x := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for d := 0; d < bw && d <= i; d++ {
			x.SetSym(i, i-d, f.x.At(i, i-d))
		}
	}
	return NewFactorization(f.name, x, f.status)
}

// certified adds the certificate to an L-BFGS factorization cached before
// certificates existed (files of this format version without one), and
// stores it back under key so that the next load has it.
func (c *Cache) certified(key string, f *Factorization, p *bandProblem) (*Factorization, error) {
	if f.status.Certified {
		return f, nil
	}
	st, err := p.withCertificate(f.x, f.status)
	if err != nil {
		return nil, err
	}
	st.Cached = false // as stored
	g := f.withStatus(st)
	if err := c.store(key, g); err != nil && c.Warn != nil {
		c.Warn(fmt.Errorf("%w (the certificate will be computed again next time)", err))
	}
	g.status.Cached = f.status.Cached
	return g, nil
}

// Optimal is OptimalSingle through the cache. The strategy of the O(n²)
// path (prefix sums, with or without a schedule) is stored as its last
// fixed-point iterate v and returned in factored form, loaded or computed
// (key suffix |factored): X and C are formed only when something needs
// them, and the single-participation metrics never do.
func (c *Cache) Optimal(ctx context.Context, w *Workload, opts FixedPointOptions) (*Factorization, error) {
	key := fmt.Sprintf("v%d|optimal|%s|gap=%g|maxiter=%d", cacheFormat, w.Key(), opts.Gap, opts.MaxIter)
	if _, _, fast := w.bidiagInverse(); !fast || opts.Dense {
		return c.get(key, func() (*Factorization, error) { return OptimalSingle(ctx, w, opts) })
	}
	key += "|factored"
	if e := c.loadEntry(key); e != nil && e.N == w.N() && len(e.V) == e.N {
		e.Status.Cached = true
		if f, err := optimalFromV(w, e.V, e.Status); err == nil {
			return f, nil
		}
	}
	f, err := OptimalSingle(ctx, w, opts)
	if err != nil {
		return nil, err
	}
	e := &cacheEntry{Version: cacheFormat, Key: key, Name: f.name, N: f.n, Status: f.status, V: f.single.v}
	if err := c.storeEntry(e); err != nil && c.Warn != nil {
		c.Warn(fmt.Errorf("%w (the strategy is used, but will be computed again next time)", err))
	}
	return f, nil
}

// BandMF is BandMF through the cache. For a momentum workload (β > 0) it
// starts from BandMF for the same learning-rate schedule without momentum
// (itself through the cache, same options; a feasible point, optimized
// quickly through the selected inverse), so the result has no more loss on
// w than that strategy. From BandMF's default start the momentum problem
// converges slowly: at n = 2,400, β = 0.95 and a linear cooldown over 600
// rounds, L-BFGS's 2,000 iterations ended with 0.8% (4 bands) and 3.7%
// (8 bands) more RMSE on w than the strategy optimized without momentum;
// from that strategy they end 0.3% and 0.8% below it, certified within
// 1.2% and 2.3% of the optimum.
func (c *Cache) BandMF(ctx context.Context, w *Workload, bands int, opts LBFGSOptions) (*Factorization, error) {
	opts.defaults()
	key := fmt.Sprintf("v%d|bandmf|%s|bands=%d|maxiter=%d|reltol=%g|store=%d%s", cacheFormat, w.Key(), bands, opts.MaxIter, opts.RelTol, opts.Store, evalTag(w, bands))
	solve := func() (*Factorization, error) { return BandMF(ctx, w, bands, opts) }
	if w.Beta > 0 && !w.custom && opts.Start == nil {
		key += "|start=bandmf-beta0"
		solve = func() (*Factorization, error) {
			s, err := c.BandMF(ctx, Momentum(w.N(), 0, w.Eta), bands, opts)
			if err != nil {
				return nil, err
			}
			o := opts
			o.Start = s.x
			return BandMF(ctx, w, bands, o)
		}
	}
	f, err := c.get(key, solve)
	if err != nil {
		return nil, err
	}
	return c.certified(key, f, newBandProblem(w, bands, func(i, j int) bool { return true }))
}

// BandMFUnequal is BandMFUnequal through the cache.
func (c *Cache) BandMFUnequal(ctx context.Context, w *Workload, bands, b int, opts LBFGSOptions) (*Factorization, error) {
	opts.defaults()
	key := fmt.Sprintf("v%d|bandmf-f|%s|bands=%d|b=%d|maxiter=%d|reltol=%g|store=%d%s", cacheFormat, w.Key(), bands, b, opts.MaxIter, opts.RelTol, opts.Store, evalTag(w, bands))
	f, err := c.get(key, func() (*Factorization, error) { return BandMFUnequal(ctx, w, bands, b, opts) })
	if err != nil {
		return nil, err
	}
	p := newBandProblem(w, bands, func(i, j int) bool { return true })
	p.unequal(b)
	return c.certified(key, f, p)
}

// MultiEpoch is MultiEpoch through the cache, warm-started from BandMF with
// min(b,n) bands (itself through the cache, same L-BFGS options), a feasible
// point that is typically within a few percent of the optimum (Choquette-Choo et al. 2023
// Table 2), so that far fewer iterations are needed than from the default
// start.
//
// Through the dual (useMEDual) there is no start and the key says
// method=dual.
func (c *Cache) MultiEpoch(ctx context.Context, w *Workload, b int, opts LBFGSOptions) (*Factorization, error) {
	opts.defaults()
	if useMEDual(w, b) {
		key := fmt.Sprintf("v%d|multi-epoch|%s|b=%d|maxiter=%d|method=dual", cacheFormat, w.Key(), b, opts.MaxIter)
		return c.get(key, func() (*Factorization, error) { return MultiEpoch(ctx, w, b, opts) })
	}
	key := fmt.Sprintf("v%d|multi-epoch|%s|b=%d|maxiter=%d|reltol=%g|store=%d|start=bandmf%s", cacheFormat, w.Key(), b, opts.MaxIter, opts.RelTol, opts.Store, evalTag(w, min(b, w.N())))
	f, err := c.get(key, func() (*Factorization, error) {
		s, err := c.BandMF(ctx, w, min(b, w.N()), opts)
		if err != nil {
			return nil, err
		}
		opts.Start = s.x
		return MultiEpoch(ctx, w, b, opts)
	})
	if err != nil {
		return nil, err
	}
	return c.certified(key, f, newMultiEpochProblem(w, b))
}

// MultiEpochUnequal is MultiEpochUnequal through the cache, warm-started from
// BandMFUnequal with min(b,n) bands (through the cache, same L-BFGS options).
// Through the dual, as MultiEpoch.
func (c *Cache) MultiEpochUnequal(ctx context.Context, w *Workload, b int, opts LBFGSOptions) (*Factorization, error) {
	opts.defaults()
	if useMEDual(w, b) {
		key := fmt.Sprintf("v%d|multi-epoch-f|%s|b=%d|maxiter=%d|method=dual", cacheFormat, w.Key(), b, opts.MaxIter)
		return c.get(key, func() (*Factorization, error) { return MultiEpochUnequal(ctx, w, b, opts) })
	}
	key := fmt.Sprintf("v%d|multi-epoch-f|%s|b=%d|maxiter=%d|reltol=%g|store=%d|start=bandmf-f%s", cacheFormat, w.Key(), b, opts.MaxIter, opts.RelTol, opts.Store, evalTag(w, min(b, w.N())))
	f, err := c.get(key, func() (*Factorization, error) {
		s, err := c.BandMFUnequal(ctx, w, min(b, w.N()), b, opts)
		if err != nil {
			return nil, err
		}
		opts.Start = s.x
		return MultiEpochUnequal(ctx, w, b, opts)
	})
	if err != nil {
		return nil, err
	}
	p := newMultiEpochProblem(w, b)
	p.unequal(b)
	return c.certified(key, f, p)
}
