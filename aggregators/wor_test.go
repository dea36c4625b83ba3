package aggregators

import (
	"slices"
	"strings"
	"testing"

	"dpfl/aggregators/strategy"
	"dpfl/participation"
	"dpfl/privacy"
	"dpfl/sim/rng"
)

// worPlan plans a uniform schedule of cohort m from n clients over rounds,
// with availability avail (nil: always).
func worPlan(t *testing.T, n, m, rounds int, avail participation.Availability) (*participation.Schedule, participation.Stats) {
	t.Helper()
	p := participation.Planner{Schema: participation.Schema{Kind: participation.Uniform}, Cohort: m, Avail: avail}
	s, err := p.Plan(n, rounds, rng.New(3))
	if err != nil {
		t.Fatal(err)
	}
	return s, s.Stats()
}

// TestWithoutReplacementMechanism: DP-FedAvg on a uniform schedule with
// every client always available is accounted as t rounds of a Gaussian on a
// sample of the cohort drawn without replacement, at sensitivity 2 (noise
// std 2·sigma·clip); its guarantee is labelled replace-one, the
// unamplified one zero-out.
func TestWithoutReplacementMechanism(t *testing.T) {
	s, st := worPlan(t, 200, 20, 30, nil)
	m, err := NewMechanism(strategy.NewIdentity(30), participation.Schema{Kind: participation.Uniform}, s, st)
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.WithoutReplacement(s)
	if err != nil {
		t.Fatal(err)
	}
	want := privacy.SelfComposed{Event: privacy.SampledWithoutReplacement{PopulationSize: 200, SampleSize: 20, Event: privacy.Gaussian{NoiseMultiplier: 1.5}}, Count: 7}
	if e := w.EventThrough(1.5, 7); e != privacy.Event(want) {
		t.Errorf("event %v, want %v", e, want)
	}
	if !w.Amplified() || w.WholeRun() || w.Sensitivity.Value != 2 || w.NoiseStd(0.5, 1.5) != 1.5 || w.Denominator != 20 {
		t.Errorf("mechanism %+v", w)
	}
	for _, c := range []struct {
		m   *Mechanism
		adj privacy.Adjacency
	}{{w, privacy.ReplaceOne}, {m, privacy.ZeroOut}} {
		a := privacy.NewRDP(nil, privacy.CKS)
		if err := a.Compose(c.m.Event(1), 1); err != nil {
			t.Fatal(err)
		}
		if g, _ := a.Epsilon(1e-5); g.Adjacency != c.adj || !strings.HasSuffix(g.String(), "; "+c.adj.String()+")") {
			t.Errorf("guarantee %v, want adjacency %v", g, c.adj)
		}
	}
}

// TestWithoutReplacementRefused (negative controls): schedules that are
// not a fixed-size uniform draw from the whole population are not
// amplified: a diurnal availability (not every client eligible), a
// minsep cap, a short round, a client drawn twice in a round; nor are
// correlated noise or adaptive clipping.
func TestWithoutReplacementRefused(t *testing.T) {
	id := strategy.NewIdentity(30)
	uni := participation.Schema{Kind: participation.Uniform}
	diurnal, err := participation.NewDiurnal(participation.DiurnalSpec{Peak: 0.8, Trough: 0.05, WindowHours: 4}, 200, rng.New(1))
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]func() (*Mechanism, *participation.Schedule){
		"diurnal": func() (*Mechanism, *participation.Schedule) {
			s, st := worPlan(t, 200, 20, 30, diurnal)
			m, _ := NewMechanism(id, uni, s, st)
			return m, s
		},
		"minsep": func() (*Mechanism, *participation.Schedule) {
			sc := participation.Schema{Kind: participation.MinSep, K: 3, B: 5}
			s, err := participation.Planner{Schema: sc, Cohort: 20}.Plan(200, 30, rng.New(2))
			if err != nil {
				t.Fatal(err)
			}
			m, _ := NewMechanism(id, sc, s, s.Stats())
			return m, s
		},
		"short round": func() (*Mechanism, *participation.Schedule) {
			s, st := worPlan(t, 200, 20, 30, nil)
			m, _ := NewMechanism(id, uni, s, st)
			s.Rounds[4] = s.Rounds[4][:19]
			return m, s
		},
		"repeat": func() (*Mechanism, *participation.Schedule) {
			s, st := worPlan(t, 200, 20, 30, nil)
			m, _ := NewMechanism(id, uni, s, st)
			s.Rounds[2] = slices.Clone(s.Rounds[2])
			s.Rounds[2][1] = s.Rounds[2][0]
			return m, s
		},
		"tree": func() (*Mechanism, *participation.Schedule) {
			s, st := worPlan(t, 200, 20, 30, nil)
			m, _ := NewMechanism(strategy.NewTree(30, strategy.TreeOnline), uni, s, st)
			return m, s
		},
		"adaptive": func() (*Mechanism, *participation.Schedule) {
			s, st := worPlan(t, 200, 20, 30, nil)
			m, _ := NewMechanism(id, uni, s, st)
			m, _ = m.WithClipCount(1)
			return m, s
		},
	}
	for name, f := range bad {
		m, s := f()
		if m == nil {
			t.Fatalf("%s: no mechanism", name)
		}
		w, err := m.WithoutReplacement(s)
		if err == nil || w != nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: amplified (%v)", name, err)
		}
	}
}
