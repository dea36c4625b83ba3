package privacy

import (
	"fmt"
	"math"
	"slices"
)

// Ledger is a zCDP privacy budget spent round by round, as the adaptive
// per-iteration budget of Lee and Kifer's DP-AGD needs: a total rho, a list of
// expenses, and refusal of any expense that would exceed the total. Expenses
// add up by zCDP composition (Lee and Kifer 2018 Lemma 3.5). A Ledger is not safe for
// concurrent use.
type Ledger struct {
	total   float64
	spent   float64
	entries []Expense
}

// Expense is one recorded spending of a Ledger.
type Expense struct {
	Round int     // round (iteration) index the caller attached
	Label string  // what was released, e.g. "gradient" or "noisy-max"
	Rho   float64 // zCDP cost
}

// ledgerSlack is the relative slack allowed when an expense meets the remaining
// budget exactly up to floating-point rounding of the running sum.
const ledgerSlack = 1e-12

// NewLedger returns a ledger with total budget rho > 0 (finite).
func NewLedger(rho float64) (*Ledger, error) {
	if !(rho > 0) || math.IsInf(rho, 1) {
		return nil, fmt.Errorf("privacy: ledger budget must be positive and finite, got rho = %g", rho)
	}
	return &Ledger{total: rho}, nil
}

// NewLedgerForTarget returns a ledger whose total rho is the largest one the
// standard conversion maps into (epsilon, delta)-DP:
// rho = (sqrt(epsilon + log(1/delta)) - sqrt(log(1/delta)))^2 (ZCDPBudget).
func NewLedgerForTarget(epsilon, delta float64) (*Ledger, error) {
	rho, err := ZCDPBudget(epsilon, delta)
	if err != nil {
		return nil, err
	}
	if rho == 0 {
		return nil, fmt.Errorf("privacy: target ε = %g at δ = %g leaves no zCDP budget", epsilon, delta)
	}
	return NewLedger(rho)
}

// Total returns the ledger's total budget.
func (l *Ledger) Total() float64 { return l.total }

// Spent returns the sum of the expenses so far.
func (l *Ledger) Spent() float64 { return l.spent }

// Remaining returns the budget left (never negative).
func (l *Ledger) Remaining() float64 { return math.Max(0, l.total-l.spent) }

// CanSpend reports whether an expense of rho fits in the remaining budget.
func (l *Ledger) CanSpend(rho float64) bool {
	return rho >= 0 && l.spent+rho <= l.total*(1+ledgerSlack)
}

// Spend records an expense of rho >= 0 in round, or returns an error and
// records nothing if it would exceed the budget.
func (l *Ledger) Spend(round int, label string, rho float64) error {
	if !(rho >= 0) || math.IsInf(rho, 1) {
		return fmt.Errorf("privacy: ledger expense must be finite and non-negative, got rho = %g (%s, round %d)", rho, label, round)
	}
	if !l.CanSpend(rho) {
		return fmt.Errorf("privacy: ledger overspent: %s in round %d costs rho = %.6g but only %.6g of %.6g remains", label, round, rho, l.Remaining(), l.total)
	}
	l.spent += rho
	l.entries = append(l.entries, Expense{Round: round, Label: label, Rho: rho})
	return nil
}

// SpendGaussian records a Gaussian release with noise multiplier sigma
// (rho = 1/(2 sigma^2), Lee and Kifer 2018 Lemma 3.6).
func (l *Ledger) SpendGaussian(round int, label string, sigma float64) error {
	if !(sigma > 0) {
		return fmt.Errorf("privacy: Gaussian noise multiplier must be positive, got %g", sigma)
	}
	return l.Spend(round, label, GaussianRho(sigma))
}

// SpendPureDP records an epsilon-DP release (rho = epsilon^2/2, Lee and Kifer 2018 Lemma 3.7).
func (l *Ledger) SpendPureDP(round int, label string, epsilon float64) error {
	if err := checkEpsilon(epsilon); err != nil {
		return err
	}
	return l.Spend(round, label, PureDPRho(epsilon))
}

// Expenses returns a copy of the expenses in the order they were recorded.
func (l *Ledger) Expenses() []Expense { return slices.Clone(l.entries) }

// SpentInRound returns the total spent in round.
func (l *Ledger) SpentInRound(round int) float64 {
	s := 0.0
	for _, e := range l.entries {
		if e.Round == round {
			s += e.Rho
		}
	}
	return s
}

// Guarantee converts what has been spent so far into (epsilon, delta)-DP with
// conv.
func (l *Ledger) Guarantee(delta float64, conv ZCDPConversion) (Guarantee, error) {
	if err := checkDelta(delta); err != nil {
		return Guarantee{}, err
	}
	return zcdpEpsilon(l.spent, delta, conv)
}
