package experiments

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
	"dpfl/privacy"
	"dpfl/results"
	"dpfl/sim"
	"dpfl/sim/rng"
)

// Empirical privacy estimation with canary clients (Andrew, Kairouz, Oh,
// Oprea, McMahan and Suriyakumar 2024, "One-shot Empirical Privacy
// Estimation for Federated Learning").
//
// audit.canaries canary clients join the population (client IDs after the
// data's clients). Each has a fixed random unit direction c_j, drawn from its
// own stream ("canary", j); a seeded half of them (stream
// ("audit-held-out")) is inserted, the other half held out. The participation
// schema schedules canaries like every client and the accounting counts them
// in the population. When scheduled, an inserted canary submits c_j scaled to
// the clip norm (times 1 - 1e-6, so that rounding never clips it); a held-out
// canary submits nothing (a zero update: its direction never reaches the
// aggregator). Their updates are clipped, summed and noised like any other;
// they have no data, no train loss and no test examples, so they change the
// reported accuracy only through their updates.
//
// At the end, a statistic of every canary is compared between the inserted
// and the held-out group, for two threat models:
//
//   - final-model (audit.observe: final): the cosine between c_j and the
//     initial model minus the final one (both known to the adversary; the
//     server subtracts the aggregates), the paper's statistic;
//   - every-round (audit.observe: rounds): the adversary sees every round's
//     released aggregate a_t. Without sampling the schedule is public (it is
//     planned from the seed, and the accounting is for the realized
//     schedule): the statistic projects the stacked release, whitened for
//     the mechanism's noise correlation X = CᵀC, on canary j's whitened
//     contribution over its scheduled rounds S_j (auditor.everyRound; for
//     DP-FedAvg, X = I, it is the cosine between 1_S ⊗ c_j and the stacked
//     release). It is linear in the mechanism's Gaussian noise, so Gaussian
//     with the same variance in both groups, and the most powerful linear
//     test of the mechanism: its separation is the accountant's mu for the
//     canary's pattern when the real clients' updates are small against the
//     noise along c_j. With Poisson sampling the schedule is the secret that
//     amplifies privacy; the statistic is then the paper's max_t cos(c_j,
//     a_t) over all rounds (not Gaussian; treat its estimate with care).
//
// Without sampling only the canaries scheduled at least once enter the
// comparison (a canary never scheduled has no effect by construction, and
// the guarantee is conditional on the public schedule); with sampling every
// canary does. privacy.EstimateEpsilon fits a normal to each group with a
// pooled standard deviation and returns the epsilon at the run's delta at
// which the two are indistinguishable (the Gaussian-DP epsilon of the
// measured mu), with a 95% basic bootstrap interval (1,000 resamples from
// stream ("audit-bootstrap", m)); the paper's fit with separate deviations
// is recorded too (epsilon_separate_variances). Both threat models are
// estimated in every audited run; audit.observe picks the headline one.
// Beside each estimate, the one-run lower bound of Steinke, Nasr and
// Jagielski (2023) from the same statistics (privacy.EpsilonOneRun, at 95%
// confidence and the run's delta: canaries scoring at least a threshold
// are guessed inserted): unlike the estimate it is a statistical
// guarantee, below the reported epsilon of a correctly accounted run.

// AuditObserves are the values of audit.observe.
var AuditObserves = []string{"final", "rounds"}

// Threat models of the audit (audit.json's threat_model).
const (
	ThreatFinal  = "final-model"
	ThreatRounds = "every-round"
)

// AuditFile is the audit's record in a run folder; auditStateFile holds the
// every-round statistics accumulated up to the checkpoint while a run is
// unfinished.
const (
	AuditFile      = "audit.json"
	auditStateFile = "audit-state.gob"
)

const (
	auditConfidence = 0.95
	auditResamples  = 1000
	minCanaries     = 4
)

func (a *AuditConfig) normalize() {
	if a.Canaries > 0 && a.Observe == "" {
		a.Observe = "final"
	}
}

