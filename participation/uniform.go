package participation

// Uniform participation: each round a cohort is drawn uniformly from the
// available clients. Guarantee: none; a client may take part in any number
// of rounds, so sensitivity is computed for the realized schedule.
type uniform struct{}

func init() { register(Uniform, 0, uniform{}) }

func (uniform) Check(Schema, int, int, int) error     { return nil }
func (uniform) Pattern(Schema) Pattern                { return Pattern{} }
func (uniform) Audit(s Schema, sched *Schedule) error { return nil }
