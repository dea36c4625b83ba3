//go:build mpi

package mpi

import (
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"dpfl/aggregators"
)

var world *World

// TestMain starts MPI once; run the tests under mpirun, e.g.
//
//	go test -c -tags mpi -o mpi.test ./mpi && mpirun -np 3 ./mpi.test -test.v
//
// (a plain go test runs them on one rank).
func TestMain(m *testing.M) {
	w, err := Init()
	if err != nil {
		panic(err)
	}
	world = w
	code := m.Run()
	if code != 0 {
		w.Abort(code)
	}
	w.Finalize()
	os.Exit(code)
}

// TestSumWords: the allreduce adds 128-bit (lo, hi) pairs with carries and
// negative numbers exactly: rank r contributes 2⁶⁴−1−r, −(r+1) and 2⁶³+r,
// and every rank gets the sums computed here in closed form.
func TestSumWords(t *testing.T) {
	r, n := uint64(world.Rank()), uint64(world.Size())
	buf := []uint64{math.MaxUint64 - r, 0, -(r + 1), math.MaxUint64, 1<<63 + r, 0}
	if err := world.SumWords(buf); err != nil {
		t.Fatal(err)
	}
	// Σ_r (2⁶⁴ − 1 − r) = n·2⁶⁴ − n − n(n−1)/2.
	s := n + n*(n-1)/2
	want := []uint64{-s, n - 1, -(n + n*(n-1)/2), math.MaxUint64, n<<63 + n*(n-1)/2, n >> 1}
	for i := range buf {
		if buf[i] != want[i] {
			t.Fatalf("rank %d: word %d = %#x, want %#x", r, i, buf[i], want[i])
		}
	}
	if err := world.SumWords(buf[:3]); err == nil {
		t.Error("an odd number of words was summed")
	}
}

// TestBroadcast: every rank gets rank 0's bytes.
func TestBroadcast(t *testing.T) {
	buf := []byte{byte(world.Rank()), 7, 9}
	if err := world.Broadcast(buf); err != nil {
		t.Fatal(err)
	}
	if buf[0] != 0 || buf[1] != 7 || buf[2] != 9 {
		t.Fatalf("rank %d got %v", world.Rank(), buf)
	}
}

// TestAllreduceTime logs the time of one round's allreduce as sim.Ranks
// makes it for a cohort of 1,000 clients: the clipped sum's words
// (aggregators.ClippedSum.Words: two 64-bit words per parameter and its
// statistics) and two words per client and per rank for the losses, for
// the quickstart's model (7,850 parameters) and the 4,050,748-parameter
// StackOverflow LSTM. Each size is timed in batches of calls after a
// barrier; the fastest, median and slowest batch's time per call are
// logged (rank 0).
func TestAllreduceTime(t *testing.T) {
	const cohort = 1000
	for _, d := range []int{7850, 4_050_748} {
		words := len(aggregators.NewClippedSum(d, 1).Words()) + 2*(cohort+world.Size())
		buf := make([]uint64, words)
		reps := max(3, 2_000_000/d)
		var per []float64
		for range 5 {
			if err := world.Barrier(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			for range reps {
				if err := world.SumWords(buf); err != nil {
					t.Fatal(err)
				}
			}
			per = append(per, float64(time.Since(start).Nanoseconds())/1e6/float64(reps))
		}
		slices.Sort(per)
		if world.Rank() == 0 {
			t.Logf("%d ranks, d = %d: %d words (%.4g MB) per allreduce; %.3g ms each (batches of %d: fastest %.3g, slowest %.3g)",
				world.Size(), d, words, float64(8*words)/1e6, per[len(per)/2], reps, per[0], per[len(per)-1])
		}
	}
}
