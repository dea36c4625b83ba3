package participation

import (
	"math"
	"slices"
	"testing"

	"dpfl/sim/rng"
)

// TestUniformPlan: every round has exactly Cohort distinct sorted clients; the
// plan is a function of the seed; each client's inclusion rate is close to
// Cohort/N (binomial, 5 standard errors), a rate off by 20% is rejected.
func TestUniformPlan(t *testing.T) {
	const n, cohort, rounds = 200, 20, 20000
	u := Planner{Schema: Schema{Kind: Uniform}, Cohort: cohort}
	s, err := u.Plan(n, rounds, rng.New(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Audit(s); err != nil {
		t.Fatal(err)
	}
	count := make([]int, n)
	for _, ids := range s.Rounds {
		if len(ids) != cohort || !slices.IsSorted(ids) {
			t.Fatalf("round %v", ids)
		}
		for _, c := range ids {
			count[c]++
		}
	}
	p := float64(cohort) / n
	se := math.Sqrt(rounds * p * (1 - p))
	within := func(rate float64) bool {
		for _, c := range count {
			if math.Abs(float64(c)-rounds*rate) > 5*se {
				return false
			}
		}
		return true
	}
	if !within(p) {
		t.Fatalf("inclusion counts %v not within 5 SE of %g", count, rounds*p)
	}
	if within(1.2 * p) {
		t.Fatal("negative control: a 20% wrong rate passed")
	}
	again, _ := u.Plan(n, rounds, rng.New(1))
	other, _ := u.Plan(n, rounds, rng.New(2))
	if !slices.EqualFunc(s.Rounds, again.Rounds, slices.Equal[[]int]) {
		t.Fatal("same seed, different plan")
	}
	if slices.EqualFunc(s.Rounds, other.Rounds, slices.Equal[[]int]) {
		t.Fatal("different seeds, same plan")
	}
	if _, err := (Planner{Schema: Schema{Kind: Uniform}, Cohort: 201}).Plan(n, 1, rng.New(1)); err == nil {
		t.Fatal("cohort larger than the population accepted")
	}
}

func TestStats(t *testing.T) {
	s := &Schedule{NumClients: 4, Rounds: [][]int{{0, 1}, {1}, {0, 2}, {1, 2}}}
	st := s.Stats()
	// participations: 0 -> 2 (rounds 0, 2), 1 -> 3 (0, 1, 3), 2 -> 2 (2, 3), 3 -> 0
	if st.MaxParticipations != 3 || !slices.Equal(st.Histogram, []int{1, 0, 2, 1}) || st.MinSeparation != 1 || st.MinCohort != 1 || st.MeanCohort != 1.75 {
		t.Fatalf("stats %+v", st)
	}
	if got := s.ParticipationsThrough(); !slices.Equal(got, []int{1, 2, 2, 3}) {
		t.Fatalf("through %v", got)
	}
}

func TestAuditCatchesViolations(t *testing.T) {
	u := Planner{Schema: Schema{Kind: Uniform}, Cohort: 2}
	bad := []*Schedule{
		{NumClients: 3, Rounds: [][]int{{0, 1, 2}}},
		{NumClients: 3, Rounds: [][]int{{1, 1}}},
		{NumClients: 3, Rounds: [][]int{{2, 1}}},
		{NumClients: 3, Rounds: [][]int{{3}}},
	}
	for _, s := range bad {
		if u.Audit(s) == nil {
			t.Errorf("audit passed %v", s.Rounds)
		}
	}
}
