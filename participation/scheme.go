package participation

import (
	"fmt"
	"math"

	"dpfl/sim/registry"
)

// Pattern is what the participations of one client can be under a schema:
// the value sensitivity, planning and accounting are computed for. Its zero
// value bounds nothing (any client in any round).
type Pattern struct {
	// MaxParticipations k: at most k participations per client (0: no bound).
	MaxParticipations int
	// MinSeparation b: two participations of a client are at least b rounds
	// apart (0: no constraint).
	MinSeparation int
	// Groups b: the clients are split into b groups taking turns; round t
	// admits only group t mod b, so a client's participations lie in
	// {i, i+b, i+2b, …} (0: no groups).
	Groups int
	// Sampling q: each admitted client takes part independently with
	// probability q, with no fixed cohort; privacy is amplified by the
	// sampling (0: a cohort is drawn).
	Sampling float64
	// RandomGroups: each client's group is drawn uniformly and
	// independently (balls-in-bins), not by an equal split.
	RandomGroups bool
}

// AtMostOnce is the pattern of single participation: at most one
// participation per client, in any round.
var AtMostOnce = Pattern{MaxParticipations: 1}

// Turns is the pattern of (k,b)-participation: b groups taking turns, at
// most k participations per client.
func Turns(k, b int) Pattern { return Pattern{MaxParticipations: k, Groups: b} }

// Spaced is the pattern of b-min-sep participation: at most k
// participations per client, consecutive ones at least b rounds apart.
func Spaced(k, b int) Pattern { return Pattern{MaxParticipations: k, MinSeparation: b} }

// String describes the pattern by its form, in the notation of the schemas
// that have it: "single", "kb(k=6,b=342)", "minsep(k=4,b=10)",
// "poisson(q=0.01)", "kb-poisson(b=6,q=0.5)"; "uniform" for the pattern that
// bounds nothing and "k=3" for a bare bound on the count.
func (p Pattern) String() string {
	switch {
	case p.SampledTurns():
		return fmt.Sprintf("kb-poisson(b=%d,q=%g)", p.Groups, p.Sampling)
	case p.Sampled():
		return fmt.Sprintf("poisson(q=%g)", p.Sampling)
	case p.Once():
		return "single"
	case p.Groups > 0:
		return fmt.Sprintf("kb(k=%d,b=%d)", p.MaxParticipations, p.Groups)
	case p.MinSeparation > 0:
		return fmt.Sprintf("minsep(k=%d,b=%d)", p.MaxParticipations, p.MinSeparation)
	case p.MaxParticipations > 0:
		return fmt.Sprintf("k=%d", p.MaxParticipations)
	}
	return "uniform"
}

// Unbounded reports whether the pattern bounds nothing: any client may take
// part in any round, and a fixed-size cohort is drawn uniformly among the
// eligible clients (uniform).
func (p Pattern) Unbounded() bool { return p == Pattern{} }

// Sampled reports whether clients are sampled independently.
func (p Pattern) Sampled() bool { return p.Sampling > 0 }

// Once reports whether the pattern is single participation: at most one,
// in any round.
func (p Pattern) Once() bool { return p == Pattern{MaxParticipations: 1} }

// SampledTurns reports whether the pattern samples clients within groups
// taking turns (kb-poisson).
func (p Pattern) SampledTurns() bool { return p.Sampled() && p.Groups > 0 }

// Separation is the b of the pattern: its groups, or else its minimum
// separation (0: neither).
func (p Pattern) Separation() int { return max(p.Groups, p.MinSeparation) }

// MaxIn is the most participations the pattern allows a client in the given
// number of rounds (math.MaxInt when it bounds none).
func (p Pattern) MaxIn(rounds int) int {
	b := p.Separation()
	switch {
	case p.MaxParticipations > 0 && b > 0:
		return min(p.MaxParticipations, ceilDiv(rounds, b))
	case p.MaxParticipations > 0:
		return p.MaxParticipations
	case p.Groups > 0:
		return ceilDiv(rounds, p.Groups)
	}
	return math.MaxInt
}

// allows reports whether a client with count participations so far, the last
// in round last, may take part in round t (its group's turn aside).
func (p Pattern) allows(count, last, t int) bool {
	return (p.MaxParticipations == 0 || count < p.MaxParticipations) &&
		(p.MinSeparation == 0 || count == 0 || t-last >= p.MinSeparation)
}

