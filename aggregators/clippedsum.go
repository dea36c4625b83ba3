package aggregators

import (
	"fmt"
	"iter"
	"math"
)

// ClippedSum is one round's sum of clipped client updates together with the
// per-round statistics the mechanisms and the report need. Every sum of
// client contributions goes through it: an executor adds the cohort's
// updates (Add), possibly into several partial sums that are then merged
// (Merge), and a mechanism privatizes the finished sum (Aggregator.Privatize).
//
// Arithmetic: the sum is exact and order-free. Each coordinate x of a
// clipped update (|x| ≤ C, the clip norm) is quantized to the integer
// round(x·2^e), e = 62 − k for the smallest k with C ≤ 2^k, so |x·2^e| < 2⁶³
// and the quantization error is at most 2^-e/2 ≤ C·2⁻⁶² per coordinate and
// update. The integers are summed in 128-bit two's complement, which cannot
// overflow below 2⁶⁴ updates; integer addition is associative, so any
// split of a cohort into partial sums, merged in any order, gives the same
// integers, and the float64 vector (Vector) is converted from them once, a
// function of the integers alone. The statistics are integers, and the sum
// of norms is an Exact sum in units of C·2⁻⁴⁰ (each norm from clipFactor's
// lane sums; whether and by what factor an update is clipped is ClipL2's
// decision, bit for bit). A clip norm that is not
// positive and finite saturates the coordinates at ±2⁶³ units.
type ClippedSum struct {
	clip   float64
	e      int      // coordinates in units of 2^-e
	s1, s2 float64  // s1·s2 = 2^e
	lo     []uint64 // coordinate i is the 128-bit integer hi[i]·2⁶⁴ + int64(lo[i])
	hi     []int64  // (lo signed: hi changes only when a signed add overflows)
	vec    []float64
	fresh  bool // vec holds the integers' values

	clients int   // updates added
	clipped int   // updates whose norm exceeded the clip
	dropped int   // non-finite updates (contribute zero)
	norms   Exact // sum of the pre-clip norms of the finite updates
}

// NewClippedSum returns an empty sum of d coordinates for updates clipped
// to L2 norm clip.
func NewClippedSum(d int, clip float64) *ClippedSum {
	s := &ClippedSum{lo: make([]uint64, d), hi: make([]int64, d), vec: make([]float64, d)}
	s.Reset(clip)
	return s
}

// clipExp returns k, the smallest integer with clip ≤ 2^k (0 for a clip
// norm that is not positive and finite).
func clipExp(clip float64) int {
	if !(clip > 0) || math.IsInf(clip, 0) {
		return 0
	}
	f, k := math.Frexp(clip) // clip = f·2^k, f in [0.5, 1)
	if f == 0.5 {
		k--
	}
	return k
}

// Reset empties the sum for a round at clip norm clip.
func (s *ClippedSum) Reset(clip float64) {
	clear(s.lo)
	clear(s.hi)
	k := clipExp(clip)
	s.clip, s.e, s.fresh = clip, 62-k, false
	s.s1, s.s2 = scales(s.e)
	s.clients, s.clipped, s.dropped, s.norms = 0, 0, 0, NewExact(k-40)
}

// Clip returns the clip norm the updates are clipped at.
func (s *ClippedSum) Clip() float64 { return s.clip }

// Len returns the number of coordinates.
func (s *ClippedSum) Len() int { return len(s.vec) }

// Vector returns the sum of the clipped updates, converted from the exact
// integer sums; it belongs to s and is valid until the next Add, Merge,
// Reset or SetWords.
func (s *ClippedSum) Vector() []float64 {
	if !s.fresh {
		b1, b2 := scales(-s.e)
		for i := range s.vec {
			s.vec[i] = s.word(i).float64() * b1 * b2
		}
		s.fresh = true
	}
	return s.vec
}

// Add clips delta to L2 norm Clip and adds it to the sum; delta itself is
// left unchanged. A non-finite delta is counted as dropped and contributes
// zero. A delta of the wrong length is a programming error and panics.
//
// The clipped coordinates are those ClipL2 would leave in delta: x·f
// rounded to float32 with f = float32(Clip/‖delta‖) when the norm exceeds
// the clip norm, x otherwise.
func (s *ClippedSum) Add(delta []float32) {
	if len(delta) != len(s.vec) {
		panic(fmt.Sprintf("aggregators: delta of length %d for a model of %d parameters", len(delta), len(s.vec)))
	}
	s.clients++
	f, clipped, n := clipFactor(delta, s.clip) // f = 1 if not clipped: x·1 = x exactly
	if math.IsNaN(n) || math.IsInf(n, 0) {
		s.dropped++
		return
	}
	s.norms.Add(n)
	if clipped {
		s.clipped++
	}
	s.fresh = false
	addQuantized(s.lo, s.hi, delta, f, s.s1, s.s2)
}

// quantLimit is the largest float64 below 2⁶³: quantized coordinates
// saturate at ±quantLimit.
const quantLimit = 0x1p63 - 1024

