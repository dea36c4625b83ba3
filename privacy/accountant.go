package privacy

import (
	"context"
	"fmt"
	"math"
)

// Accountant accumulates privacy events and converts what it holds into
// (epsilon, delta) guarantees.
type Accountant interface {
	// Compose adds count repetitions of e. It returns an error, leaving the
	// accountant unchanged, when e is malformed or the accountant cannot
	// account it (for example a sampled event given to the exact accountant).
	Compose(e Event, count int) error
	// Epsilon returns the smallest epsilon the accountant can certify at
	// delta, with the method (and order) used.
	Epsilon(delta float64) (Guarantee, error)
	// Delta returns the smallest delta the accountant can certify at epsilon.
	Delta(epsilon float64) (float64, error)
	// Supports returns nil when the accountant can account e (Compose of e
	// would succeed on an empty accountant), or an error that says why not:
	// e is malformed, or the accountant cannot account it (the exact and
	// zCDP accountants have no amplification by sampling). Callers ask it
	// rather than test an accountant's name.
	Supports(e Event) error
}

// ZCDPBudgeter is implemented by the accountants that can spend a zCDP
// budget (the zCDP accountants): BudgetFor returns the largest rho whose
// conversion by the accountant gives at most epsilon at delta.
type ZCDPBudgeter interface {
	BudgetFor(epsilon, delta float64) (float64, error)
}

// checkCompose validates the arguments common to every Compose.
func checkCompose(e Event, count int) error {
	if count < 0 {
		return fmt.Errorf("privacy: negative count %d", count)
	}
	return Validate(e)
}

// checkDelta validates a delta argument of Epsilon.
func checkDelta(delta float64) error {
	if !(delta >= 0 && delta <= 1) {
		return fmt.Errorf("privacy: delta must be in [0, 1], got %g", delta)
	}
	return nil
}

// checkEpsilon validates an epsilon argument of Delta.
func checkEpsilon(eps float64) error {
	if !(eps >= 0) || math.IsInf(eps, 1) {
		return fmt.Errorf("privacy: epsilon must be finite and non-negative, got %g", eps)
	}
	return nil
}

// errUnsupported is the error of an accountant that cannot account e.
func errUnsupported(acct string, e Event, hint string) error {
	return fmt.Errorf("privacy: %s accountant cannot account %v (%s)", acct, e, hint)
}

// contextual is implemented by accountants whose Epsilon can take long
// enough (PLD: discretizing and composing) to check a context during it.
type contextual interface {
	epsilonContext(ctx context.Context, delta float64) (Guarantee, error)
}

// EpsilonContext returns a.Epsilon(delta), ending early with ctx's error
// (wrapped) when ctx is done during an accountant's long evaluation.
func EpsilonContext(ctx context.Context, a Accountant, delta float64) (Guarantee, error) {
	if err := ctx.Err(); err != nil {
		return Guarantee{}, fmt.Errorf("privacy: %w", err)
	}
	return epsilonContext(ctx, a, delta)
}

func epsilonContext(ctx context.Context, a Accountant, delta float64) (Guarantee, error) {
	if ca, ok := a.(contextual); ok {
		return ca.epsilonContext(ctx, delta)
	}
	return a.Epsilon(delta)
}
