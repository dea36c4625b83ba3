package privacy

import (
	"fmt"
	"slices"
	"strings"

	"dpfl/sim/registry"
)

// AccountantKind is a kind of accountant known by name: the value of a run
// configuration's privacy.accountant and of dpfl account -accountant. Each
// accountant registers its kinds from its own file (RegisterAccountant in an
// init function).
type AccountantKind struct {
	// Name is the name it is listed and chosen by.
	Name string
	// Aliases are other names it answers to, not listed (e.g. the method
	// name its guarantees carry).
	Aliases []string
	// RDP marks an accountant over RDP orders: it reads the Orders and Frac
	// of AccountantOptions (dpfl account's -orders and -rdp-series apply to
	// it); the others ignore them.
	RDP bool
	// New returns an empty accountant; o is valid (orders > 1, a known
	// fractional-order convention).
	New func(o AccountantOptions) Accountant
}

// AccountantOptions are the options of the accountants over RDP orders.
type AccountantOptions struct {
	Orders []float64     // nil: DefaultOrders
	Frac   FractionalRDP // the fractional-order convention
}

// accountantKinds holds the accountant kinds in the order they registered.
var (
	accountantKinds []AccountantKind
	accountantTable = registry.Table[AccountantKind]{List: &accountantKinds, Name: func(k AccountantKind) string { return k.Name },
		Aliases: func(k AccountantKind) []string { return k.Aliases }}
)

// RegisterAccountant adds the kind k under its name and aliases. It panics
// on an empty name, a nil New or a name already taken (programmer errors).
func RegisterAccountant(k AccountantKind) {
	if k.Name == "" || k.New == nil {
		panic(fmt.Sprintf("privacy: accountant kind %q needs a name and New", k.Name))
	}
	names := append([]string{k.Name}, k.Aliases...)
	for i, n := range names {
		if accountantTable.Index(n) >= 0 || n == "" || slices.Contains(names[:i], n) {
			panic(fmt.Sprintf("privacy: accountant name %q registered twice (or empty)", n))
		}
	}
	accountantTable.Register(k)
}

// LookupAccountant returns the kind called name (a name or an alias).
func LookupAccountant(name string) (AccountantKind, bool) { return accountantTable.Lookup(name) }

// AccountantNames lists the names NewByName accepts (aliases left out), in
// the order they registered.
func AccountantNames() []string { return accountantTable.Names(nil) }

// NewByName returns a constructor for the accountant called name (see
// AccountantNames): "exact" (NewExact), "rdp" or "rdp-cks" (NewRDP with CKS),
// "rdp-mironov", "zcdp" (Lemma 3.8 conversion), "zcdp-cks", "pld" (NewPLD
// with the default configuration), or a kind registered by
// RegisterAccountant. orders applies to the RDP accountants (nil:
// DefaultOrders). Configuration and command-line code use it to turn a name
// into an accountant.
func NewByName(name string, orders []float64) (func() Accountant, error) {
	return NewByNameSeries(name, orders, FracSeries)
}

// RDPSeriesNames maps the names of the fractional-order RDP conventions
// (dpfl account -rdp-series) to their values: "signed" (FracSeries, the
// exact Renyi divergence, as TF-Privacy and Opacus) and "abs"
// (FracAbsSeries, the looser bound of current dp_accounting).
var RDPSeriesNames = map[string]FractionalRDP{"signed": FracSeries, "abs": FracAbsSeries}

// NewByNameSeries is NewByName with the fractional-order convention of the
// RDP accountants chosen by frac (ignored by the others).
func NewByNameSeries(name string, orders []float64, frac FractionalRDP) (func() Accountant, error) {
	if frac != FracSeries && frac != FracAbsSeries {
		return nil, fmt.Errorf("privacy: unknown fractional RDP convention %d", int(frac))
	}
	for _, o := range orders {
		if !(o > 1) {
			return nil, fmt.Errorf("privacy: RDP order must be > 1, got %g", o)
		}
	}
	k, ok := LookupAccountant(name)
	if !ok {
		return nil, fmt.Errorf("privacy: unknown accountant %q (want one of %s)", name, strings.Join(AccountantNames(), ", "))
	}
	o := AccountantOptions{Orders: slices.Clone(orders), Frac: frac}
	return func() Accountant { return k.New(o) }, nil
}

// DefaultAccountant names the accountant a run or a calculation uses when
// none is named: zcdp-cks when the budget is spent in zCDP (DP-AGD's
// ledger; the tight conversion to (ε, δ)), else rdp for an event amplified
// by sampling, else exact (the Gaussian mechanism's ε without slack).
func DefaultAccountant(amplified, zcdpBudget bool) string {
	switch {
	case zcdpBudget:
		return "zcdp-cks"
	case amplified:
		return "rdp"
	}
	return "exact"
}
