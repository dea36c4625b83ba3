package participation

import "fmt"

// kb-poisson is the sampling scheme of amplified BandMF (Choquette-Choo et
// al. 2023 §5, Alg. 2). The clients are split into B groups; in round t each
// client of group t mod B takes part independently with probability Q (valid
// only when every client is always available). Guarantee: a client's
// participations lie in {i, i+B, i+2B, …} for its group i; privacy is
// amplified by the sampling within each turn. Adjacency: zero-out. The
// population is split into B equal groups by a permutation that does not
// depend on the data, which is valid when a neighbouring population has the
// same clients with one client's data replaced by a null client's (as
// jax_privacy notes for this scheme); adding or removing a client would
// change the split, which the analysis does not cover. dpfl's guarantee
// for it is therefore stated, and labelled, under zero-out adjacency.
type kbPoisson struct{}

func init() { register(KBPoisson, 5, kbPoisson{}) }

func (kbPoisson) Check(s Schema, _, _, _ int) error {
	if err := checkQ(s); err != nil {
		return err
	}
	if s.B <= 0 {
		return fmt.Errorf("participation: kb-poisson needs b > 0 (have %d)", s.B)
	}
	return nil
}

func (kbPoisson) Pattern(s Schema) Pattern { return Pattern{Groups: s.B, Sampling: s.Q} }

func (sc kbPoisson) Audit(s Schema, sched *Schedule) error {
	return auditPattern("kb-poisson", sc.Pattern(s), sched)
}