func (c *Config) validateAudit(add addFunc, oneOf oneOfFunc, src *Source) {
	a := c.Audit
	switch {
	case a.Canaries < 0:
		add("audit.canaries", "%d must not be negative (0: no audit)", a.Canaries)
		return
	case a.Canaries == 0:
		if a.Observe != "" {
			add("audit.observe", "has no effect without canaries (set audit.canaries)")
		}
		return
	case a.Canaries < minCanaries:
		add("audit.canaries", "%d is too few: at least %d (half inserted, half held out, a normal fitted to each; a few hundred give a useful interval)", a.Canaries, minCanaries)
	}
	oneOf("audit.observe", a.Observe, AuditObserves)
	// The every-round statistic whitens the released aggregates by the
	// mechanism's fixed noise correlation at a fixed clip norm; DP-AGD
	// releases averaged re-measurements and adaptive clipping moves the
	// clip, so neither fits the estimate as derived.
	if c.AGD() {
		add("audit.canaries", "not with aggregator.kind dp-agd (its releases are not the fixed-noise aggregates the estimate assumes)")
	}
	if c.Aggregator.ClipQuantile != 0 {
		add("audit.canaries", "not with aggregator.clip_quantile (the estimate assumes a fixed clip norm)")
	}
	if !c.Private() && c.Privacy.Delta == 0 && src.Line("privacy.delta") == 0 {
		add("privacy.delta", "required with audit.canaries: the delta the empirical epsilon is estimated at")
	} else if !c.Private() && !(c.Privacy.Delta > 0 && c.Privacy.Delta < 1) {
		add("privacy.delta", "%v must be in (0, 1)", c.Privacy.Delta)
	}
}

// auditInserted returns the canaries (indices 0..n-1) whose updates are
// inserted: a seeded half, ⌊n/2⌋ of them.
func auditInserted(n int, root rng.Root) []bool {
	perm := root.Stream("audit-held-out").Perm(n)
	in := make([]bool, n)
	for _, j := range perm[:n/2] {
		in[j] = true
	}
	return in
}

// secretSchedule reports whether the run's guarantee rests on the schedule
// being secret: sampled participation (poisson, kb-poisson), or a cohort
// accounted as sampled without replacement (privacy.amplification). The
// audit's every-round adversary then does not know the canaries' rounds,
// the threat model the amplified epsilon is proven for.
func (p *Plan) secretSchedule() bool {
	return p.Config.Participation.Kind.Sampled() || p.Config.Privacy.Amplification != ""
}

// auditPlan checks, once the schedule is known, that both groups of canaries
// take part (without sampling, only scheduled canaries are compared).
func (p *Plan) auditPlan(root rng.Root) error {
	a := p.Config.Audit
	if a.Canaries == 0 {
		return nil
	}
	p.FirstCanary = p.Clients - a.Canaries
	if p.secretSchedule() {
		return nil
	}
	in := auditInserted(a.Canaries, root)
	var seenIn, seenOut int
	seen := make([]bool, a.Canaries)
	for _, ids := range p.Schedule.Rounds {
		for _, id := range ids[firstAtLeast(ids, p.FirstCanary):] {
			seen[id-p.FirstCanary] = true
		}
	}
	for j, s := range seen {
		switch {
		case s && in[j]:
			seenIn++
		case s:
			seenOut++
		}
	}
	if seenIn < 2 || seenOut < 2 {
		return fmt.Errorf("experiments: audit.canaries: only %d inserted and %d held-out canaries are scheduled in any round (at least 2 of each are needed): raise audit.canaries, rounds or participation.cohort", seenIn, seenOut)
	}
	return nil
}

// firstAtLeast returns the index of the first ID >= id in the sorted ids.
func firstAtLeast(ids []int, id int) int {
	i, _ := slices.BinarySearch(ids, id)
	return i
}

// auditor is a run's canaries and the statistics accumulated over the
// rounds.
type auditor struct {
	cfg      AuditConfig
	first    int // client ID of canary 0
	dim      int
	dirs     [][]float32 // unit directions
	inserted []bool
	scale    float32 // clip · (1 - 1e-6)
	sampled  bool
	// gram is X = CᵀC of a correlated mechanism without sampling (nil:
	// independent noise, X = I): the released aggregates' noise has
	// covariance proportional to X⁻¹ across rounds.
	gram  *mat.SymDense
	sched *participation.Schedule
	root  rng.Root
	state auditState
}

// auditState is what the every-round statistic has accumulated after Round
// rounds (saved next to a checkpoint): the squared norms of the released
// aggregates, and the projections q_jt = <c_j, a_t> of the aggregates on
// the canaries' directions: without sampling and with independent noise
// summed over each canary's scheduled rounds (Sum, Count); with correlated
// noise all of them (Proj[j][t]); with sampling the largest cosine of each
// canary over the rounds (Max).
type auditState struct {
	Round int
	Norm2 float64
	Sum   []float64
	Count []int
	Proj  [][]float64
	Max   []float64
}

