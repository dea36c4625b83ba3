package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"dpfl/aggregators"
	"dpfl/privacy"
	"dpfl/sim/rng"
)

// halves is an executor that trains the first half of every cohort on one
// executor and the rest on another, each into a partial sum of its own, and
// merges the two: the shape of an executor whose clients train elsewhere
// and come back as clipped sums.
type halves struct {
	a, b Executor
	drop bool // negative control: forget the second half's sum
}

func (h halves) Train(ctx context.Context, job Job, sum *aggregators.ClippedSum) (Trained, error) {
	k := len(job.Clients) / 2
	first := aggregators.NewClippedSum(sum.Len(), sum.Clip())
	second := aggregators.NewClippedSum(sum.Len(), sum.Clip())
	ta, err := h.a.Train(ctx, Job{Round: job.Round, Params: job.Params, Clients: job.Clients[:k]}, first)
	if err != nil {
		return ta, err
	}
	tb, err := h.b.Train(ctx, Job{Round: job.Round, Params: job.Params, Clients: job.Clients[k:]}, second)
	if err != nil {
		return ta, err
	}
	if err := sum.Merge(first); err != nil {
		return ta, err
	}
	if !h.drop {
		if err := sum.Merge(second); err != nil {
			return ta, err
		}
		ta.Merge(tb)
	}
	return ta, nil
}

func (h halves) Losses(ctx context.Context, c Candidates, clients []int, clip float64) ([][]float64, error) {
	k := len(clients) / 2
	la, err := h.a.Losses(ctx, c, clients[:k], clip)
	if err != nil {
		return nil, err
	}
	lb, err := h.b.Losses(ctx, c, clients[k:], clip)
	if err != nil {
		return nil, err
	}
	for j := range la {
		la[j] = append(la[j], lb[j]...)
	}
	return la, nil
}

