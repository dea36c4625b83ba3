package participation

import "fmt"

// kb-poisson is the sampling scheme of amplified BandMF (Choquette-Choo et
// al. 2023 §5, Alg. 2). The clients are split into B groups; in round t each
// client of group t mod B takes part independently with probability Q (valid
// only when every client is always available). Guarantee: a client's
// participations lie in {i, i+B, i+2B, …} for its group i; privacy is
// amplified by the sampling within each turn.
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
