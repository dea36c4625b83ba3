package participation

import "fmt"

// (k,b)-participation (Choquette-Choo et al. 2023). The clients are split
// into B groups; round t admits only group t mod B. Guarantee: a client's
// participations lie in {i, i+B, i+2B, …} for its group i and number at most
// K. Adjacency: zero-out (the groups and the schedule do not depend on the
// data).
type kb struct{}

func init() { register(KB, 2, kb{}) }

func (kb) Check(s Schema, numClients, rounds, cohort int) error {
	if err := checkKB(s); err != nil {
		return err
	}
	if epochs := ceilDiv(rounds, s.B); epochs > s.K {
		return fmt.Errorf("participation: kb: %d rounds with b = %d need %d participations per client, more than k = %d", rounds, s.B, epochs, s.K)
	}
	return nil
}

func (kb) Pattern(s Schema) Pattern { return Pattern{MaxParticipations: s.K, Groups: s.B} }

func (sc kb) Audit(s Schema, sched *Schedule) error {
	return auditPattern("(k,b)", sc.Pattern(s), sched)
}