// newAuditor draws the canaries of the plan for models of dim parameters
// (nil when the run has no audit).
func (p *Plan) newAuditor(root rng.Root, dim int) *auditor {
	a := p.Config.Audit
	if a.Canaries == 0 {
		return nil
	}
	au := &auditor{cfg: a, first: p.FirstCanary, dim: dim, dirs: make([][]float32, a.Canaries),
		inserted: auditInserted(a.Canaries, root), scale: float32(p.Config.Aggregator.Clip * (1 - 1e-6)),
		sampled: p.secretSchedule(), sched: p.Schedule, root: root}
	if !au.sampled && !p.Mechanism.Independent() {
		au.gram = p.Mechanism.Strategy.Gram()
	}
	buf := make([]float64, dim)
	for j := range au.dirs {
		rng.FillNormal(buf, root.Stream("canary", uint64(j)))
		inv := 1 / norm64(buf)
		v := make([]float32, dim)
		for i, x := range buf {
			v[i] = float32(x * inv)
		}
		au.dirs[j] = v
	}
	au.reset()
	return au
}

func (au *auditor) reset() {
	n := len(au.dirs)
	au.state = auditState{}
	switch {
	case au.sampled:
		au.state.Max = make([]float64, n)
		for j := range au.state.Max {
			au.state.Max[j] = math.Inf(-1)
		}
	case au.gram != nil:
		au.state.Proj = make([][]float64, n)
		for j := range au.state.Proj {
			au.state.Proj[j] = make([]float64, 0, len(au.sched.Rounds))
		}
	default:
		au.state.Sum, au.state.Count = make([]float64, n), make([]int, n)
	}
}

// canary is sim.Spec.Canary (the pool's canaries): an inserted canary's update is its direction
// at the clip norm, a held-out one's is zero.
func (au *auditor) canary(id int, delta []float32) bool {
	j := id - au.first
	if j < 0 || j >= len(au.dirs) {
		return false
	}
	if !au.inserted[j] {
		clear(delta)
		return true
	}
	for i, x := range au.dirs[j] {
		delta[i] = au.scale * x
	}
	return true
}

// dot returns <dir, v>.
func dot(dir []float32, v []float64) float64 {
	var s float64
	for i, x := range dir {
		s += float64(x) * v[i]
	}
	return s
}

func norm64(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// AfterRound is the auditor as a sim.Callback: it takes the round's
// released aggregate (round).
func (au *auditor) AfterRound(rd sim.Round, _ func() sim.State) error {
	au.round(rd.Round-1, rd.Update)
	return nil
}

// Interrupted implements sim.Callback: the statistics are saved with the
// checkpoint (recorder.checkpoint).
func (au *auditor) Interrupted(sim.State) error { return nil }

// round accumulates the every-round statistic of round t (0-based) from
// its released aggregate.
func (au *auditor) round(t int, update []float32) {
	v := make([]float64, len(update))
	for i, x := range update {
		v[i] = float64(x)
	}
	n := norm64(v)
	au.state.Norm2 += n * n
	switch {
	case au.sampled:
		for j, d := range au.dirs {
			c := 0.0
			if n > 0 {
				c = dot(d, v) / n
			}
			au.state.Max[j] = math.Max(au.state.Max[j], c)
		}
	case au.gram != nil:
		for j, d := range au.dirs {
			au.state.Proj[j] = append(au.state.Proj[j], dot(d, v))
		}
	default:
		ids := au.sched.Rounds[t]
		for _, id := range ids[firstAtLeast(ids, au.first):] {
			j := id - au.first
			au.state.Sum[j] += dot(au.dirs[j], v)
			au.state.Count[j]++
		}
	}
	au.state.Round = t + 1
}

// everyRound returns the every-round statistic of each canary (NaN for a
// canary never scheduled, without sampling).
//
// Without sampling, the adversary sees the stacked release P (rounds ×
// parameters) and knows the schedule; canary j adds s·1_S ⊗ c_j to its
// expectation, S the canary's rounds, and the noise of P has covariance
// proportional to X⁻¹ over the rounds (X = CᵀC; X = I for independent
// noise). The most powerful linear test projects the whitened release on the
// whitened contribution: g_j = <X 1_S, q_j> / sqrt(1_Sᵀ X 1_S), divided here
// by |P| (for X = I, g_j is the cosine between 1_S ⊗ c_j and P). Its
// separation between the groups is the mechanism's mu for pattern S,
// |C 1_S| / (sigma · sens), when the real clients' updates are small against
// the noise along c_j.
func (au *auditor) everyRound() []float64 {
	n := len(au.dirs)
	g := make([]float64, n)
	if au.sampled {
		copy(g, au.state.Max)
		return g
	}
	scale := 1 / math.Sqrt(au.state.Norm2)
	if au.state.Norm2 == 0 {
		scale = 0
	}
	if au.gram == nil {
		for j := range g {
			if c := au.state.Count[j]; c > 0 {
				g[j] = au.state.Sum[j] / math.Sqrt(float64(c)) * scale
			} else {
				g[j] = math.NaN()
			}
		}
		return g
	}
	// The rounds of each canary.
	rounds := make([][]int, n)
	for t, ids := range au.sched.Rounds {
		for _, id := range ids[firstAtLeast(ids, au.first):] {
			rounds[id-au.first] = append(rounds[id-au.first], t)
		}
	}
	T := au.gram.SymmetricDim()
	w := make([]float64, T)
	for j := range g {
		if len(rounds[j]) == 0 {
			g[j] = math.NaN()
			continue
		}
		clear(w)
		for _, s := range rounds[j] {
			for t := 0; t < T; t++ {
				w[t] += au.gram.At(t, s)
			}
		}
		var num, den float64
		for _, s := range rounds[j] {
			den += w[s]
		}
		for t, q := range au.state.Proj[j] {
			num += w[t] * q
		}
		g[j] = num / math.Sqrt(den) * scale
	}
	return g
}

// save writes the accumulated statistics (next to a checkpoint).
func (au *auditor) save(dir string) error {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&au.state); err != nil {
		return fmt.Errorf("experiments: audit state: %w", err)
	}
	return results.WriteFileAtomic(filepath.Join(dir, auditStateFile), b.Bytes())
}

