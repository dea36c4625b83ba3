// Package participation decides which clients take part in each round and
// checks that the realized participation obeys the declared schema.
//
// A Planner plans the whole run up front under a Schema (the one
// participation schema value of dpfl; aggregators/strategy computes
// sensitivity for its Pattern): client selection depends only on the run seed and
// availability, never on data, so the realized Schedule is known before
// training and the privacy accounting is computed for the participation that
// actually happens. Planner.Audit checks a Schedule against its schema before
// any epsilon is reported.
//
// Each schema kind is a Scheme, in a file of its own (uniform.go, single.go,
// kb.go, minsep.go, poisson.go, kbpoisson.go, ballsinbins.go) that states its guarantee and
// registers it by name with Register. A Scheme gives the Pattern of a
// client's participations (at most k, a minimum separation, groups taking
// turns, a sampling probability): the planner follows it, and the rest of
// dpfl computes sensitivity and accounting for it rather than for the
// kind's name.
//
// (k,b)-participation, b-min-sep participation and the kb-poisson sampling of
// amplified BandMF are those of Choquette-Choo, Ganesh, McKenna, McMahan, Rush, Thakurta and Xu (2023),
// "(Amplified) Banded Matrix Factorization: A unified approach to private
// training", NeurIPS 2023, arXiv:2306.08153 (Choquette-Choo et al. 2023).
//
// Package participation imports only the standard library and dpfl's leaf
// packages sim/rng and sim/registry.
package participation

// Schedule is a realized participation pattern: Rounds[t] lists the clients
// of round t in increasing ID order.
type Schedule struct {
	NumClients int
	Rounds     [][]int
	Cohort     int       // target clients per round (0: no target, e.g. Poisson)
	Times      []float64 // simulated time of each round, seconds since midnight UTC of day 0 (nil: no clock)
	Eligible   []int     // clients eligible (schema and availability) in each round
	Waits      []int     // clock steps each round waited for more eligible clients
	Groups     []int     // (k,b)-participation: each client's group (nil otherwise)
}

// Stats summarizes a schedule.
type Stats struct {
	Rounds            int
	MaxParticipations int   // largest number of rounds any one client took part in
	Histogram         []int // Histogram[k] = number of clients with exactly k participations
	MinSeparation     int   // smallest gap between two participations of one client (0 if none repeats)
	MeanCohort        float64
	MinCohort         int
	MeanFill          float64 // mean of cohort / target over rounds (1 when every round is full)
	ShortRounds       int     // rounds with fewer clients than the target
	TotalWaits        int     // clock steps spent waiting, summed over rounds
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
	if s.Cohort > 0 {
		for _, ids := range s.Rounds {
			st.MeanFill += float64(len(ids)) / float64(s.Cohort)
			if len(ids) < s.Cohort {
				st.ShortRounds++
			}
		}
		if len(s.Rounds) > 0 {
			st.MeanFill /= float64(len(s.Rounds))
		}
	}
	for _, w := range s.Waits {
		st.TotalWaits += w
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
