package participation

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"dpfl/sim/rng"
)

// Kind names a participation schema.
type Kind string

// Participation schemas.
const (
	// Uniform: a cohort drawn uniformly from the available clients each round;
	// no bound on participations (sensitivity uses the realized maximum).
	Uniform Kind = "uniform"
	// Single: each client takes part at most once over the whole run.
	Single Kind = "single"
	// KB is (k,b)-participation (Choquette-Choo et al. 2023): clients are split into B groups;
	// in round t only group t mod B may take part; at most K times each.
	KB Kind = "kb"
	// MinSep is B-min-sep participation: a client may take part again only
	// B or more rounds after its last participation, at most K times.
	MinSep Kind = "minsep"
	// Poisson: every client independently with probability Q each round
	// (the amplified baseline; valid only with Always availability).
	Poisson Kind = "poisson"
	// KBPoisson is the sampling scheme of amplified BandMF (Choquette-Choo et al. 2023 §5,
	// Alg. 2): clients are split into B groups; in round t each client of
	// group t mod B takes part independently with probability Q (valid only
	// with Always availability).
	KBPoisson Kind = "kb-poisson"
)

// Kinds lists the registered schemas, in order.
var Kinds []Kind

// Schema is a participation schema with its parameters.
type Schema struct {
	Kind Kind
	K    int     // KB, MinSep: maximum participations per client
	B    int     // KB, KBPoisson: number of groups; MinSep: minimum separation in rounds
	Q    float64 // Poisson, KBPoisson: inclusion probability
}

// Clock is the simulated time of the rounds.
type Clock struct {
	StartHour    float64 // UTC hour of day of round 0
	RoundSeconds float64 // simulated duration of a round
	WaitSeconds  float64 // one clock step while waiting for eligible clients
}

// Bounds on waiting for eligible clients, so that planning always ends
// quickly (an availability near zero with a large Planner.MaxWaits would
// otherwise scan the population for ever): a round waits at most MaxWaits
// clock steps, and the clock steps of the whole run may check client
// availability at most MaxWaitChecks times (each step checks every
// candidate; under half a minute of planning). A schedule that needs more is
// refused.
const (
	MaxWaits      = 1_000_000
	MaxWaitChecks = 200_000_000
)

// ErrWaitLimit is the error (wrapped) of a plan refused for waiting more
// than MaxWaitChecks.
var ErrWaitLimit = errors.New("too few clients are available")

// Planner plans a schedule under a schema, with availability and a cohort
// policy: up to Cohort clients are drawn uniformly at random among those the
// schema allows and availability admits; when fewer are eligible the round
// waits up to MaxWaits clock steps for more, then goes ahead short (the
// shortfall is recorded in the schedule). A population too small for the
// schema (for example fewer than Cohort·B clients under B-min-sep) therefore
// gives short rounds, not an error; only single participation, which cannot
// go on at all once everyone has taken part, and (k,b) with fewer
// participations than its epochs need, are refused.
type Planner struct {
	Schema   Schema
	Cohort   int
	Avail    Availability // nil: Always
	Clock    Clock
	MaxWaits int
}

