package sim

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"dpfl/datasets"
)

// runRanks runs spec (made once per rank) on n in-process ranks and
// returns each rank's summary and rounds.
func runRanks(n int, drop bool, spec func() Spec) ([]Summary, [][]Round, error) {
	comms := NewLocalComms(n)
	comms[0].(member).g.drop = drop
	sums, rounds, errs := make([]Summary, n), make([][]Round, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := spec()
			pool, err := NewPool(s)
			if err != nil {
				errs[r] = err
				return
			}
			s.Executor = &Ranks{Local: pool, Comm: comms[r]}
			sums[r], errs[r] = Run(context.Background(), s, func(rd Round) { rd.Update = nil; rounds[r] = append(rounds[r], rd) })
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return sums, rounds, nil
}

// TestRanks: a run spread over 1, 2 and 3 ranks (each training its slice
// of every cohort, the exact sums added over the ranks) is the run of one
// pool bit for bit on every rank, for DP-FedAvg and DP-AGD (whose
// candidate losses are summed over the ranks too); ranks whose sums leave
// out the other ranks' parts (negative control) are not.
func TestRanks(t *testing.T) {
	for _, c := range []struct {
		name string
		spec func() Spec
	}{
		{"dp-fedavg", func() Spec { return spec(1) }},
		{"dp-agd", func() Spec { return agdSpec(t, 1) }},
	} {
		wantSum, want := runRounds(t, c.spec())
		for _, n := range []int{1, 2, 3} {
			sums, rounds, err := runRanks(n, false, c.spec)
			if err != nil {
				t.Fatal(err)
			}
			for r := range n {
				if !sameRounds(t, rounds[r], want, sums[r], wantSum) {
					t.Fatalf("%s: rank %d of %d differs from one pool", c.name, r, n)
				}
			}
		}
		sums, rounds, err := runRanks(2, true, c.spec)
		if err != nil {
			t.Fatal(err)
		}
		if sameRounds(t, rounds[0], want, sums[0], wantSum) {
			t.Fatalf("%s: ranks that sum only rank 0's part matched one pool", c.name)
		}
	}
}

// TestShareStartAndMismatched: rank 0's start (train or not, the state to
// resume) reaches every rank; a rank with another hash is named on every
// rank.
func TestShareStartAndMismatched(t *testing.T) {
	const n = 3
	comms := NewLocalComms(n)
	type got struct {
		train bool
		st    *State
		bad   []int
		err   error
	}
	res := make([]got, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := comms[r]
			var st *State
			if r == 0 {
				st = &State{Round: 4, Params: []float32{1, -2.5}, Momentum: []float64{0.25}, FinalAcc: 0.5}
			}
			res[r].train, res[r].st, res[r].err = ShareStart(c, r == 0, st)
			if res[r].err != nil {
				return
			}
			var h [32]byte
			if r == 2 {
				h[0] = 1
			}
			res[r].bad, res[r].err = Mismatched(c, h)
		}()
	}
	wg.Wait()
	for r, x := range res {
		if x.err != nil {
			t.Fatalf("rank %d: %v", r, x.err)
		}
		if !x.train || x.st == nil || x.st.Round != 4 || len(x.st.Params) != 2 || x.st.Params[1] != -2.5 || x.st.Momentum[0] != 0.25 || x.st.FinalAcc != 0.5 {
			t.Fatalf("rank %d: start %v %+v", r, x.train, x.st)
		}
		if len(x.bad) != 1 || x.bad[0] != 2 {
			t.Fatalf("rank %d: mismatched ranks %v, want [2]", r, x.bad)
		}
	}
}

// fetches records the cohorts a rank's executor fetches and prefetches.
type fetches struct {
	datasets.ClientData
	mu        sync.Mutex
	ids, next [][]int
}

func (f *fetches) Fetch(ctx context.Context, ids, next []int) error {
	f.mu.Lock()
	f.ids, f.next = append(f.ids, slices.Clone(ids)), append(f.next, slices.Clone(next))
	f.mu.Unlock()
	return f.ClientData.Fetch(ctx, ids, next)
}

// TestRanksPrefetchTheirSlice: each rank fetches its slice of every cohort
// and prefetches its slice of the next one, not the whole cohort, so a
// streamed population's rank reads and holds 1/R of each cohort; the
// slices of the ranks make up the cohorts. One pool (negative control)
// prefetches whole cohorts.
func TestRanksPrefetchTheirSlice(t *testing.T) {
	const n = 3
	s0 := spec(1)
	cohorts := s0.Schedule.Rounds
	comms := NewLocalComms(n)
	seen := make([]*fetches, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := spec(1)
			pool, err := NewPool(s)
			if err != nil {
				errs[r] = err
				return
			}
			seen[r] = &fetches{ClientData: pool.src}
			pool.src = seen[r]
			s.Executor = &Ranks{Local: pool, Comm: comms[r]}
			_, errs[r] = Run(context.Background(), s, func(Round) {})
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for t0, c := range cohorts {
		var ids, next []int
		for r := range n {
			f := seen[r]
			if len(f.ids) != len(cohorts) {
				t.Fatalf("rank %d fetched %d times over %d rounds", r, len(f.ids), len(cohorts))
			}
			lo, hi := len(c)*r/n, len(c)*(r+1)/n
			if !slices.Equal(f.ids[t0], c[lo:hi]) {
				t.Fatalf("round %d, rank %d fetched %v, want %v of %v", t0+1, r, f.ids[t0], c[lo:hi], c)
			}
			ids, next = append(ids, f.ids[t0]...), append(next, f.next[t0]...)
		}
		if !slices.Equal(ids, c) {
			t.Fatalf("round %d: the ranks fetched %v of %v", t0+1, ids, c)
		}
		if t0+1 < len(cohorts) && !slices.Equal(next, cohorts[t0+1]) {
			t.Fatalf("round %d: the ranks prefetched %v, want %v", t0+1, next, cohorts[t0+1])
		}
	}
	s := spec(1)
	pool, err := NewPool(s)
	if err != nil {
		t.Fatal(err)
	}
	one := &fetches{ClientData: pool.src}
	pool.src, s.Executor = one, pool
	if _, err := Run(context.Background(), s, func(Round) {}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(one.next[0], cohorts[1]) {
		t.Fatalf("one pool prefetched %v, want the whole next cohort %v", one.next[0], cohorts[1])
	}
}
