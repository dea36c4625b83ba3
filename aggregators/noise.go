package aggregators

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"dpfl/sim/rng"
)

// NoiseSource streams a mechanism's unit-scale correlated noise: Next writes
// w_t, the noise of round t before scaling by sigma · clip · sensitivity.
// Every source is a fixed linear map of latent standard Gaussian vectors z_j,
// each drawn from the run's stream (label, j), so noise j never depends on
// what was generated before.
type NoiseSource interface {
	Next(dst []float64, t int) error
	// Seek prepares the source to resume at round t (0 ≤ t ≤ rounds): after
	// Seek(t), Next(dst, t), Next(dst, t+1), … return bit-identically what an
	// uninterrupted run returns for those rounds, whatever the source did
	// before. Seek(0) restarts the source.
	Seek(t int) error
	// Bytes reports the memory the source holds between rounds.
	Bytes() int64
}

// latents draws z_j ~ N(0, I) from the stream (label, j), reusing one
// generator so that drawing does not allocate.
type latents struct {
	root  rng.Root
	label string
	cc    rand.ChaCha8
	r     *rand.Rand
}

func newLatents(root rng.Root, label string) *latents {
	l := &latents{root: root, label: label}
	l.r = rand.New(&l.cc)
	return l
}

func (l *latents) fill(dst []float64, j int) {
	l.root.Reseed(&l.cc, l.label, uint64(j))
	rng.FillNormal(dst, l.r)
}

// IdentityNoise is DP-SGD / DP-FedAvg's independent noise: w_t = z_t.
type IdentityNoise struct{ l *latents }

// NewIdentityNoise returns independent noise drawn from ("noise", t).
func NewIdentityNoise(root rng.Root) *IdentityNoise {
	return &IdentityNoise{l: newLatents(root, "noise")}
}

// Next implements NoiseSource.
func (s *IdentityNoise) Next(dst []float64, t int) error { s.l.fill(dst, t); return nil }

// Seek implements NoiseSource: independent noise has no state.
func (s *IdentityNoise) Seek(t int) error {
	if t < 0 {
		return fmt.Errorf("aggregators: seek to round %d", t)
	}
	return nil
}

// Bytes implements NoiseSource.
func (s *IdentityNoise) Bytes() int64 { return 0 }

// Mode chooses how a Linear source gets past latent vectors.
type Mode int

const (
	// Store keeps each latent vector from its first use until its last
	// (O(live · d) memory, O(nnz · d) time per round).
	Store Mode = iota
	// Regenerate keeps nothing and redraws every latent it needs from its
	// stream (O(d) memory, O(nnz · d) time plus the drawing).
	Regenerate
)

// String returns "store" or "regenerate".
func (m Mode) String() string {
	if m == Regenerate {
		return "regenerate"
	}
	return "store"
}

type term struct {
	j int
	w float64
}

// Linear streams w_t = Σ_j W[t, j] z_j for a fixed weight matrix W (rounds ×
// latents): the gradient-space noise of any matrix mechanism (W = C⁻¹ for a
// square lower-triangular C, or the tree estimators' row differences). Both
// modes perform the same floating-point operations in the same order, so they
// give bit-identical noise. In Store mode rounds must be asked for in order.
//
// A Store source whose rows combine many latents (a dense C⁻¹: optimal and
// multi-epoch MF) computes linearBatch rounds at once, in one pass over the
// coordinates in blocks: each latent then comes from memory once per batch
// instead of once per round, which is what bounds a dense mechanism's time
// (2,400 rounds read 2.9 million latent vectors one at a time). Batches are
// aligned to multiples of linearBatch, so a resumed run holds a subset of
// the latents an uninterrupted one holds. Every coordinate of every round
// sees the same operations in the same order as the one-round loop, so the
// noise is bit-identical (TestLinearBatchedIsOneRound).
type Linear struct {
	rows    [][]term
	lastUse []int // per latent: the last round that uses it
	mode    Mode
	d       int
	l       *latents

	live map[int][]float64 // Store: latents still needed
	free [][]float64
	peak int
	next int       // Store: the round expected next
	buf  []float64 // Regenerate: scratch latent

	batch int           // Store: rounds per batch (1: no batching)
	base  int           // Store, batched: the first round held in out
	ready int           // Store, batched: rounds base..ready−1 are in out
	out   [][]float64   // Store, batched: out[t−base] is round t's noise
	zs    [][][]float64 // Store, batched: per round of a batch, its terms' latents
	ws    [][]float64   // Store, batched: per round of a batch, its terms' weights
}