// load restores the statistics saved after round; it reports whether they
// were there and matched.
func (au *auditor) load(dir string, round int) bool {
	b, err := results.ReadFileMax(filepath.Join(dir, auditStateFile), math.MaxInt64) // a regular file (not a FIFO)
	if err != nil {
		return false
	}
	var st auditState
	if gob.NewDecoder(bytes.NewReader(b)).Decode(&st) != nil || st.Round != round {
		return false
	}
	n := len(au.dirs)
	switch {
	case au.sampled && len(st.Max) != n:
		return false
	case !au.sampled && au.gram != nil && len(st.Proj) != n:
		return false
	case !au.sampled && au.gram == nil && (len(st.Sum) != n || len(st.Count) != n):
		return false
	}
	for _, p := range st.Proj {
		if len(p) != round {
			return false
		}
	}
	au.state = st
	return true
}

// AuditRecord is the content of audit.json.
type AuditRecord struct {
	// ThreatModel is the headline estimate's (audit.observe): final-model or
	// every-round; Epsilon, Low and High are its estimate and interval.
	ThreatModel string        `json:"threat_model"`
	Epsilon     results.Float `json:"epsilon"`
	Low         results.Float `json:"epsilon_low"`
	High        results.Float `json:"epsilon_high"`
	Confidence  float64       `json:"confidence"`
	Delta       float64       `json:"delta"`
	// ReportedEpsilon is the run's proven epsilon at Delta (null: no
	// noise), by Accountant.
	ReportedEpsilon *float64 `json:"reported_epsilon"`
	Accountant      string   `json:"accountant"`
	Canaries        int      `json:"canaries"`
	Inserted        int      `json:"inserted"`
	HeldOut         int      `json:"held_out"`
	Dimension       int      `json:"dimension"`
	Method          string   `json:"method"`
	// OneRunLowerBound is the headline threat model's one-run lower bound
	// on epsilon at Confidence and Delta (see AuditEstimate.OneRun).
	OneRunLowerBound results.Float `json:"epsilon_one_run_lower_bound"`
	OneRunMethod     string        `json:"one_run_method"`
	// Estimates are both threat models', the headline one first.
	Estimates []AuditEstimate `json:"estimates"`
}

// AuditEstimate is one threat model's estimate and the statistics it was
// computed from.
type AuditEstimate struct {
	ThreatModel string        `json:"threat_model"`
	Statistic   string        `json:"statistic"`
	Epsilon     results.Float `json:"epsilon"`
	Low         results.Float `json:"epsilon_low"`
	High        results.Float `json:"epsilon_high"`
	// Mu is the separation the estimate is the Gaussian-DP epsilon of:
	// (inserted mean - held-out mean) / pooled standard deviation.
	Mu float64 `json:"mu"`
	// EpsilonSeparate is the epsilon of the two normals fitted each with
	// its own deviation (the paper's estimate; biased upward with few
	// canaries, see privacy.EstimateEpsilon).
	EpsilonSeparate results.Float  `json:"epsilon_separate_variances"`
	InsertedFit     privacy.Normal `json:"inserted_fit"`
	HeldOutFit      privacy.Normal `json:"held_out_fit"`
	// OneRun is the one-run lower bound on epsilon from the same statistics
	// (privacy.EpsilonOneRun: Steinke, Nasr and Jagielski 2023), at the
	// audit's confidence and delta: with that probability the run is not
	// (ε', delta)-DP for any ε' below it. Unlike the estimate it is a
	// statistical guarantee, and it lies below the reported epsilon of a
	// correctly accounted run.
	OneRun privacy.OneRun `json:"one_run"`
	// The statistic of each canary compared (in canary order).
	InsertedStats []float64 `json:"inserted_statistics"`
	HeldOutStats  []float64 `json:"held_out_statistics"`
}