// Validate checks the planner against a population and a number of rounds,
// rejecting schedules that cannot be filled.
func (p Planner) Validate(numClients, rounds int) error {
	s := p.Schema
	if numClients <= 0 || rounds <= 0 {
		return fmt.Errorf("participation: %d clients, %d rounds", numClients, rounds)
	}
	if !s.sampled() && (p.Cohort <= 0 || p.Cohort > numClients) {
		return fmt.Errorf("participation: cohort of %d cannot be drawn from %d clients", p.Cohort, numClients)
	}
	if p.MaxWaits < 0 || (p.MaxWaits > 0 && !(p.Clock.WaitSeconds > 0 && !math.IsInf(p.Clock.WaitSeconds, 0))) {
		return fmt.Errorf("participation: waiting needs max_waits >= 0 and a positive finite wait step")
	}
	if p.MaxWaits > MaxWaits {
		return fmt.Errorf("participation: max_waits %d is above the limit of %d clock steps per round", p.MaxWaits, MaxWaits)
	}
	if !(p.Clock.RoundSeconds >= 0) || math.IsInf(p.Clock.RoundSeconds, 0) || math.IsNaN(p.Clock.StartHour) || math.IsInf(p.Clock.StartHour, 0) {
		return fmt.Errorf("participation: the clock needs a finite start hour and a finite round duration >= 0 (have %v, %v s)", p.Clock.StartHour, p.Clock.RoundSeconds)
	}
	sc, ok := Lookup(s.Kind)
	if !ok {
		return fmt.Errorf("participation: unknown schema %q (want one of %v)", s.Kind, Kinds)
	}
	if err := sc.Check(s, numClients, rounds, p.Cohort); err != nil {
		return err
	}
	if _, ok := p.avail().(Always); s.sampled() && !ok {
		return fmt.Errorf("participation: poisson sampling amplifies privacy only when every client is always available; selection driven by availability is not sampling (use availability kind always, or another schema)")
	}
	return nil
}

// Sampled reports whether the schema samples clients independently (no
// fixed cohort; privacy amplified by the sampling).
func (k Kind) Sampled() bool { return k.Pattern().Sampled() }

// Grouped reports whether the schema has a b: the groups taking turns (kb,
// kb-poisson) or the separation (minsep).
func (k Kind) Grouped() bool { return k.Pattern().Separation() > 0 }

// Pattern is the form of the kind's patterns: the pattern of its schema with
// unit parameters (k = b = q = 1); which of its bounds are set says what the
// kind constrains.
func (k Kind) Pattern() Pattern { return Schema{Kind: k, K: 1, B: 1, Q: 1}.Pattern() }

// sampled reports whether the schema samples clients independently.
func (s Schema) sampled() bool { return s.Kind.Sampled() }

func (p Planner) avail() Availability {
	if p.Avail == nil {
		return Always{}
	}
	return p.Avail
}

// Plan returns the schedule for the given population and number of
// rounds, drawing randomness from root. Round t's draw uses the stream ("sched", t);
// (k,b) and kb-poisson groups use ("sched/groups").
func (p Planner) Plan(numClients, rounds int, root rng.Root) (*Schedule, error) {
	return p.PlanContext(context.Background(), numClients, rounds, root)
}

// PlanContext is Plan, returning ctx's error soon after ctx is cancelled.
func (p Planner) PlanContext(ctx context.Context, numClients, rounds int, root rng.Root) (*Schedule, error) {
	if err := p.Validate(numClients, rounds); err != nil {
		return nil, err
	}
	ps := &planState{p: p, pat: p.Schema.Pattern(), avail: p.avail(), ts: p.Clock.StartHour * 3600,
		s: &Schedule{NumClients: numClients, Rounds: make([][]int, rounds), Cohort: p.Cohort,
			Times: make([]float64, rounds), Eligible: make([]int, rounds), Waits: make([]int, rounds)},
		count: make([]int, numClients), last: make([]int, numClients)}
	if p.Schema.sampled() {
		ps.s.Cohort = 0
	}
	if ps.pat.Groups > 0 {
		ps.groups(root)
	}
	for t := range ps.s.Rounds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := root.Stream("sched", uint64(t))
		if p.Schema.sampled() {
			ps.sample(t, r)
			continue
		}
		if err := ps.draw(ctx, t, r); err != nil {
			return nil, err
		}
	}
	return ps.s, nil
}

// planState is a schedule being planned.
type planState struct {
	p           Planner
	pat         Pattern // the schema's pattern
	avail       Availability
	s           *Schedule
	count, last []int   // per client: participations so far, and the last one's round
	members     [][]int // kb, kb-poisson: the clients of each group
	ts          float64 // simulated time, seconds
	eligible    []int   // scratch
	steps       int     // clock steps waited so far
	checks      int     // availability checks made while waiting
}

