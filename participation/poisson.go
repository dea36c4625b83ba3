package participation

// Poisson sampling. Every client takes part in each round independently with
// probability Q (valid only when every client is always available).
// Guarantee: none on the number of participations; privacy is amplified by
// the sampling. Adjacency: add/remove (a client's update is in a round's sum
// or not; the denominator is the fixed expected cohort), the relation of
// the Poisson-subsampled Gaussian analyses.
type poisson struct{}

func init() { register(Poisson, 4, poisson{}) }

func (poisson) Check(s Schema, _, _, _ int) error { return checkQ(s) }

func (poisson) Pattern(s Schema) Pattern { return Pattern{Sampling: s.Q} }

func (poisson) Audit(Schema, *Schedule) error { return nil }