// linearBatch is the number of rounds a batched Linear source computes in
// one pass, linearDense the fewest latents a row must combine for batching
// to pay (below it the source keeps its one-round loop and memory), and
// linearBlock the coordinates per block of a pass (linearBatch output blocks
// of 16 KB stay in L2 while the latents stream through).
const (
	linearBatch = 32
	linearDense = 64
	linearBlock = 2048
)

// NewLinear returns the source for W (zeros skipped), latents drawn from
// (label, j), for models of dimension d.
func NewLinear(W mat.Matrix, label string, root rng.Root, d int, mode Mode) *Linear {
	n, m := W.Dims()
	s := &Linear{rows: make([][]term, n), lastUse: make([]int, m), mode: mode, d: d, l: newLatents(root, label)}
	for j := range s.lastUse {
		s.lastUse[j] = -1
	}
	for t := 0; t < n; t++ {
		for j := 0; j < m; j++ {
			if w := W.At(t, j); w != 0 {
				s.rows[t] = append(s.rows[t], term{j, w})
				s.lastUse[j] = t
			}
		}
	}
	s.batch = 1
	if mode == Store {
		s.live = map[int][]float64{}
		if s.NonZeros() >= linearDense {
			s.batch = min(linearBatch, n)
		}
	} else {
		s.buf = make([]float64, d)
	}
	return s
}

// batchOf returns the aligned batch [lo, hi) that holds round t.
func (s *Linear) batchOf(t int) (lo, hi int) {
	lo = t - t%s.batch
	return lo, min(lo+s.batch, len(s.rows))
}

// PeakLatents returns the largest number of latent vectors Store mode holds
// at once over the whole run (computed from W, whatever the mode): a latent
// is held from the batch of its first use through the batch of its last.
func (s *Linear) PeakLatents() int {
	first := make([]int, len(s.lastUse))
	for j := range first {
		first[j] = -1
	}
	for t, row := range s.rows {
		for _, tm := range row {
			if first[tm.j] < 0 {
				first[tm.j] = t
			}
		}
	}
	delta := make([]int, len(s.rows)+1)
	for j, f := range first {
		if f >= 0 {
			lo, _ := s.batchOf(f)
			_, hi := s.batchOf(s.lastUse[j])
			delta[lo]++
			delta[hi]--
		}
	}
	peak, cur := 0, 0
	for _, x := range delta {
		cur += x
		peak = max(peak, cur)
	}
	return peak
}

// Outputs returns the number of noise vectors Store mode holds besides the
// latents: the rounds of a batch (0 without batching).
func (s *Linear) Outputs() int {
	if s.batch == 1 {
		return 0
	}
	return s.batch
}

// NonZeros returns the largest number of latents any one round combines.
func (s *Linear) NonZeros() int {
	m := 0
	for _, r := range s.rows {
		m = max(m, len(r))
	}
	return m
}

