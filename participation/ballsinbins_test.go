package participation

import (
	"slices"
	"strings"
	"testing"

	"dpfl/sim/rng"
)

// TestBallsInBinsPlan: each client trains in exactly the rounds of its bin;
// the bins are independent uniform draws (their sizes pass a chi-square
// test at the 0.1% level, and are not the equal split a permutation gives);
// the plan is a function of the seed; the audit passes.
func TestBallsInBinsPlan(t *testing.T) {
	const n, b, rounds = 4000, 8, 20
	p := Planner{Schema: Schema{Kind: BallsInBins, B: b}}
	s, err := p.Plan(n, rounds, rng.New(7))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Audit(s); err != nil {
		t.Fatal(err)
	}
	size := make([]int, b)
	for c := range n {
		size[s.Groups[c]]++
		for r, ids := range s.Rounds {
			_, in := slices.BinarySearch(ids, c)
			if in != (r%b == s.Groups[c]) {
				t.Fatalf("client %d of bin %d: in round %d = %v", c, s.Groups[c], r, in)
			}
		}
	}
	var chi2 float64
	for _, k := range size {
		d := float64(k) - n/b
		chi2 += d * d / (n / b)
	}
	if chi2 > 24.3 { // chi-square, 7 degrees of freedom, 0.1% tail
		t.Errorf("bin sizes %v: chi-square %.1f, not uniform", size, chi2)
	}
	if slices.Max(size) == slices.Min(size) {
		t.Errorf("bin sizes %v are an equal split, not independent draws", size)
	}
	again, _ := p.Plan(n, rounds, rng.New(7))
	if !slices.Equal(s.Groups, again.Groups) {
		t.Fatal("same seed, different bins")
	}
}

// TestBallsInBinsAuditNegative: schedules that are not balls-in-bins fail
// the audit (a kb cohort that trains part of its group, a client dropped
// from its turn, a client outside its bin's turn), and bad schemas are
// refused.
func TestBallsInBinsAuditNegative(t *testing.T) {
	const n, b, rounds = 60, 3, 9
	bib := Planner{Schema: Schema{Kind: BallsInBins, B: b}}
	kbp := Planner{Schema: Schema{Kind: KB, K: 3, B: b}, Cohort: 10}
	kbs, err := kbp.Plan(n, rounds, rng.New(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := bib.Audit(kbs); err == nil || !strings.Contains(err.Error(), "balls-in-bins violated") {
		t.Errorf("a kb schedule passed the balls-in-bins audit (%v)", err)
	}
	s, err := bib.Plan(n, rounds, rng.New(1))
	if err != nil {
		t.Fatal(err)
	}
	dropped := *s
	dropped.Rounds = slices.Clone(s.Rounds)
	dropped.Rounds[4] = dropped.Rounds[4][1:]
	if err := bib.Audit(&dropped); err == nil {
		t.Error("a client dropped from its turn passed")
	}
	moved := *s
	moved.Groups = slices.Clone(s.Groups)
	c := s.Rounds[0][0]
	moved.Groups[c] = (moved.Groups[c] + 1) % b
	if err := bib.Audit(&moved); err == nil {
		t.Error("a client outside its bin's turn passed")
	}
	for _, sc := range []Schema{{Kind: BallsInBins}, {Kind: BallsInBins, B: 2, Q: 0.5}, {Kind: BallsInBins, B: 100}} {
		if err := (Planner{Schema: sc}).Validate(n, rounds); err == nil {
			t.Errorf("%+v accepted", sc)
		}
	}
	if err := (Planner{Schema: Schema{Kind: BallsInBins, B: 2}, Avail: never{}}).Validate(n, rounds); err == nil {
		t.Error("balls-in-bins with partial availability accepted")
	}
	if got := (Schema{Kind: BallsInBins, B: 4}).MaxParticipations(10); got != 3 {
		t.Errorf("max participations %d, want ⌈10/4⌉ = 3", got)
	}
}