// splitSpec returns s with its cohorts trained by halves of two pools.
func splitSpec(t *testing.T, s Spec, drop bool) Spec {
	a, err := NewPool(s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewPool(s)
	if err != nil {
		t.Fatal(err)
	}
	s.Executor = halves{a: a, b: b, drop: drop}
	return s
}

func runRounds(t *testing.T, s Spec) (Summary, []Round) {
	var rounds []Round
	sum, err := Run(context.Background(), s, func(r Round) { r.Update = nil; rounds = append(rounds, r) })
	if err != nil {
		t.Fatal(err)
	}
	return sum, rounds
}

// sameRounds reports whether two runs are identical bit for bit: every
// reported round (printed with round-trip precision) and the final
// parameters.
func sameRounds(t *testing.T, got, want []Round, gotSum, wantSum Summary) bool {
	t.Helper()
	if len(got) != len(want) {
		t.Logf("%d rounds, want %d", len(got), len(want))
		return false
	}
	for i := range got {
		if g, w := fmt.Sprintf("%+v", got[i]), fmt.Sprintf("%+v", want[i]); g != w {
			t.Logf("round %d: %s, want %s", i+1, g, w)
			return false
		}
	}
	for i, p := range gotSum.Params {
		if math.Float32bits(p) != math.Float32bits(wantSum.Params[i]) {
			t.Logf("parameter %d: %v, want %v", i, p, wantSum.Params[i])
			return false
		}
	}
	return true
}

// TestSplitExecutor: a cohort split in two halves, each half trained by
// its own executor into its own clipped sum, merged, gives the round of the
// one-pool path bit for bit (the sums are exact); forgetting one half's sum
// (negative control) does not.
func TestSplitExecutor(t *testing.T) {
	wantSum, want := runRounds(t, spec(2))
	gotSum, got := runRounds(t, splitSpec(t, spec(1), false))
	if !sameRounds(t, got, want, gotSum, wantSum) {
		t.Fatal("the split executor's run differs from the pool's")
	}
	badSum, bad := runRounds(t, splitSpec(t, spec(1), true))
	if sameRounds(t, bad, want, badSum, wantSum) {
		t.Fatal("a run missing half of every cohort matched the pool's")
	}
}

// agdSpec is spec with DP-AGD as the algorithm, a budget that runs out
// before the schedule's end.
func agdSpec(t *testing.T, workers int) Spec {
	s := spec(workers)
	ledger, err := privacy.NewLedger(2)
	if err != nil {
		t.Fatal(err)
	}
	s.Algorithm = NewAGD(&aggregators.AGD{Clip: 1, LossClip: 3, RhoNG: 0.3, RhoMax: 0.05, Growth: 0.5, Steps: 4,
		MaxStep: 1, StepEvery: 2, Ledger: ledger, Root: rng.New(5)})
	return s
}

// TestAGDAlgorithm: DP-AGD on the loop stops when its ledger cannot pay for
// another round (fewer rounds than planned, the last one evaluated, the
// ledger within its total), for any worker count, and its sums (gradient
// and candidate losses) can come from a split executor.
func TestAGDAlgorithm(t *testing.T) {
	wantSum, want := runRounds(t, agdSpec(t, 1))
	if n := len(want); n == 0 || n >= 6 || !want[n-1].Evaluated || wantSum.Rounds != n {
		t.Fatalf("%d rounds (summary %d), last evaluated %v: want a run cut short by the budget", n, wantSum.Rounds, n > 0 && want[n-1].Evaluated)
	}
	s := agdSpec(t, 2)
	sum2, two := runRounds(t, s)
	if !slices.Equal(sum2.Params, wantSum.Params) || len(two) != len(want) {
		t.Fatal("dp-agd on 2 workers differs from 1")
	}
	if l := s.Algorithm.(*AGD).AGD.Ledger; l.Spent() > l.Total() {
		t.Fatalf("ledger spent %v of %v", l.Spent(), l.Total())
	}
	gotSum, got := runRounds(t, splitSpec(t, agdSpec(t, 1), false))
	if !sameRounds(t, got, want, gotSum, wantSum) {
		t.Fatal("dp-agd on the split executor differs from the pool's")
	}
	if _, err := Run(context.Background(), func() Spec { s := agdSpec(t, 1); s.Resume = &State{Params: wantSum.Params}; return s }(), nil); err == nil {
		t.Fatal("dp-agd resumed from a checkpoint")
	}
}

// TestCheckpointsCallback: Checkpoints saves after every Every-th round but
// the last, and on cancellation the rounds not yet saved, with the loop's
// state; a run resumed from a saved state ends bit-identical to the
// uninterrupted one.
func TestCheckpointsCallback(t *testing.T) {
	wantSum, _ := runRounds(t, spec(1))
	var saved []State
	save := func(st State) error {
		st.Params, st.Momentum = slices.Clone(st.Params), slices.Clone(st.Momentum)
		saved = append(saved, st)
		return nil
	}
	s := spec(1)
	s.Callbacks = []Callback{&Checkpoints{Every: 2, Save: save}}
	if runRounds(t, s); len(saved) != 2 || saved[0].Round != 2 || saved[1].Round != 4 {
		t.Fatalf("saved after rounds %v, want 2 and 4", saved)
	}
	saved = nil
	ctx, cancel := context.WithCancel(context.Background())
	s = spec(1)
	s.Callbacks = []Callback{&Checkpoints{Every: 2, Save: save}}
	_, err := Run(ctx, s, func(r Round) {
		if r.Round == 3 {
			cancel()
		}
	})
	if err == nil || len(saved) != 2 || saved[1].Round != 3 {
		t.Fatalf("cancelled after round 3: err %v, saved %v", err, saved)
	}
	s = spec(1)
	s.Resume = &saved[1]
	got, _ := runRounds(t, s)
	if !slices.Equal(got.Params, wantSum.Params) {
		t.Fatal("a run resumed after round 3 differs from the uninterrupted one")
	}
}