// Next implements NoiseSource.
func (s *Linear) Next(dst []float64, t int) error {
	if t < 0 || t >= len(s.rows) {
		return fmt.Errorf("aggregators: noise for round %d of a %d-round mechanism", t, len(s.rows))
	}
	if len(dst) != s.d {
		panic(fmt.Sprintf("aggregators: noise buffer of %d for dimension %d", len(dst), s.d))
	}
	if s.mode == Store && t != s.next {
		return fmt.Errorf("aggregators: store-mode noise asked for round %d, expected round %d (use regenerate mode to jump)", t, s.next)
	}
	if s.batch > 1 {
		if t >= s.ready {
			s.compute(t)
		}
		copy(dst, s.out[t-s.base])
		s.next++
		return nil
	}
	clear(dst)
	for _, tm := range s.rows[t] {
		z := s.buf
		if s.mode == Store {
			z = s.latent(tm.j)
		} else {
			s.l.fill(z, tm.j)
		}
		axpy(dst, tm.w, z)
	}
	if s.mode == Store {
		for _, tm := range s.rows[t] {
			if s.lastUse[tm.j] == t {
				s.free = append(s.free, s.live[tm.j])
				delete(s.live, tm.j)
			}
		}
		s.next++
	}
	return nil
}

// Seek implements NoiseSource. Regenerate mode keeps no state. Store mode
// releases the latents it holds; those that rounds ≥ t share with earlier
// rounds are redrawn from their streams when first needed again, so they are
// the same vectors and the noise is bit-identical.
func (s *Linear) Seek(t int) error {
	if t < 0 || t > len(s.rows) {
		return fmt.Errorf("aggregators: seek to round %d of a %d-round mechanism", t, len(s.rows))
	}
	if s.mode == Store {
		for j, z := range s.live {
			s.free = append(s.free, z)
			delete(s.live, j)
		}
		s.next, s.base, s.ready = t, t, t
	}
	return nil
}

// latent returns latent j, drawing it into a free or new vector when it is
// not held (Store mode).
func (s *Linear) latent(j int) []float64 {
	z, ok := s.live[j]
	if !ok {
		if k := len(s.free); k > 0 {
			z, s.free = s.free[k-1], s.free[:k-1]
		} else {
			z = make([]float64, s.d)
		}
		s.l.fill(z, j)
		s.live[j] = z
		s.peak = max(s.peak, len(s.live))
	}
	return z
}

// compute fills out with rounds t0..hi−1, hi the end of t0's aligned batch:
// every latent the rounds use is drawn first (latent j's values do not
// depend on when it is drawn), then one pass over the coordinates in
// blocks; in each block, the rows' terms go eight at a time in the rows'
// order, each term group for every round of the batch in turn, so the
// eight latent blocks are read from cache by every round that uses them.
// Per coordinate, round t still computes ((0 + w₀z₀) + w₁z₁) + … in its
// row's order, the one-round loop's operations.
func (s *Linear) compute(t0 int) {
	_, hi := s.batchOf(t0)
	m := hi - t0
	for len(s.out) < m {
		s.out = append(s.out, make([]float64, s.d))
		s.zs = append(s.zs, nil)
		s.ws = append(s.ws, nil)
	}
	most := 0
	for k := 0; k < m; k++ {
		row := s.rows[t0+k]
		s.zs[k], s.ws[k] = s.zs[k][:0], s.ws[k][:0]
		for _, tm := range row {
			s.zs[k] = append(s.zs[k], s.latent(tm.j))
			s.ws[k] = append(s.ws[k], tm.w)
		}
		most = max(most, len(row))
	}
	for lo := 0; lo < s.d; lo += linearBlock {
		hi := min(lo+linearBlock, s.d)
		for k := 0; k < m; k++ {
			clear(s.out[k][lo:hi])
		}
		for i := 0; i < most; i += 8 {
			for k := 0; k < m; k++ {
				zs, ws, dst := s.zs[k], s.ws[k], s.out[k][lo:hi]
				if i >= len(zs) {
					continue
				}
				if i+8 <= len(zs) {
					z := zs[i : i+8]
					axpy8(dst, ws[i:i+8], z[0][lo:hi], z[1][lo:hi], z[2][lo:hi], z[3][lo:hi], z[4][lo:hi], z[5][lo:hi], z[6][lo:hi], z[7][lo:hi])
					continue
				}
				for q := i; q < len(zs); q++ {
					axpy(dst, ws[q], zs[q][lo:hi])
				}
			}
		}
	}
	for k := 0; k < m; k++ {
		for _, tm := range s.rows[t0+k] {
			if z, ok := s.live[tm.j]; ok && s.lastUse[tm.j] < hi {
				s.free = append(s.free, z)
				delete(s.live, tm.j)
			}
		}
		clear(s.zs[k]) // hold no reference to a freed latent
	}
	s.base, s.ready = t0, hi
}

