package participation

import "fmt"

// BallsInBins is balls-in-bins sampling (Choquette-Choo, Ganesh, Haque,
// Steinke and Thakurta 2024, "Near Exact Privacy Amplification for Matrix
// Mechanisms", arXiv:2410.06266, as jax_privacy's BallsInBinsSampling):
// every client is assigned, independently and uniformly at random, to one of
// B bins, and round t trains every client of bin t mod B (valid only when
// every client is always available). Schema.B is the number of bins; there is
// no cohort and no q. The bin is drawn once for the whole run, not again
// every epoch of b rounds: the amplified accounting is proved for that.
const BallsInBins Kind = "balls-in-bins"

// Balls-in-bins. Guarantee: a client's participations are exactly the rounds
// {i, i+B, i+2B, …} of its bin i, at most ⌈rounds/B⌉; the bin is uniform and
// independent of the other clients' and of the data. A banded matrix
// mechanism with at most B bands (BandMF, or DP-FedAvg: one band) is then
// amplified by the randomness of the bin; privacy.BallsInBinsEpsilon
// accounts it by Monte Carlo (the ε it reports is labelled with its
// confidence). A run uses that amplification only when its configuration
// asks for it (privacy.amplification: balls-in-bins, which calibrates the
// noise to the Monte Carlo ε); otherwise it composes a client's
// ⌈rounds/B⌉ turns unamplified, as for kb-poisson with q = 1. Adjacency: zero-out (a client's updates are replaced by zeros;
// every client keeps its bin).
type ballsInBins struct{}

func init() { register(BallsInBins, 6, ballsInBins{}) }

func (ballsInBins) Check(s Schema, numClients, rounds, _ int) error {
	switch {
	case s.B <= 0:
		return fmt.Errorf("participation: balls-in-bins needs b > 0 bins (have %d)", s.B)
	case numClients > 0 && s.B > numClients:
		return fmt.Errorf("participation: balls-in-bins with b = %d bins needs at least as many clients (have %d)", s.B, numClients)
	case s.Q != 0 || s.K != 0:
		return fmt.Errorf("participation: balls-in-bins has no q and no k (every client of a bin takes part in each of its turns)")
	}
	return nil
}

// Pattern: groups taking turns, every member of the group in its turn
// (sampling 1), the groups drawn independently for each client.
func (ballsInBins) Pattern(s Schema) Pattern {
	return Pattern{Groups: s.B, Sampling: 1, RandomGroups: true}
}

// Audit checks that every round trains exactly the clients of its bin.
func (sc ballsInBins) Audit(s Schema, sched *Schedule) error {
	if err := auditPattern("balls-in-bins", sc.Pattern(s), sched); err != nil {
		return err
	}
	size := make([]int, s.B)
	for _, g := range sched.Groups {
		size[g]++
	}
	for t, ids := range sched.Rounds {
		if g := t % s.B; len(ids) != size[g] {
			return fmt.Errorf("participation: balls-in-bins violated: round %d trains %d of the %d clients of bin %d", t, len(ids), size[g], g)
		}
	}
	return nil
}
