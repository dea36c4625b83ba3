package extension

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"dpfl/experiments"
	"dpfl/participation"
)

// A new participation scheme, added as a built-in one is: a type
// implementing participation.Scheme (its guarantee in its doc comment) and
// its registration by name.

// wideMinSep is 2B-min-sep participation. Guarantee: a client takes part at
// most K times, and two of its participations are at least 2B rounds apart.
type wideMinSep struct{}

func init() { participation.Register("wide-minsep", wideMinSep{}, "wide") }

func (wideMinSep) Check(s participation.Schema, _, _, _ int) error {
	if s.K <= 0 || s.B <= 0 {
		return fmt.Errorf("wide-minsep needs k > 0 and b > 0 (have k = %d, b = %d)", s.K, s.B)
	}
	return nil
}

func (wideMinSep) Pattern(s participation.Schema) participation.Pattern {
	return participation.Pattern{MaxParticipations: s.K, MinSeparation: 2 * s.B}
}

func (wideMinSep) Audit(s participation.Schema, sched *participation.Schedule) error {
	last := make(map[int]int)
	count := make(map[int]int)
	for t, ids := range sched.Rounds {
		for _, c := range ids {
			if count[c] > 0 && t-last[c] < 2*s.B || count[c] >= s.K {
				return fmt.Errorf("wide-minsep violated by client %d in round %d", c, t)
			}
			count[c]++
			last[c] = t
		}
	}
	return nil
}

const wideRun = `
name: wide-minsep
seed: 3
rounds: 2
data: {dataset: mnist, partition: iid, clients: 40}
model: {kind: logreg}
client: {batch_size: 10, lr: 0.1, max_examples: 20}
participation: {kind: wide, cohort: 10, k: 2, b: 1}
aggregator: {kind: bandmf, clip: 1.0, noise_multiplier: 1}
privacy: {delta: 1.0e-3}
server: {lr: 1}
`

// TestRegisteredParticipation: a scheme registered from a test file is known
// by its name and its older spelling, a configuration that uses it
// validates, plans, audits and accounts for its pattern, and a run with it
// trains two rounds.
func TestRegisteredParticipation(t *testing.T) {
	if !slices.Contains(participation.Kinds, "wide-minsep") || participation.Canonical("wide") != "wide-minsep" {
		t.Fatalf("wide-minsep is not a scheme: %v", participation.Kinds)
	}
	cfg, _, err := experiments.Load([]byte(wideRun), "wide.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Participation.Kind != "wide-minsep" {
		t.Errorf("kind %q, want the registered name", cfg.Participation.Kind)
	}
	out, err := experiments.Run(context.Background(), cfg, experiments.Options{OutDir: t.TempDir(), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if s.Status != "complete" || s.Rounds != 2 || s.Epsilon == nil || !(*s.Epsilon > 0) {
		t.Errorf("summary: status %q, rounds %d, epsilon %v", s.Status, s.Rounds, s.Epsilon)
	}
	// Two rounds 2b = 2 apart at the least: nobody takes part twice.
	if s.MaxParticipations != 1 || s.Schema != "single" || !strings.HasPrefix(s.Participation, "wide-minsep k=2 b=1, cohort 10 of 40") {
		t.Errorf("participations %d, schema %q, participation %q", s.MaxParticipations, s.Schema, s.Participation)
	}
	sch := participation.Schema{Kind: "wide-minsep", K: 2, B: 2}
	if got := sch.String(); got != "wide-minsep(k=2,b=4)" {
		t.Errorf("String %q", got)
	}
	planner := participation.Planner{Schema: sch, Cohort: 1}
	bad := &participation.Schedule{NumClients: 2, Rounds: [][]int{{0}, {1}, {0}}, Cohort: 1}
	if err := planner.Audit(bad); err == nil || !strings.Contains(err.Error(), "wide-minsep violated") {
		t.Errorf("audit of rounds 0 and 2 under separation 4: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a name registered twice did not panic")
		}
	}()
	participation.Register("wide-minsep", wideMinSep{})
}