// Bytes implements NoiseSource: the latents held now (Store) or the scratch
// vector (Regenerate).
func (s *Linear) Bytes() int64 {
	if s.mode == Store {
		return int64(len(s.live)+len(s.free)+len(s.out)) * int64(s.d) * 8
	}
	return int64(s.d) * 8
}

func axpy(dst []float64, a float64, x []float64) {
	for i, v := range x {
		dst[i] += float64(a * v)
	}
}

// Banded streams w = C⁻¹ z for a lower-triangular C with b bands (BandMF) by
// forward substitution, w_t = (z_t − Σ_{t−b<j<t} C[t,j] w_j) / C[t,t], keeping
// only the last b−1 w's: O(b·d) memory and time per round. Rounds must be
// asked for in order.
//
// The noise does not depend on the model, so Next computes up to
// min(b−1, bandedBatch) rounds at once (a batch) in one pass over the
// coordinates, in blocks small enough that the b−1 history blocks stay in
// the core's cache while every round of the batch reads them: each history
// vector then comes from memory once per batch instead of once per round.
// The batch's outputs are held in the ring itself (round r overwrites the
// slot of w_{r−b+1}, which no later round needs), so the memory is the same
// b−1 vectors; later calls copy them out. Every coordinate sees the same
// operations in the same order as the one-round recurrence, so the noise is
// bit-identical (TestBandedBlockedIsPlainRecurrence).
type Banded struct {
	c     *mat.TriDense
	b     int
	d     int
	l     *latents
	hist  [][]float64 // ring: slot j%(b−1) holds w_j for the last b−1 rounds computed
	next  int         // the round expected next
	ready int         // rounds next..ready−1 are computed and held in hist

	gens  []*latents    // one generator per round of a batch
	coef  [][]float64   // per round of a batch: −C[t,j] for the rows in use
	rows  [][][]float64 // per round of a batch: the history rows in use, oldest first
	inv   []float64     // per round of a batch: 1/C[t,t]
	block int           // coordinates per block of a batch pass
	blk   []float64     // scratch: one block
}

// bandedBlock is the largest number of coordinates Banded processes at a
// time (32 KB of float64); bandedCache is the bytes of history blocks a
// batch pass keeps in cache (half of a 1 MB L2 cache), which sets the block size for many bands; bandedBatch caps the
// rounds of a batch.
const (
	bandedBlock = 4096
	bandedCache = 512 << 10
	bandedBatch = 64
)

// NewBanded returns the source for a lower-triangular C with b bands
// (entries further than b−1 below the diagonal must be zero).
func NewBanded(c *mat.TriDense, b int, root rng.Root, d int) (*Banded, error) {
	n, _ := c.Dims()
	if b < 1 || b > n {
		return nil, fmt.Errorf("aggregators: %d bands for %d rounds", b, n)
	}
	for i := 0; i < n; i++ {
		if c.At(i, i) == 0 {
			return nil, fmt.Errorf("aggregators: banded factor is singular at round %d", i)
		}
		for j := 0; j < i-b+1; j++ {
			if c.At(i, j) != 0 {
				return nil, fmt.Errorf("aggregators: factor entry (%d, %d) lies outside %d bands", i, j, b)
			}
		}
	}
	block := bandedCache / 8 / b
	block = min(bandedBlock, max(256, block-block%8))
	s := &Banded{c: c, b: b, d: d, l: newLatents(root, "noise"), hist: make([][]float64, b-1),
		block: block, blk: make([]float64, block)}
	for i := range s.hist {
		s.hist[i] = make([]float64, d)
	}
	return s, nil
}