// addQuantized adds round(float32(x·f)·s1·s2) of each coordinate x of
// delta (rounded to nearest, ties to even, and saturated at ±quantLimit)
// to the 128-bit integers hi[i]·2⁶⁴ + int64(lo[i]): lo[i] += q wrapping,
// and hi[i] moves by ±1 only where that signed add overflows (rare: the
// quantized coordinates of an update are far below 2⁶³ unless it puts most
// of its norm on a few coordinates), so the kernel need not touch hi
// otherwise. An assembly kernel, where the processor has one, does the
// coordinates in blocks of 16 with the same bits as addQuantizedGo.
func addQuantized(lo []uint64, hi []int64, delta []float32, f float32, s1, s2 float64) {
	lo, hi = lo[:len(delta)], hi[:len(delta)]
	m := 0
	if useAVX512 {
		m = len(delta) &^ 15
		if m > 0 {
			addQuantizedAVX512(lo[:m], hi[:m], delta[:m], f, s1, s2)
		}
	}
	addQuantizedGo(lo[m:], hi[m:], delta[m:], f, s1, s2)
}

// addQuantizedGo is addQuantized in Go.
func addQuantizedGo(lo []uint64, hi []int64, delta []float32, f float32, s1, s2 float64) {
	lo, hi = lo[:len(delta)], hi[:len(delta)]
	for i, x := range delta {
		x *= f
		v := math.RoundToEven(float64(x) * s1 * s2)
		v = max(min(v, quantLimit), -quantLimit)
		q := int64(v)
		l := int64(lo[i])
		n := l + q
		if (l^n)&(q^n) < 0 { // overflowed: l + q = n ± 2⁶⁴
			hi[i] += q>>63 | 1
		}
		lo[i] = uint64(n)
	}
}

// word returns coordinate i as a wide integer (lo unsigned).
func (s *ClippedSum) word(i int) wide {
	return wide{lo: s.lo[i], hi: s.hi[i] + int64(s.lo[i])>>63}
}

// setWord sets coordinate i to w.
func (s *ClippedSum) setWord(i int, w wide) {
	s.lo[i], s.hi[i] = w.lo, w.hi-int64(w.lo)>>63
}

// AddAll adds the deltas in order (Add).
func (s *ClippedSum) AddAll(deltas iter.Seq[[]float32]) {
	for v := range deltas {
		s.Add(v)
	}
}

// Merge adds the partial sum o (of other clients, clipped at the same norm)
// into s, exactly (see the type's documentation).
func (s *ClippedSum) Merge(o *ClippedSum) error {
	if len(o.vec) != len(s.vec) || o.clip != s.clip {
		return fmt.Errorf("aggregators: cannot merge a sum of %d coordinates clipped at %v into one of %d clipped at %v", len(o.vec), o.clip, len(s.vec), s.clip)
	}
	for i := range s.lo {
		w := s.word(i)
		w.add(o.word(i))
		s.setWord(i, w)
	}
	s.fresh = false
	s.clients += o.clients
	s.clipped += o.clipped
	s.dropped += o.dropped
	return s.norms.Merge(o.norms)
}

// sumStats is the number of 128-bit statistics after the coordinates in
// Words: clients, clipped, dropped, the norms' sum and its non-finite
// count.
const sumStats = 5

// Words returns the sum as 128-bit integers, each a (lo, hi) pair of
// words: the d coordinates, then the statistics. The element-wise 128-bit
// sum of several sums' words, given to SetWords, is their Merge: this is
// how a transport that adds integers (an MPI allreduce) merges sums.
func (s *ClippedSum) Words() []uint64 {
	w := make([]uint64, 2*len(s.lo), 2*len(s.lo)+2*sumStats)
	for i := range s.lo {
		c := s.word(i)
		w[2*i], w[2*i+1] = c.lo, uint64(c.hi)
	}
	nw := s.norms.Words()
	return append(w, uint64(s.clients), 0, uint64(s.clipped), 0, uint64(s.dropped), 0, nw[0], nw[1], nw[2], nw[3])
}

// SetWords sets the sum (at its current clip norm) from Words.
func (s *ClippedSum) SetWords(w []uint64) error {
	if len(w) != 2*len(s.lo)+2*sumStats {
		return fmt.Errorf("aggregators: %d words for a sum of %d coordinates", len(w), len(s.vec))
	}
	for i := range s.lo {
		s.setWord(i, wide{lo: w[2*i], hi: int64(w[2*i+1])})
	}
	st := w[2*len(s.lo):]
	for i := 0; i < 6; i += 2 { // the counts: non-negative, below 2⁶³
		if st[i+1] != 0 || st[i] > math.MaxInt64 {
			return fmt.Errorf("aggregators: a count of %d·2⁶⁴+%d updates", st[i+1], st[i])
		}
	}
	s.clients, s.clipped, s.dropped = int(st[0]), int(st[2]), int(st[4])
	s.norms.SetWords([4]uint64{st[6], st[7], st[8], st[9]})
	s.fresh = false
	return nil
}

// Clients returns the number of updates added (dropped ones included).
func (s *ClippedSum) Clients() int { return s.clients }

// Unclipped returns the number of finite updates whose norm was at most the
// clip norm (adaptive clipping's count).
func (s *ClippedSum) Unclipped() int { return s.clients - s.dropped - s.clipped }

// Report returns the sum's statistics as a round report (no noise yet).
func (s *ClippedSum) Report() Report {
	rep := Report{Clients: s.clients, Clipped: s.clipped, Dropped: s.dropped}
	if finite := s.clients - s.dropped; finite > 0 {
		rep.MeanNorm = s.norms.Float64() / float64(finite)
	}
	return rep
}
