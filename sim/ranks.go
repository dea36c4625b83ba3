package sim

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"math"

	"dpfl/aggregators"
)

// Comm connects the processes (ranks) of one run, for instance over MPI.
// Every rank must make the same sequence of calls; a rank that fails
// between them must end the others (an MPI abort), since they would wait.
type Comm interface {
	Rank() int // 0 .. Size()-1
	Size() int
	// SumWords replaces buf, on every rank, by the element-wise sum over
	// the ranks of their bufs read as 128-bit integers, each a (lo, hi)
	// pair of words, modulo 2¹²⁸ (order-free). Every rank passes the same
	// length.
	SumWords(buf []uint64) error
	// Broadcast replaces buf, on every rank, by rank 0's (same length on
	// every rank).
	Broadcast(buf []byte) error
}

// Ranks is the executor of one rank of a run spread over processes: each
// rank trains a fixed slice of every cohort on its Local executor, the
// slice of rank r of R being clients [⌊n·r/R⌋, ⌊n·(r+1)/R⌋) of the n in
// cohort order (a streamed population's rank reads and prefetches only its
// slices: Job.Part and Job.Parts); the ranks' exact partial sums (clipped sums and their
// statistics) are added by Comm.SumWords, which also carries the clients'
// losses whole (each in a slot of its own). Since the sums are exact integers,
// every rank holds the same sum as a single process training the whole
// cohort, bit for bit, and so privatizes it into the same parameters
// (every rank draws the same noise from the run's root).
type Ranks struct {
	Local Executor
	Comm  Comm

	part *aggregators.ClippedSum
}

var _ Executor = (*Ranks)(nil)

// slice returns this rank's part of n clients.
func (r *Ranks) slice(n int) (lo, hi int) { return r.sliceOf(r.Comm.Rank(), n) }

// sliceOf returns rank k's part of n clients.
func (r *Ranks) sliceOf(k, n int) (lo, hi int) {
	size := r.Comm.Size()
	return n * k / size, n * (k + 1) / size
}

// Train implements Executor.
func (r *Ranks) Train(ctx context.Context, job Job, sum *aggregators.ClippedSum) (Trained, error) {
	if r.part == nil || r.part.Len() != sum.Len() {
		r.part = aggregators.NewClippedSum(sum.Len(), sum.Clip())
	}
	r.part.Reset(sum.Clip())
	n := len(job.Clients)
	lo, hi := r.slice(n)
	tr, err := r.Local.Train(ctx, Job{Round: job.Round, Params: job.Params, Clients: job.Clients[lo:hi], Part: r.Comm.Rank(), Parts: r.Comm.Size()}, r.part)
	if err != nil {
		return tr, err
	}
	words := r.part.Words()
	m := len(words)
	// Then the losses: rank r's from slot lo of n (its slice has at most
	// hi-lo; canaries have none), and the ranks' loss counts. Each slot is
	// set by one rank only, so the sum carries the float64s' bits whole.
	words = append(words, make([]uint64, 2*(n+r.Comm.Size()))...)
	for i, l := range tr.Losses {
		words[m+2*(lo+i)] = math.Float64bits(l)
	}
	words[m+2*(n+r.Comm.Rank())] = uint64(len(tr.Losses))
	if err := r.Comm.SumWords(words); err != nil {
		return tr, fmt.Errorf("sim: summing round %d over %d ranks: %w", job.Round+1, r.Comm.Size(), err)
	}
	if err := r.part.SetWords(words[:m]); err != nil {
		return tr, err
	}
	tr.Losses = tr.Losses[:0]
	for k := range r.Comm.Size() {
		from, _ := r.sliceOf(k, n)
		for i := range int(words[m+2*(n+k)]) {
			tr.Losses = append(tr.Losses, math.Float64frombits(words[m+2*(from+i)]))
		}
	}
	return tr, sum.Merge(r.part)
}

// Losses implements Executor: each rank scores its slice of the clients,
// and the ranks exchange their losses whole (each slot set by one rank).
func (r *Ranks) Losses(ctx context.Context, c Candidates, clients []int, clip float64) ([][]float64, error) {
	n := len(clients)
	lo, hi := r.slice(n)
	mine, err := r.Local.Losses(ctx, c, clients[lo:hi], clip)
	if err != nil {
		return nil, err
	}
	words := make([]uint64, 2*n*len(mine))
	for j, ls := range mine {
		for i, l := range ls {
			words[2*(j*n+lo+i)] = math.Float64bits(l)
		}
	}
	if err := r.Comm.SumWords(words); err != nil {
		return nil, fmt.Errorf("sim: summing candidate losses over %d ranks: %w", r.Comm.Size(), err)
	}
	out := make([][]float64, len(mine))
	for j := range out {
		out[j] = make([]float64, n)
		for i := range out[j] {
			out[j][i] = math.Float64frombits(words[2*(j*n+i)])
		}
	}
	return out, nil
}

// BroadcastBytes returns rank 0's b on every rank (b is ignored on the
// others).
func BroadcastBytes(c Comm, b []byte) ([]byte, error) {
	n := make([]byte, 8)
	binary.LittleEndian.PutUint64(n, uint64(len(b)))
	if err := c.Broadcast(n); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint64(n)
	if c.Rank() != 0 {
		b = make([]byte, size)
	}
	return b, c.Broadcast(b)
}

// ShareStart gives every rank rank 0's start of the run: go reports
// whether to train (false: rank 0 has nothing to train, or failed before
// training), resume the checkpointed state to continue from (nil: from
// scratch). Rank 0 passes its values; the others' are ignored.
func ShareStart(c Comm, train bool, resume *State) (ok bool, st *State, err error) {
	var buf bytes.Buffer
	if c.Rank() == 0 {
		msg := startMsg{Train: train, Resume: resume}
		if err := gob.NewEncoder(&buf).Encode(msg); err != nil {
			return false, nil, err
		}
	}
	b, err := BroadcastBytes(c, buf.Bytes())
	if err != nil {
		return false, nil, err
	}
	if c.Rank() == 0 {
		return train, resume, nil
	}
	var msg startMsg
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&msg); err != nil {
		return false, nil, fmt.Errorf("sim: rank %d: rank 0's start message: %w", c.Rank(), err)
	}
	return msg.Train, msg.Resume, nil
}

type startMsg struct {
	Train  bool
	Resume *State
}

// Mismatched returns the ranks whose hash differs from rank 0's (every
// rank gets the same answer): a run whose ranks run different binaries or
// configurations must not start.
func Mismatched(c Comm, hash [32]byte) ([]int, error) {
	ref := hash
	if err := c.Broadcast(ref[:]); err != nil {
		return nil, err
	}
	flags := make([]uint64, 2*c.Size())
	if ref != hash {
		flags[2*c.Rank()] = 1
	}
	if err := c.SumWords(flags); err != nil {
		return nil, err
	}
	var out []int
	for r := range c.Size() {
		if flags[2*r] != 0 {
			out = append(out, r)
		}
	}
	return out, nil
}
