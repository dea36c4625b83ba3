package participation

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"dpfl/sim/rng"
)

// randomAvail makes each client available in random intervals (a trace), so
// availability removes many participations.
func randomAvail(n int, r *rand.Rand, horizon float64) *Trace {
	var b strings.Builder
	for c := 0; c < n; c++ {
		for k := 0; k < 1+r.IntN(4); k++ {
			s := r.Float64() * horizon
			fmt.Fprintf(&b, "%d,%g,%g\n", c, s, s+r.Float64()*horizon/3)
		}
	}
	t, err := ReadTrace(strings.NewReader(b.String()))
	if err != nil {
		panic(err)
	}
	return t
}

// TestSchedulersNeverViolateSchema: over many seeds and random availability,
// every scheduler's plan passes an independent schema check (counts,
// separations, groups), never exceeds the cohort, and only selects available
// clients; Audit agrees.
func TestSchedulersNeverViolateSchema(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for trial := 0; trial < 60; trial++ {
		n := 40 + r.IntN(200)
		rounds := 5 + r.IntN(60)
		cohort := 1 + r.IntN(8)
		b := 1 + r.IntN(6)
		k := 1 + r.IntN(5)
		var sch Schema
		switch trial % 4 {
		case 0:
			sch = Schema{Kind: Single}
			n = max(n, rounds*cohort)
		case 1:
			sch = Schema{Kind: KB, K: (rounds + b - 1) / b, B: b}
			n = max(n, b*cohort)
		case 2:
			sch = Schema{Kind: MinSep, K: k, B: b}
			n = max(n, b*cohort, (rounds*cohort+k-1)/k)
		case 3:
			sch = Schema{Kind: Uniform}
		}
		p := Planner{Schema: sch, Cohort: cohort, Avail: randomAvail(n, r, float64(rounds)*600),
			Clock: Clock{RoundSeconds: 600, WaitSeconds: 60}, MaxWaits: r.IntN(3)}
		s, err := p.Plan(n, rounds, rng.New(uint64(trial)))
		if err != nil {
			t.Fatalf("trial %d (%+v, n %d, rounds %d, cohort %d): %v", trial, sch, n, rounds, cohort, err)
		}
		if err := p.Audit(s); err != nil {
			t.Fatalf("trial %d: audit: %v", trial, err)
		}
		count := make([]int, n)
		last := make([]int, n)
		for t0, ids := range s.Rounds {
			if len(ids) > cohort {
				t.Fatalf("trial %d round %d: %d > cohort %d", trial, t0, len(ids), cohort)
			}
			for _, c := range ids {
				if !p.Avail.Available(c, s.Times[t0]) {
					t.Fatalf("trial %d: client %d selected while unavailable", trial, c)
				}
				switch sch.Kind {
				case Single:
					if count[c] > 0 {
						t.Fatalf("trial %d: client %d twice under single participation", trial, c)
					}
				case KB:
					if s.Groups[c] != t0%b || count[c] >= sch.K {
						t.Fatalf("trial %d: (k,b) violated by client %d in round %d", trial, c, t0)
					}
				case MinSep:
					if count[c] >= k || (count[c] > 0 && t0-last[c] < b) {
						t.Fatalf("trial %d: min-sep violated by client %d in round %d (last %d)", trial, c, t0, last[c])
					}
				}
				count[c]++
				last[c] = t0
			}
		}
		// Availability only removes: each round's clients are all the eligible
		// ones or a full cohort.
		for t0, ids := range s.Rounds {
			if len(ids) != min(cohort, s.Eligible[t0]) {
				t.Fatalf("trial %d round %d: %d selected of %d eligible, cohort %d", trial, t0, len(ids), s.Eligible[t0], cohort)
			}
		}
	}
}

// TestAuditRejectsViolations: hand-made schedules that break each schema are
// rejected (the negative control of the property test above).
func TestAuditRejectsViolations(t *testing.T) {
	cases := []struct {
		p Planner
		s *Schedule
	}{
		{Planner{Schema: Schema{Kind: Single}, Cohort: 2}, &Schedule{NumClients: 3, Rounds: [][]int{{0}, {0}}}},
		{Planner{Schema: Schema{Kind: MinSep, K: 3, B: 2}, Cohort: 2}, &Schedule{NumClients: 3, Rounds: [][]int{{0}, {0}}}},
		{Planner{Schema: Schema{Kind: MinSep, K: 1, B: 1}, Cohort: 2}, &Schedule{NumClients: 3, Rounds: [][]int{{0}, {0}}}},
		{Planner{Schema: Schema{Kind: KB, K: 2, B: 2}, Cohort: 2}, &Schedule{NumClients: 2, Rounds: [][]int{{0}, {0}}, Groups: []int{0, 1}}},
		{Planner{Schema: Schema{Kind: Uniform}, Cohort: 1, Avail: &Trace{intervals: map[int][][2]float64{}}}, &Schedule{NumClients: 2, Rounds: [][]int{{1}}, Times: []float64{0}}},
	}
	for i, c := range cases {
		if err := c.p.Audit(c.s); err == nil {
			t.Errorf("case %d: audit passed %v", i, c.s.Rounds)
		}
	}
}