// groups splits the clients into the schema's B groups: client i of the
// permutation drawn from ("sched/groups") joins group i mod B, or, for
// random groups (balls-in-bins), each client in turn draws its group
// uniformly from the same stream; groups numClients and above are not
// stored (for random groups, their clients take part in no round).
func (ps *planState) groups(root rng.Root) {
	n, b := ps.s.NumClients, ps.pat.Groups
	ps.s.Groups = make([]int, n)
	ps.members = make([][]int, min(b, n))
	r := root.Stream("sched/groups")
	if ps.pat.RandomGroups {
		for c := range n {
			g := r.IntN(b)
			ps.s.Groups[c] = g
			if g < len(ps.members) {
				ps.members[g] = append(ps.members[g], c)
			}
		}
	} else {
		for i, c := range r.Perm(n) {
			g := i % b
			ps.s.Groups[c] = g
			ps.members[g] = append(ps.members[g], c)
		}
	}
	for _, m := range ps.members {
		slices.Sort(m)
	}
}

// group is the clients of round t's group.
func (ps *planState) group(t int) []int {
	if g := t % ps.pat.Groups; g < len(ps.members) {
		return ps.members[g]
	}
	return nil
}

// allowed reports whether the schema lets client c take part in round t.
func (ps *planState) allowed(c, t int) bool { return ps.pat.allows(ps.count[c], ps.last[c], t) }

// take records the clients of round t (sorted).
func (ps *planState) take(t int, ids []int) {
	ps.s.Rounds[t] = ids
	for _, c := range ids {
		ps.count[c]++
		ps.last[c] = t
	}
	ps.ts += ps.p.Clock.RoundSeconds
}

// sample plans round t of a sampled schema: each client (of the round's
// group, for kb-poisson) independently with probability Q.
func (ps *planState) sample(t int, r *rand.Rand) {
	var ids []int
	if ps.pat.Groups > 0 {
		for _, c := range ps.group(t) {
			if r.Float64() < ps.pat.Sampling {
				ids = append(ids, c)
			}
		}
	} else {
		for c := 0; c < ps.s.NumClients; c++ {
			if r.Float64() < ps.pat.Sampling {
				ids = append(ids, c)
			}
		}
	}
	ps.s.Eligible[t], ps.s.Times[t] = ps.s.NumClients, ps.ts
	ps.take(t, ids)
}

