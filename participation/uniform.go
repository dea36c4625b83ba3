package participation

// Uniform participation: each round a cohort is drawn uniformly from the
// available clients. Guarantee: none; a client may take part in any number
// of rounds, so sensitivity is computed for the realized schedule.
// Adjacency: zero-out (the schedule does not depend on the data; the
// guarantee compares a client's updates with none, sensitivity clip per
// participation, composed over its realized participations). With every
// client always available each round is a fixed-size sample drawn without
// replacement, which privacy.amplification: sampling-without-replacement
// accounts instead under replace-one adjacency (sensitivity 2·clip per
// round, amplified by the sampling ratio cohort/clients).
type uniform struct{}

func init() { register(Uniform, 0, uniform{}) }

func (uniform) Check(Schema, int, int, int) error     { return nil }
func (uniform) Pattern(Schema) Pattern                { return Pattern{} }
func (uniform) Audit(s Schema, sched *Schedule) error { return nil }