// Next implements NoiseSource.
func (s *Banded) Next(dst []float64, t int) error {
	if t != s.next {
		return fmt.Errorf("aggregators: banded noise asked for round %d, expected round %d", t, s.next)
	}
	n, _ := s.c.Dims()
	if t >= n {
		return fmt.Errorf("aggregators: noise for round %d of a %d-round mechanism", t, n)
	}
	if len(dst) != s.d {
		panic(fmt.Sprintf("aggregators: noise buffer of %d for dimension %d", len(dst), s.d))
	}
	if s.b == 1 {
		s.l.fill(dst, t)
		inv := 1 / s.c.At(t, t)
		for i := range dst {
			dst[i] *= inv
		}
		s.next++
		return nil
	}
	if t >= s.ready {
		s.batch(t, min(s.b-1, bandedBatch, n-t))
	}
	copy(dst, s.hist[t%(s.b-1)])
	s.next++
	return nil
}

// batch computes rounds t0..t0+m−1 (m ≤ b−1) into the ring and sets ready.
func (s *Banded) batch(t0, m int) {
	for len(s.gens) < m {
		s.gens = append(s.gens, newLatents(s.l.root, s.l.label))
		s.coef = append(s.coef, make([]float64, 0, s.b))
		s.rows = append(s.rows, make([][]float64, 0, s.b))
		s.inv = append(s.inv, 0)
	}
	for k := 0; k < m; k++ {
		t := t0 + k
		g := s.gens[k]
		g.root.Reseed(&g.cc, g.label, uint64(t))
		s.coef[k], s.rows[k] = s.coef[k][:0], s.rows[k][:0]
		for j := max(0, t-s.b+1); j < t; j++ {
			s.coef[k] = append(s.coef[k], -s.c.At(t, j))
			s.rows[k] = append(s.rows[k], s.hist[j%(s.b-1)])
		}
		s.inv[k] = 1 / s.c.At(t, t)
	}
	// One pass over the coordinates in blocks; in each block, the rounds
	// in order: draw z_t's block (each generator runs through its
	// coordinates in order, so the values are those of one fill of the
	// whole vector), subtract every history row's block (rows of this
	// batch included: their block is already computed), scale, and store
	// into the slot of the oldest row in use (read above, needed by no
	// later round). The per-coordinate operations and their order are
	// those of b−1 separate axpy passes.
	for lo := 0; lo < s.d; lo += s.block {
		hi := min(lo+s.block, s.d)
		blk := s.blk[:hi-lo]
		for k := 0; k < m; k++ {
			rng.FillNormal(blk, s.gens[k].r)
			rows, coef := s.rows[k], s.coef[k]
			i := 0
			for ; i+8 <= len(rows); i += 8 {
				r := rows[i : i+8]
				axpy8(blk, coef[i:i+8], r[0][lo:hi], r[1][lo:hi], r[2][lo:hi], r[3][lo:hi], r[4][lo:hi], r[5][lo:hi], r[6][lo:hi], r[7][lo:hi])
			}
			for ; i+4 <= len(rows); i += 4 {
				axpy4(blk, coef[i:i+4], rows[i][lo:hi], rows[i+1][lo:hi], rows[i+2][lo:hi], rows[i+3][lo:hi])
			}
			for ; i < len(rows); i++ {
				axpy(blk, coef[i], rows[i][lo:hi])
			}
			inv := s.inv[k]
			for i := range blk {
				blk[i] *= inv
			}
			copy(s.hist[(t0+k)%(s.b-1)][lo:hi], blk)
		}
	}
	s.ready = t0 + m
}

