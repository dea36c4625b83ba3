// Package participation decides which clients take part in each round and
// checks that the realized participation obeys the declared schema.
//
// A Scheduler plans the whole run up front: client selection depends only on
// the run seed (and, later, availability), never on data, so the realized
// Schedule is known before training and the privacy accounting is computed for
// the participation that actually happens. Audit checks a Schedule against its
// schema before any epsilon is reported.
//
// Package participation imports only the standard library and dpfl's leaf
// package sim/rng.
package participation

import (
	"fmt"
	"slices"

	"dpfl/sim/rng"
)

// Schedule is a realized participation pattern: Rounds[t] lists the clients
// of round t in increasing ID order.
type Schedule struct {
	NumClients int
	Rounds     [][]int
}

// Stats summarizes a schedule.
type Stats struct {
	Rounds            int
	MaxParticipations int   // largest number of rounds any one client took part in
	Histogram         []int // Histogram[k] = number of clients with exactly k participations
	MinSeparation     int   // smallest gap between two participations of one client (0 if none repeats)
	MeanCohort        float64
	MinCohort         int
}

// Stats computes the schedule's participation statistics.
func (s *Schedule) Stats() Stats {
	count := make([]int, s.NumClients)
	last := make([]int, s.NumClients)
	st := Stats{Rounds: len(s.Rounds), MinCohort: -1}
	total := 0
	for t, ids := range s.Rounds {
		total += len(ids)
		if st.MinCohort < 0 || len(ids) < st.MinCohort {
			st.MinCohort = len(ids)
		}
		for _, c := range ids {
			if count[c] > 0 {
				if gap := t - last[c]; st.MinSeparation == 0 || gap < st.MinSeparation {
					st.MinSeparation = gap
				}
			}
			count[c]++
			last[c] = t
		}
	}
	for _, k := range count {
		st.MaxParticipations = max(st.MaxParticipations, k)
	}
	st.Histogram = make([]int, st.MaxParticipations+1)
	for _, k := range count {
		st.Histogram[k]++
	}
	if len(s.Rounds) > 0 {
		st.MeanCohort = float64(total) / float64(len(s.Rounds))
	} else {
		st.MinCohort = 0
	}
	return st
}

// ParticipationsThrough returns, for each round t, the largest number of
// participations of any single client in rounds 0..t.
func (s *Schedule) ParticipationsThrough() []int {
	count := make([]int, s.NumClients)
	out := make([]int, len(s.Rounds))
	m := 0
	for t, ids := range s.Rounds {
		for _, c := range ids {
			count[c]++
			m = max(m, count[c])
		}
		out[t] = m
	}
	return out
}

// Scheduler plans which clients take part in each round.
type Scheduler interface {
	// Plan returns the schedule for the given population and number of
	// rounds, drawing randomness from root.
	Plan(numClients, rounds int, root rng.Root) (*Schedule, error)
	// Audit checks a realized schedule against the scheduler's schema.
	Audit(s *Schedule) error
}

// Uniform draws a cohort of a fixed size uniformly at random, without
// replacement, independently in every round. It bounds nothing else: a client
// may take part in any number of rounds.
type Uniform struct {
	Cohort int
}

var _ Scheduler = Uniform{}

// Plan draws round t's cohort from the stream ("sched", t).
func (u Uniform) Plan(numClients, rounds int, root rng.Root) (*Schedule, error) {
	if u.Cohort <= 0 || u.Cohort > numClients {
		return nil, fmt.Errorf("participation: cohort of %d cannot be drawn from %d clients", u.Cohort, numClients)
	}
	if rounds <= 0 {
		return nil, fmt.Errorf("participation: %d rounds", rounds)
	}
	s := &Schedule{NumClients: numClients, Rounds: make([][]int, rounds)}
	for t := range s.Rounds {
		r := root.Stream("sched", uint64(t))
		// Partial Fisher–Yates over a lazily materialized permutation.
		swapped := map[int]int{}
		at := func(i int) int {
			if v, ok := swapped[i]; ok {
				return v
			}
			return i
		}
		ids := make([]int, u.Cohort)
		for i := range ids {
			j := i + r.IntN(numClients-i)
			ids[i] = at(j)
			swapped[j] = at(i)
		}
		slices.Sort(ids)
		s.Rounds[t] = ids
	}
	return s, nil
}

// Audit checks that every round has at most Cohort distinct, valid clients.
func (u Uniform) Audit(s *Schedule) error {
	return auditBasic(s, u.Cohort)
}

// auditBasic checks IDs, ordering and the cohort bound.
func auditBasic(s *Schedule, cohort int) error {
	for t, ids := range s.Rounds {
		if len(ids) > cohort {
			return fmt.Errorf("participation: round %d has %d clients, more than the cohort of %d", t, len(ids), cohort)
		}
		for i, c := range ids {
			if c < 0 || c >= s.NumClients {
				return fmt.Errorf("participation: round %d has client %d outside the population of %d", t, c, s.NumClients)
			}
			if i > 0 && ids[i-1] >= c {
				return fmt.Errorf("participation: round %d lists clients out of order or twice (%d then %d)", t, ids[i-1], c)
			}
		}
	}
	return nil
}
