package participation

// B-min-sep participation (Choquette-Choo et al. 2023). Guarantee: a client
// takes part at most K times, and two of its participations are at least B
// rounds apart. Adjacency: zero-out (the schedule does not depend on the
// data).
type minSep struct{}

func init() { register(MinSep, 3, minSep{}) }

func (minSep) Check(s Schema, _, _, _ int) error { return checkKB(s) }

func (minSep) Pattern(s Schema) Pattern { return Pattern{MaxParticipations: s.K, MinSeparation: s.B} }

func (sc minSep) Audit(s Schema, sched *Schedule) error {
	return auditPattern("min-sep", sc.Pattern(s), sched)
}