// A Scheme is a participation schema kind: the rule of which clients may take
// part in which rounds. Each scheme lives in a file of its own, states its
// guarantee in its doc comment and registers itself with Register.
type Scheme interface {
	// Check validates the schema's parameters for a run of rounds rounds
	// drawing cohort clients per round from numClients (cohort is 0 for a
	// sampled scheme).
	Check(s Schema, numClients, rounds, cohort int) error
	// Pattern is what a client's participations can be under s; the planner
	// follows it and sensitivity and accounting are computed for it.
	Pattern(s Schema) Pattern
	// Audit checks a realized schedule against s (availability and the
	// cohort bound are checked by the Planner).
	Audit(s Schema, sched *Schedule) error
}

// scheme is a registered scheme with its name.
type scheme struct {
	kind    Kind
	aliases []string
	order   int
	Scheme
}

var (
	schemes []scheme
	table   = registry.Table[scheme]{List: &schemes, Name: func(s scheme) string { return string(s.kind) },
		Aliases: func(s scheme) []string { return s.aliases }, Order: func(s scheme) int { return s.order }}
)

// Register adds a participation scheme under the name kind (and older
// spellings aliases), after the built-in ones; it panics on a name
// registered twice.
func Register(kind Kind, s Scheme, aliases ...string) { register(kind, 1<<30, s, aliases...) }

func register(kind Kind, order int, s Scheme, aliases ...string) {
	table.Register(scheme{kind: kind, aliases: aliases, order: order, Scheme: s})
	Kinds = nil
	for _, s := range schemes {
		Kinds = append(Kinds, s.kind)
	}
}

// Lookup returns the scheme named kind (or one of its older spellings).
func Lookup(kind Kind) (Scheme, bool) {
	s, ok := table.Lookup(string(kind))
	return s.Scheme, ok
}

// Canonical returns the registered name of kind (kind itself when it is not
// an older spelling or not registered).
func Canonical(kind Kind) Kind {
	if s, ok := table.Lookup(string(kind)); ok {
		return s.kind
	}
	return kind
}

// Pattern is the pattern of the schema (the zero Pattern for an unknown
// kind).
func (s Schema) Pattern() Pattern {
	if sc, ok := Lookup(s.Kind); ok {
		return sc.Pattern(s)
	}
	return Pattern{}
}

// auditPattern checks a schedule against the pattern p; name labels the
// violations.
func auditPattern(name string, p Pattern, s *Schedule) error {
	count := make([]int, s.NumClients)
	last := make([]int, s.NumClients)
	for t, ids := range s.Rounds {
		for _, c := range ids {
			if p.Groups > 0 && (s.Groups == nil || s.Groups[c] != t%p.Groups) {
				return fmt.Errorf("participation: %s violated: client %d of group %d in round %d (group %d's turn)", name, c, groupOf(s, c), t, t%p.Groups)
			}
			if k := p.MaxParticipations; k == 1 && count[c] >= 1 {
				return fmt.Errorf("participation: %s violated: client %d in round %d after round %d", name, c, t, last[c])
			} else if k > 0 && count[c] >= k {
				return fmt.Errorf("participation: %s violated: client %d takes part more than k = %d times", name, c, k)
			}
			if b := p.MinSeparation; b > 0 && count[c] > 0 && t-last[c] < b {
				return fmt.Errorf("participation: %s violated: client %d in rounds %d and %d, separation %d < b = %d", name, c, last[c], t, t-last[c], b)
			}
			count[c]++
			last[c] = t
		}
	}
	return nil
}

// checkKB checks the k and b of a (k,b) or min-sep schema.
func checkKB(s Schema) error {
	if s.K <= 0 || s.B <= 0 {
		return fmt.Errorf("participation: %s needs k > 0 and b > 0 (have k = %d, b = %d)", s.Kind, s.K, s.B)
	}
	return nil
}

// checkQ checks the q of a sampled schema.
func checkQ(s Schema) error {
	if !(s.Q > 0 && s.Q <= 1) {
		return fmt.Errorf("participation: %s needs 0 < q <= 1 (have %v)", s.Kind, s.Q)
	}
	return nil
}
