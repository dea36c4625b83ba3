package participation

import "fmt"

// Single participation. Guarantee: each client takes part in at most one
// round of the run. Adjacency: zero-out (sensitivity clip; the schedule does
// not depend on the data).
type single struct{}

func init() { register(Single, 1, single{}) }

func (single) Check(s Schema, numClients, rounds, cohort int) error {
	if rounds > numClients/cohort {
		return fmt.Errorf("participation: single participation needs %d rounds × %d clients = %.4g distinct clients; the population has %d", rounds, cohort, float64(rounds)*float64(cohort), numClients)
	}
	return nil
}

func (single) Pattern(Schema) Pattern { return Pattern{MaxParticipations: 1} }

func (sc single) Audit(s Schema, sched *Schedule) error {
	return auditPattern("single participation", sc.Pattern(s), sched)
}
