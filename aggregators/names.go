package aggregators

import (
	"slices"

	"dpfl/aggregators/strategy"
	"dpfl/sim/registry"
)

// Name is one mechanism's name: the one used by YAML (aggregator.kind),
// `dpfl mechanism -strategy` and the output tables. A name is a kind of
// Kinds, or a kind with its variant parameters set (tree-online is kind tree
// with estimator online); a few are evaluated only by dpfl mechanism (the
// "-f" variants of Choquette-Choo et al. 2023 App. B).
type Name struct {
	Name     string
	Kind     string   // its aggregator kind ("" for dpfl mechanism only)
	Strategy string   // the strategy.Build name
	Aliases  []string // older spellings, accepted everywhere it is
	// MechanismAliases are older spellings dpfl mechanism accepts that YAML
	// does not (there, kind tree is the tree kind).
	MechanismAliases []string
	Note             string // for help texts
	set              func(c *Config)
}

// Names lists the mechanisms by their one name, in the order dpfl mechanism
// compares them (strategy.Names): the variants below, then a name for each
// kind and each strategy they do not cover (a new kind with one strategy
// needs no entry). Old spellings stay accepted as aliases: identity
// (dpfedavg), optimal (optimal-mf), nu (nu-ftrl), and, in dpfl mechanism
// only, tree for tree-vanilla (in YAML, kind tree is the tree kind, whose
// estimator key defaults to online).
var Names []Name

// variants are the mechanisms whose names are not simply a kind's.
var variants = []Name{
	{Name: "dpfedavg", Kind: "dpfedavg", Strategy: "identity", Aliases: []string{"identity"}, Note: "C = I (DP-SGD)"},
	{Name: "tree-vanilla", Kind: "tree", Strategy: "tree", MechanismAliases: []string{"tree"}, Note: "tree, sum of dyadic nodes",
		set: func(c *Config) { c.setVariant(&c.Estimator, "vanilla", "estimator") }},
	{Name: "tree-online", Kind: "tree", Strategy: "tree-online", Note: "tree, Honaker online estimator",
		set: func(c *Config) { c.setVariant(&c.Estimator, "online", "estimator") }},
	{Name: "tree-full", Kind: "tree", Strategy: "tree-full", Note: "tree, full pseudo-inverse estimator",
		set: func(c *Config) { c.setVariant(&c.Estimator, "full", "estimator") }},
	{Name: "optimal-mf", Kind: "optimal-mf", Strategy: "optimal", Aliases: []string{"optimal"}, Note: "optimal dense MF, single participation"},
	{Name: "multi-epoch", Kind: "optimal-mf", Strategy: "multi-epoch", Note: "optimal-mf with multi_epoch: true",
		set: func(c *Config) {
			if !c.MultiEpoch {
				c.MultiEpoch = true
			}
		}},
	{Name: "multi-epoch-f", Strategy: "multi-epoch-f", Note: "multi-epoch without equal column norms (dpfl mechanism only)"},
	{Name: "bandmf", Kind: "bandmf", Strategy: "bandmf", Note: "banded MF"},
	{Name: "bandmf-f", Strategy: "bandmf-f", Note: "bandmf without equal column norms (dpfl mechanism only)"},
	{Name: "nu-ftrl", Kind: "nu-ftrl", Strategy: "nu", Aliases: []string{"nu"}, Note: "ν-DP-FTRL"},
	{Name: "toeplitz", Strategy: "toeplitz", Note: "banded Toeplitz C, coefficients optimized (-bands; dpfl mechanism only)"},
}

func init() {
	Names = slices.Clone(variants)
	for i := range Kinds {
		addName(&Kinds[i])
	}
	for _, s := range strategy.Names {
		if !slices.ContainsFunc(Names, func(n Name) bool { return n.Strategy == s }) {
			Names = append(Names, Name{Name: s, Strategy: s, Note: "(dpfl mechanism only)"})
		}
	}
	sortNames()
}

// addName gives the kind k a name in Names, unless it is an algorithm or
// has one: its own, in place of the name of a strategy only dpfl mechanism
// evaluated so far (a strategy registered before its kind).
func addName(k *Kind) {
	if k.Algorithm || slices.ContainsFunc(Names, func(n Name) bool { return n.Kind == k.Name }) {
		return
	}
	n := Name{Name: k.Name, Kind: k.Name, Strategy: k.strategyName(&Config{Kind: k.Name}), Note: k.Doc}
	if i := slices.IndexFunc(Names, func(o Name) bool { return o.Kind == "" && o.Name == n.Strategy && o.Strategy == n.Strategy }); i >= 0 {
		Names[i] = n
		return
	}
	Names = append(Names, n)
	sortNames()
}

// sortNames puts Names in the order of their strategies in strategy.Names.
func sortNames() {
	slices.SortStableFunc(Names, func(a, b Name) int {
		return slices.Index(strategy.Names, a.Strategy) - slices.Index(strategy.Names, b.Strategy)
	})
}

// names reads Names, by name or alias.
var names = registry.Table[Name]{List: &Names, Name: func(n Name) string { return n.Name }, Aliases: func(n Name) []string { return n.Aliases }}

// lookupName returns the mechanism a YAML aggregator.kind names, by its
// name or an alias.
func lookupName(s string) (Name, bool) { return names.Lookup(s) }

// MechanismName returns the mechanism dpfl mechanism's -strategy s names:
// a name of Names, one of its aliases, or tree (tree-vanilla).
func MechanismName(s string) (Name, bool) {
	for _, n := range Names {
		for _, a := range n.MechanismAliases {
			if a == s {
				return n, true
			}
		}
	}
	return lookupName(s)
}

// NameOfStrategy returns the mechanism name of a strategy.Build name.
func NameOfStrategy(strategyName string) string {
	for _, n := range Names {
		if n.Strategy == strategyName {
			return n.Name
		}
	}
	return strategyName
}

// setVariant sets a variant parameter from a mechanism name, recording a
// conflict with a different value given alongside.
func (c *Config) setVariant(field *string, v, key string) {
	if *field != "" && *field != v {
		c.conflict = "kind " + c.nameGiven + " means " + key + " " + v + ", but " + key + " is " + *field
		return
	}
	*field = v
}