// draw plans round t of a cohort schema: it waits (up to MaxWaits clock
// steps) for Cohort eligible clients, then draws up to Cohort of them
// uniformly.
func (ps *planState) draw(ctx context.Context, t int, r *rand.Rand) error {
	p := ps.p
	candidates := ps.s.NumClients
	if ps.members != nil {
		candidates = len(ps.group(t))
	}
	for wait := 0; ; wait++ {
		ps.eligibleAt(t)
		if len(ps.eligible) >= p.Cohort || wait >= p.MaxWaits {
			ps.s.Waits[t] = wait
			break
		}
		ps.steps++
		if ps.checks += candidates; ps.checks > MaxWaitChecks {
			return fmt.Errorf("participation: by round %d of %d, waiting for eligible clients took %d clock steps checking %d clients each, the limit of %d availability checks per run (%d eligible for a cohort of %d at the last step): %w; lower max_waits, raise the availability, or shrink the cohort",
				t+1, len(ps.s.Rounds), ps.steps, candidates, MaxWaitChecks, len(ps.eligible), p.Cohort, ErrWaitLimit)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		ps.ts += p.Clock.WaitSeconds
	}
	ps.s.Times[t], ps.s.Eligible[t] = ps.ts, len(ps.eligible)
	eligible := ps.eligible
	n := min(p.Cohort, len(eligible))
	for i := 0; i < n; i++ { // partial Fisher–Yates
		j := i + r.IntN(len(eligible)-i)
		eligible[i], eligible[j] = eligible[j], eligible[i]
	}
	ids := slices.Clone(eligible[:n])
	slices.Sort(ids)
	ps.take(t, ids)
	return nil
}

// eligibleAt sets ps.eligible to the candidates of round t the schema
// allows and availability admits at the current time.
func (ps *planState) eligibleAt(t int) {
	ps.eligible = ps.eligible[:0]
	check := func(c int) {
		if ps.allowed(c, t) && ps.avail.Available(c, ps.ts) {
			ps.eligible = append(ps.eligible, c)
		}
	}
	if ps.members != nil {
		for _, c := range ps.group(t) {
			check(c)
		}
		return
	}
	for c := 0; c < ps.s.NumClients; c++ {
		check(c)
	}
}

// Audit checks a realized schedule against the schema and availability (a
// violation is an error, never a silent number): it re-checks, independently of Plan, that the
// schedule obeys the schema (participation counts, groups, separations), the
// cohort bound, and that every participant was available at its round's time.
func (p Planner) Audit(s *Schedule) error {
	if !p.Schema.sampled() {
		if err := auditBasic(s, p.Cohort); err != nil {
			return err
		}
	} else if err := auditBasic(s, s.NumClients); err != nil {
		return err
	}
	avail := p.avail()
	if s.Times != nil {
		for t, ids := range s.Rounds {
			for _, c := range ids {
				if !avail.Available(c, s.Times[t]) {
					return fmt.Errorf("participation: client %d took part in round %d while unavailable", c, t)
				}
			}
		}
	}
	sc, ok := Lookup(p.Schema.Kind)
	if !ok {
		return fmt.Errorf("participation: unknown schema %q (want one of %v)", p.Schema.Kind, Kinds)
	}
	return sc.Audit(p.Schema, s)
}

func groupOf(s *Schedule, c int) int {
	if s.Groups == nil {
		return -1
	}
	return s.Groups[c]
}

// MaxParticipations is the most participations the schema allows a client in
// the given number of rounds (math.MaxInt for Uniform and Poisson, which do
// not bound it; ⌈rounds/B⌉ for KBPoisson, one chance per turn of its group).
func (s Schema) MaxParticipations(rounds int) int { return s.Pattern().MaxIn(rounds) }

// ceilDiv is ⌈a/b⌉ for b ≥ 1 (0 for a ≤ 0), without overflow.
func ceilDiv(a, b int) int {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}

// auditBasic checks IDs, ordering and the cohort bound.
func auditBasic(s *Schedule, cohort int) error {
	for t, ids := range s.Rounds {
		if len(ids) > cohort {
			return fmt.Errorf("participation: round %d has %d clients, more than the cohort of %d", t, len(ids), cohort)
		}
		for i, c := range ids {
			if c < 0 || c >= s.NumClients {
				return fmt.Errorf("participation: round %d has client %d outside the population of %d", t, c, s.NumClients)
			}
			if i > 0 && ids[i-1] >= c {
				return fmt.Errorf("participation: round %d lists clients out of order or twice (%d then %d)", t, ids[i-1], c)
			}
		}
	}
	return nil
}

// String returns a short description, e.g. "single", "kb(k=6,b=342)",
// "minsep(k=4,b=10)", "poisson(q=0.01)" or "kb-poisson(b=6,q=0.5)".
func (s Schema) String() string {
	p, sampled, grouped := s.Pattern(), s.Kind.Sampled(), s.Kind.Grouped()
	switch b := p.Separation(); {
	case sampled && grouped:
		return fmt.Sprintf("%s(b=%d,q=%g)", s.Kind, b, p.Sampling)
	case sampled:
		return fmt.Sprintf("%s(q=%g)", s.Kind, p.Sampling)
	case grouped:
		return fmt.Sprintf("%s(k=%d,b=%d)", s.Kind, p.MaxParticipations, b)
	}
	return string(s.Kind)
}