// axpy8 is eight axpy passes in one loop, evaluated left to right like
// axpy4: the same operations in the same order (bit-identical noise; the
// conversions float64(a·x) keep the compiler from fusing a multiply-add,
// which it may do for GOAMD64=v3, so every build rounds as the AVX2 kernel).
// Eight history vectors per pass instead of four halve the passes over dst;
// a BandMF round reads 63 history vectors and is bound by memory bandwidth
// and arithmetic, so rounds are also processed in batches (Banded.batch).
//
// On amd64 with AVX2 the first len(dst) &^ 15 coordinates go through
// axpy8AVX2 (four lanes, separate multiply and add: the same roundings in
// the same order, TestAxpy8AVX2BitIdentical) and the rest through the loop.
func axpy8(dst, a, x0, x1, x2, x3, x4, x5, x6, x7 []float64) {
	if m := len(dst) &^ 15; useAVX2 && m > 0 {
		_ = a[7]
		x0, x1, x2, x3, x4, x5, x6, x7 = x0[:len(dst)], x1[:len(dst)], x2[:len(dst)], x3[:len(dst)], x4[:len(dst)], x5[:len(dst)], x6[:len(dst)], x7[:len(dst)]
		axpy8AVX2(dst, a, x0, x1, x2, x3, x4, x5, x6, x7)
		dst, x0, x1, x2, x3, x4, x5, x6, x7 = dst[m:], x0[m:], x1[m:], x2[m:], x3[m:], x4[m:], x5[m:], x6[m:], x7[m:]
	}
	axpy8Go(dst, a, x0, x1, x2, x3, x4, x5, x6, x7)
}

// axpy8Go is axpy8's pure-Go loop.
func axpy8Go(dst, a, x0, x1, x2, x3, x4, x5, x6, x7 []float64) {
	a0, a1, a2, a3, a4, a5, a6, a7 := a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
	m := len(dst)
	x0, x1, x2, x3, x4, x5, x6, x7 = x0[:m], x1[:m], x2[:m], x3[:m], x4[:m], x5[:m], x6[:m], x7[:m]
	for i, v := range dst {
		dst[i] = v + float64(a0*x0[i]) + float64(a1*x1[i]) + float64(a2*x2[i]) + float64(a3*x3[i]) +
			float64(a4*x4[i]) + float64(a5*x5[i]) + float64(a6*x6[i]) + float64(a7*x7[i])
	}
}

// axpy4 is four axpy passes, dst += a[0]·x0, then a[1]·x1, …, in one loop:
// ((dst + a0·x0) + a1·x1) + … is evaluated left to right, the same
// operations in the same order as four passes.
func axpy4(dst, a, x0, x1, x2, x3 []float64) {
	a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
	x0, x1, x2, x3 = x0[:len(dst)], x1[:len(dst)], x2[:len(dst)], x3[:len(dst)]
	for i, v := range dst {
		dst[i] = v + float64(a0*x0[i]) + float64(a1*x1[i]) + float64(a2*x2[i]) + float64(a3*x3[i])
	}
}

// Seek implements NoiseSource by replaying the recurrence over rounds
// 0..t−1 (O(t·b·d) once): each output depends on all earlier ones, and
// replaying performs the same operations in the same order, so the history
// and the following rounds are bit-identical to an uninterrupted run.
func (s *Banded) Seek(t int) error {
	n, _ := s.c.Dims()
	if t < 0 || t > n {
		return fmt.Errorf("aggregators: seek to round %d of a %d-round mechanism", t, n)
	}
	s.next, s.ready = 0, 0
	if s.b > 1 {
		for s.ready < t {
			s.batch(s.ready, min(s.b-1, bandedBatch, n-s.ready))
		}
	}
	s.next = t
	return nil
}

// Bytes implements NoiseSource.
func (s *Banded) Bytes() int64 { return int64(len(s.hist)) * int64(s.d) * 8 }