const oneRunMethod = "one-run audit (Steinke, Nasr and Jagielski 2023): canaries scoring at least a threshold guessed inserted; the largest epsilon whose binomial p-value (with the delta term) is at most 5%, Bonferroni over the thresholds at the vertices of the (false negatives, true negatives) hull; a lower bound at 95% confidence"

const auditMethod = "one-shot canary estimate (Andrew et al. 2024): normals with a pooled standard deviation fitted to the inserted and held-out canaries' statistics, epsilon at delta of the pair; 95% basic bootstrap interval over canaries (1000 resamples)"

// finish computes both threat models' estimates from the final and initial
// models and the accumulated statistics.
func (au *auditor) finish(final, init []float32, delta float64) (*AuditRecord, error) {
	rec := &AuditRecord{Confidence: auditConfidence, Delta: delta, Canaries: len(au.dirs), Dimension: au.dim, Method: auditMethod}
	for _, in := range au.inserted {
		if in {
			rec.Inserted++
		}
	}
	rec.HeldOut = rec.Canaries - rec.Inserted
	// The sum of the server's steps (it subtracts the aggregates).
	v := make([]float64, len(final))
	for i := range final {
		v[i] = float64(init[i]) - float64(final[i])
	}
	n := norm64(v)
	rounds := au.everyRound()
	use := func(j int) bool { return au.sampled || !math.IsNaN(rounds[j]) }
	stats := map[string][]float64{ThreatFinal: make([]float64, len(au.dirs)), ThreatRounds: rounds}
	for j, d := range au.dirs {
		if use(j) && n > 0 {
			stats[ThreatFinal][j] = dot(d, v) / n
		}
	}
	what := map[string]string{ThreatFinal: "cosine between the canary's direction and the initial model minus the final one (the sum of the server's steps)"}
	switch {
	case au.sampled:
		what[ThreatRounds] = "largest cosine between the canary's direction and a round's released aggregate, over all rounds (the schedule is secret under sampling)"
	case au.gram == nil:
		what[ThreatRounds] = "cosine between the canary's contribution over its scheduled rounds and the stacked released aggregates"
	default:
		what[ThreatRounds] = "projection of the released aggregates, whitened for the mechanism's noise correlation (X = CᵀC), on the canary's whitened contribution over its scheduled rounds, over the norm of the release"
	}
	order := []string{ThreatFinal, ThreatRounds}
	if au.cfg.Observe == "rounds" {
		order = []string{ThreatRounds, ThreatFinal}
	}
	for m, tm := range order {
		e := AuditEstimate{ThreatModel: tm, Statistic: what[tm]}
		for j := range au.dirs {
			if !use(j) {
				continue
			}
			if au.inserted[j] {
				e.InsertedStats = append(e.InsertedStats, stats[tm][j])
			} else {
				e.HeldOutStats = append(e.HeldOutStats, stats[tm][j])
			}
		}
		est, err := privacy.EstimateEpsilon(e.HeldOutStats, e.InsertedStats, delta, auditConfidence, auditResamples,
			au.root.Stream("audit-bootstrap", uint64(m)))
		if err != nil {
			return nil, fmt.Errorf("experiments: audit (%s): %w", tm, err)
		}
		e.Epsilon, e.Low, e.High = results.Float(est.Epsilon), results.Float(est.Low), results.Float(est.High)
		e.Mu, e.EpsilonSeparate = est.Mu, results.Float(est.Separate)
		e.InsertedFit, e.HeldOutFit = est.Inserted, est.HeldOut
		if e.OneRun, err = privacy.EpsilonOneRun(e.InsertedStats, e.HeldOutStats, auditConfidence, delta); err != nil {
			return nil, fmt.Errorf("experiments: audit (%s): %w", tm, err)
		}
		rec.Estimates = append(rec.Estimates, e)
	}
	h := rec.Estimates[0]
	rec.ThreatModel, rec.Epsilon, rec.Low, rec.High = h.ThreatModel, h.Epsilon, h.Low, h.High
	rec.OneRunLowerBound, rec.OneRunMethod = results.Float(h.OneRun.Epsilon), oneRunMethod
	return rec, nil
}
