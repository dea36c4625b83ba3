package aggregators

import (
	"fmt"
	"iter"
	"math"
	"math/bits"
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
// of norms is an Exact sum in units of C·2⁻⁴⁰. A clip norm that is not
// positive and finite saturates the coordinates at ±2⁶³ units.
type ClippedSum struct {
	clip   float64
	e      int      // coordinates in units of 2^-e
	s1, s2 float64  // s1·s2 = 2^e
	acc    []uint64 // coordinate i: lo word acc[2i], hi word acc[2i+1]
	vec    []float64
	fresh  bool // vec holds acc's values

	clients int   // updates added
	clipped int   // updates whose norm exceeded the clip
	dropped int   // non-finite updates (contribute zero)
	norms   Exact // sum of the pre-clip norms of the finite updates
}

// NewClippedSum returns an empty sum of d coordinates for updates clipped
// to L2 norm clip.
func NewClippedSum(d int, clip float64) *ClippedSum {
	s := &ClippedSum{acc: make([]uint64, 2*d), vec: make([]float64, d)}
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
	clear(s.acc)
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
			s.vec[i] = wide{lo: s.acc[2*i], hi: int64(s.acc[2*i+1])}.float64() * b1 * b2
		}
		s.fresh = true
	}
	return s.vec
}

// Add clips delta in place to L2 norm Clip and adds it to the sum. A
// non-finite delta is counted as dropped and contributes zero. A delta of
// the wrong length is a programming error and panics.
func (s *ClippedSum) Add(delta []float32) {
	if len(delta) != len(s.vec) {
		panic(fmt.Sprintf("aggregators: delta of length %d for a model of %d parameters", len(delta), len(s.vec)))
	}
	s.clients++
	n := ClipL2(delta, s.clip)
	if math.IsNaN(n) || math.IsInf(n, 0) {
		s.dropped++
		return
	}
	s.norms.Add(n)
	if n > s.clip {
		s.clipped++
	}
	s.fresh = false
	addQuantized(s.acc, delta, s.s1, s.s2)
}

// addQuantized adds round(x·s1·s2) of each coordinate x of delta to the
// 128-bit integers of acc, saturating below ±2⁶³.
func addQuantized(acc []uint64, delta []float32, s1, s2 float64) {
	const limit = 0x1p63 - 1024 // the largest float64 below 2⁶³
	acc = acc[:2*len(delta)]
	for i, x := range delta {
		v := math.RoundToEven(float64(x) * s1 * s2)
		v = max(min(v, limit), -limit)
		q := int64(v)
		lo, c := bits.Add64(acc[2*i], uint64(q), 0)
		acc[2*i] = lo
		acc[2*i+1] += c + uint64(q>>63)
	}
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
	for i := 0; i < len(s.acc); i += 2 {
		w := wide{lo: s.acc[i], hi: int64(s.acc[i+1])}
		w.add(wide{lo: o.acc[i], hi: int64(o.acc[i+1])})
		s.acc[i], s.acc[i+1] = w.lo, uint64(w.hi)
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
	w := make([]uint64, len(s.acc), len(s.acc)+2*sumStats)
	copy(w, s.acc)
	nw := s.norms.Words()
	return append(w, uint64(s.clients), 0, uint64(s.clipped), 0, uint64(s.dropped), 0, nw[0], nw[1], nw[2], nw[3])
}

// SetWords sets the sum (at its current clip norm) from Words.
func (s *ClippedSum) SetWords(w []uint64) error {
	if len(w) != len(s.acc)+2*sumStats {
		return fmt.Errorf("aggregators: %d words for a sum of %d coordinates", len(w), len(s.vec))
	}
	copy(s.acc, w)
	st := w[len(s.acc):]
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