func TestImpossibleSchedules(t *testing.T) {
	cases := []struct {
		p        Planner
		n, round int
		want     string
	}{
		{Planner{Schema: Schema{Kind: Single}, Cohort: 10}, 50, 6, "single participation needs 6 rounds × 10 clients = 60 distinct clients"},
		{Planner{Schema: Schema{Kind: KB, K: 1, B: 5}, Cohort: 2}, 40, 6, "need 2 participations per client, more than k = 1"},
		{Planner{Schema: Schema{Kind: Poisson, Q: 0.1}, Avail: &Trace{}}, 50, 5, "always available"},
		{Planner{Schema: Schema{Kind: Poisson, Q: 0}}, 50, 5, "0 < q <= 1"},
	}
	for _, c := range cases {
		_, err := c.p.Plan(c.n, c.round, rng.New(1))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want it to say %q", c.p.Schema, err, c.want)
		}
	}
}

// TestPoissonRate: Poisson sampling includes each client with probability q
// (total count within 5 standard errors; a 10% wrong rate is rejected).
func TestPoissonRate(t *testing.T) {
	const n, rounds, q = 1000, 200, 0.05
	s, err := Planner{Schema: Schema{Kind: Poisson, Q: q}}.Plan(n, rounds, rng.New(3))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, ids := range s.Rounds {
		total += len(ids)
	}
	mean, se := float64(n*rounds)*q, math.Sqrt(float64(n*rounds)*q*(1-q))
	if math.Abs(float64(total)-mean) > 5*se {
		t.Fatalf("%d inclusions, expected %g ± %g", total, mean, se)
	}
	if math.Abs(float64(total)-1.1*mean) <= 5*se {
		t.Fatal("negative control: a 10% wrong rate would pass")
	}
}

// TestWaiting: with availability that opens late, a round waits clock steps
// until enough clients are eligible, and the wait shifts the clock.
func TestWaiting(t *testing.T) {
	tr, err := ReadTrace(strings.NewReader("0,300,10000\n1,500,10000\n2,0,10000\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := Planner{Schema: Schema{Kind: Uniform}, Cohort: 3, Avail: tr, Clock: Clock{RoundSeconds: 1000, WaitSeconds: 100}, MaxWaits: 10}
	s, err := p.Plan(3, 2, rng.New(1))
	if err != nil {
		t.Fatal(err)
	}
	if s.Waits[0] != 5 || s.Times[0] != 500 || len(s.Rounds[0]) != 3 || s.Times[1] != 1500 {
		t.Fatalf("waits %v times %v rounds %v", s.Waits, s.Times, s.Rounds)
	}
	p.MaxWaits = 2 // gives up: a short round, recorded
	s, _ = p.Plan(3, 1, rng.New(1))
	if s.Waits[0] != 2 || len(s.Rounds[0]) != 1 || s.Stats().ShortRounds != 1 {
		t.Fatalf("waits %v rounds %v", s.Waits, s.Rounds)
	}
}

// TestKBPoissonSampling: under kb-poisson every client is sampled only in
// its group's rounds, each time with probability q: the inclusion count over
// the group's rounds is within 5 standard errors of q·(chances), for all
// clients together and for each group; a 10% wrong rate is rejected
// (negative control). The plan passes the audit, a client moved into
// another group's round is rejected, and at most ⌈rounds/b⌉ participations
// are possible.
func TestKBPoissonSampling(t *testing.T) {
	const n, rounds, b, q = 2000, 703, 7, 0.06
	pl := Planner{Schema: Schema{Kind: KBPoisson, B: b, Q: q}}
	s, err := pl.Plan(n, rounds, rng.New(4))
	if err != nil {
		t.Fatal(err)
	}
	if err := pl.Audit(s); err != nil {
		t.Fatal(err)
	}
	size := make([]int, b)
	for _, g := range s.Groups {
		size[g]++
	}
	perGroup := make([]int, b)
	for tt, ids := range s.Rounds {
		for _, c := range ids {
			if s.Groups[c] != tt%b {
				t.Fatalf("client %d of group %d in round %d", c, s.Groups[c], tt)
			}
			perGroup[tt%b]++
		}
	}
	chances, total := 0, 0
	for g := 0; g < b; g++ {
		turns := (rounds - g + b - 1) / b
		ch := size[g] * turns
		mean, se := float64(ch)*q, math.Sqrt(float64(ch)*q*(1-q))
		if math.Abs(float64(perGroup[g])-mean) > 5*se {
			t.Fatalf("group %d: %d inclusions, expected %g ± %g", g, perGroup[g], mean, se)
		}
		chances += ch
		total += perGroup[g]
	}
	mean, se := float64(chances)*q, math.Sqrt(float64(chances)*q*(1-q))
	if math.Abs(float64(total)-mean) > 5*se {
		t.Fatalf("%d inclusions, expected %g ± %g", total, mean, se)
	}
	if math.Abs(float64(total)-1.1*mean) <= 5*se {
		t.Fatal("negative control: a 10% wrong rate would pass")
	}
	if st := s.Stats(); st.MaxParticipations > pl.Schema.MaxParticipations(rounds) || pl.Schema.MaxParticipations(rounds) != 101 {
		t.Fatalf("max participations %d, bound %d", st.MaxParticipations, pl.Schema.MaxParticipations(rounds))
	}
	bad := &Schedule{NumClients: 2, Rounds: [][]int{{1}}, Groups: []int{0, 1}}
	if err := (Planner{Schema: Schema{Kind: KBPoisson, B: 2, Q: 0.5}}).Audit(bad); err == nil {
		t.Fatal("audit passed a client sampled in another group's round")
	}
	if _, err := (Planner{Schema: Schema{Kind: KBPoisson, B: 2, Q: 0.5}, Avail: &Trace{}}).Plan(10, 5, rng.New(1)); err == nil || !strings.Contains(err.Error(), "always available") {
		t.Fatalf("kb-poisson with availability: %v", err)
	}
}
