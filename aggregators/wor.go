package aggregators

import (
	"fmt"

	"dpfl/aggregators/strategy"
	"dpfl/participation"
)

// WithoutReplacement is the fixed-size cohort that amplifies a mechanism:
// every round, Cohort of the Population clients drawn uniformly without
// replacement, independently of the other rounds.
type WithoutReplacement struct{ Population, Cohort int }

// WithoutReplacement returns a copy of the DP-FedAvg mechanism m accounted
// with amplification by sampling without replacement (Wang, Balle and
// Kasiviswanathan 2019; privacy.SampledWithoutReplacement), under
// replace-one adjacency: a client's clipped update replaced by another's
// moves a round's sum by up to 2·clip, so the mechanism's sensitivity is 2
// (in units of clip) and its noise multiplier sigma is the noise std over
// 2·clip, the convention of TF-Privacy's and dp_accounting's noise_multiplier
// for that event (noise std over the replace-one sensitivity).
//
// The amplification holds only if every round's cohort really was drawn
// uniformly from the whole population, so the realized schedule is checked:
// every round has exactly the schedule's cohort of distinct clients, every
// client was eligible in every round (no availability window, no cap) and
// no round waited. The caller must also have drawn the cohorts uniformly and
// independently across rounds (participation kind uniform with availability
// always). Refused: correlated noise (the amplified matrix mechanisms are
// another analysis), Poisson sampling, adaptive clipping (the noisy count
// would need its own replace-one analysis).
func (m *Mechanism) WithoutReplacement(sched *participation.Schedule) (*Mechanism, error) {
	switch {
	case !m.Independent():
		return nil, fmt.Errorf("aggregators: sampling without replacement is accounted for DP-FedAvg (independent noise every round) only, not %s", m.Strategy)
	case m.Sampling != nil:
		return nil, fmt.Errorf("aggregators: sampling without replacement cannot be combined with Poisson sampling")
	case m.ClipCount != nil:
		return nil, fmt.Errorf("aggregators: sampling without replacement with adaptive clipping is not supported: the clip count's release has no replace-one analysis here")
	}
	if err := checkFixedUniform(sched); err != nil {
		return nil, err
	}
	c := *m
	c.WOR = &WithoutReplacement{Population: sched.NumClients, Cohort: sched.Cohort}
	c.Pattern = participation.AtMostOnce
	c.Sensitivity = strategy.Sensitivity{Value: 2, Exact: true, Method: "replace-one: one client's clipped update replaced by another's"}
	c.participations = nil
	return &c, nil
}

// checkFixedUniform checks that a realized schedule is what sampling
// without replacement assumes: every round exactly Cohort distinct clients
// of the population, all of which were eligible, without waiting.
func checkFixedUniform(s *participation.Schedule) error {
	if s.Cohort < 1 || s.Cohort > s.NumClients {
		return fmt.Errorf("aggregators: sampling without replacement needs a cohort between 1 and the %d clients, have %d", s.NumClients, s.Cohort)
	}
	seen := make([]int, s.NumClients)
	for t, r := range s.Rounds {
		if len(r) != s.Cohort {
			return fmt.Errorf("aggregators: round %d drew %d clients, not the fixed cohort of %d: the draw was not a fixed-size sample", t+1, len(r), s.Cohort)
		}
		if s.Eligible != nil && s.Eligible[t] != s.NumClients {
			return fmt.Errorf("aggregators: round %d drew from %d eligible clients, not all %d: availability or a participation cap made the draw non-uniform", t+1, s.Eligible[t], s.NumClients)
		}
		if s.Waits != nil && s.Waits[t] != 0 {
			return fmt.Errorf("aggregators: round %d waited for eligible clients: the draw was not uniform over the population", t+1)
		}
		for _, c := range r {
			if c < 0 || c >= s.NumClients || seen[c] == t+1 {
				return fmt.Errorf("aggregators: round %d holds client %d twice or out of range: not a sample without replacement", t+1, c)
			}
			seen[c] = t + 1
		}
	}
	return nil
}
