package experiments

import (
	"fmt"
	"strings"
	"testing"

	"dpfl/datasets"
)

// explicitBase is a valid configuration the explicit-value tests add
// sections to.
const explicitBase = `name: p
rounds: 20
data: {dataset: mnist, partition: iid, clients: 6000}
model: {kind: logreg}
participation: {kind: kb, k: 2, b: 5, cohort: 100}
privacy: {epsilon: 4, delta: 1.0e-5}
`

// A key written as 0 whose default is not 0 is refused, naming its file,
// line and key; it is never silently replaced by the default.
func TestExplicitZeroRefused(t *testing.T) {
	cases := []struct {
		key, section string // the key's path; the sections to add, with the key set to %v
	}{
		{"server.tau", "aggregator: {clip: 1}\nserver: {lr: 1, optimizer: adam, tau: %v}"},
		{"server.tau", "aggregator: {clip: 1}\nserver: {lr: 1, optimizer: yogi, tau: %v}"},
		{"server.tau", "aggregator: {clip: 1}\nserver: {lr: 1, optimizer: adagrad, tau: %v}"},
		{"aggregator.clip_lr", "aggregator: {clip: 1, clip_quantile: 0.5, clip_lr: %v}\nserver: {lr: 1}"},
		{"client.epochs", "aggregator: {clip: 1}\nserver: {lr: 1}\nclient: {lr: 0.1, epochs: %v}"},
		{"eval.every", "aggregator: {clip: 1}\nserver: {lr: 1}\neval: {batch: 500, every: %v}"},
		{"participation.clock.round_minutes", "aggregator: {clip: 1}\nserver: {lr: 1}\nparticipation: {kind: kb, k: 2, b: 5, cohort: 100, clock: {start_hour: 1, round_minutes: %v}}"},
	}
	for _, k := range []string{"gradient_share", "select_share", "budget_growth", "step_candidates", "max_step", "step_every", "loss_clip"} {
		cases = append(cases, struct{ key, section string }{"aggregator." + k, "aggregator: {kind: dp-agd, clip: 1, " + k + ": %v}"})
	}
	for _, c := range cases {
		base := explicitBase
		if strings.Contains(c.section, "participation:") {
			base = strings.Replace(base, "participation: {kind: kb, k: 2, b: 5, cohort: 100}\n", "", 1)
		}
		if !strings.Contains(c.section, "client:") {
			base += "client: {lr: 0.1}\n"
		}
		if strings.Contains(c.section, "dp-agd") {
			base = strings.Replace(base, "{kind: kb, k: 2, b: 5, cohort: 100}", "{kind: uniform, cohort: 100}", 1)
		}
		// Left out, the default applies and the configuration is valid.
		omitted := strings.Replace(c.section, ", "+c.key[strings.LastIndex(c.key, ".")+1:]+": %v", "", 1)
		if _, _, err := Load([]byte(base+omitted+"\n"), "p.yaml"); err != nil {
			t.Fatalf("%s left out: %v", c.key, err)
		}
		data := base + fmt.Sprintf(c.section, 0) + "\n"
		name := c.key[strings.LastIndex(c.key, ".")+1:]
		line := strings.Count(data[:strings.Index(data, name+": 0")], "\n") + 1
		_, _, err := Load([]byte(data), "p.yaml")
		want := fmt.Sprintf("p.yaml:%d: %s: ", line, c.key)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: 0 written: err = %v, want a problem starting %q", c.key, err, want)
		}
	}
}

// Decoding problems (a typo'd key, a bad value) and validation problems (a
// missing privacy.delta) are reported together; a validation problem that
// only follows from a bad value is not reported besides it.
func TestDecodeAndValidationProblemsTogether(t *testing.T) {
	data := explicitBase + "client: {lr: 0.1, epochs: many}\naggregator: {clip: 1, clpi: 2}\nserver: {lr: 1}\n"
	data = strings.Replace(data, ", delta: 1.0e-5", "", 1)
	_, _, err := Load([]byte(data), "p.yaml")
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		`p.yaml:7: client.epochs: cannot use "many" as an integer`,
		`p.yaml:8: aggregator.clpi: unknown key "clpi"`,
		"p.yaml:6: privacy.delta: required for a private run (a probability in (0, 1), below 1/6000 = 0.00017)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	// A bad value is left out, not taken as a 0 (data.min_tokens: 0 would
	// be refused on its own).
	text := strings.NewReplacer("epochs: many", "epochs: 1", "{dataset: mnist, partition: iid, clients: 6000}", "{dataset: debian, min_tokens: x}", "{kind: logreg}", "{kind: lstm}").Replace(data)
	_, _, err = Load([]byte(text), "p.yaml")
	if err == nil || strings.Count(err.Error(), "data.min_tokens") != 1 {
		t.Errorf("a bad data.min_tokens reported other than once:\n%v", err)
	}
	if n := strings.Count(msg, "client.epochs"); n != 1 {
		t.Errorf("client.epochs reported %d times (want once, by the decoder):\n%s", n, msg)
	}
}

// The missing-delta message gives the bound computed from the data when the
// data determines the population (here 12 LEAF writers), with the canaries.
func TestMissingDeltaNamesPopulation(t *testing.T) {
	leaf := leafFEMNIST(t)
	data := strings.Replace(fileRun("leaf", leaf, "logreg", ""), "  noise_multiplier: 0\n", "  noise_multiplier: 1\n", 1)
	_, _, err := Limits{Data: new(datasets.Loader)}.Load([]byte(data), "f.yaml")
	if want := "privacy.delta: required for a private run (a probability in (0, 1), below 1/12 = 0.083)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
	_, _, err = Limits{Data: new(datasets.Loader)}.Load([]byte(data+"audit: {canaries: 8}\n"), "f.yaml")
	if want := "below 1/20 = 0.05)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("with 8 canaries: err = %v, want %q", err, want)
	}
	// In a grid, the points share the count.
	_, err = Limits{Data: new(datasets.Loader)}.ParseGrid([]byte(data+"grid:\n  seed: [1, 2, 3]\n"), "f.yaml")
	if want := "every grid point (3): f.yaml: privacy.delta: required for a private run (a probability in (0, 1), below 1/12 = 0.083)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("grid: err = %v, want %q", err, want)
	}
	_, _, err = Load([]byte(data), "f.yaml")
	if want := "below 1/population"; err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "data.clients") {
		t.Errorf("without a loader: err = %v, want %q and no data.clients", err, want)
	}
}

// A grid with two different mistakes reports each once, with the points it
// affects, however many points share it.
func TestGridDistinctProblemsOnce(t *testing.T) {
	grid := explicitBase + "server: {lr: 1}\n" + `grid:
  aggregator: [{clip: 1}, {clip: 1, clpi: 2}]
  privacy.epsilon: [1, 2, 4, 8, 16, 32, 64]
zip:
  - client: [{lr: -0.1}, {lr: 0.1}]
    eval.every: [1, 2]
`
	_, err := ParseGrid([]byte(grid), "g.yaml")
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		"grid points 15-28 (14 of 28): g.yaml:9: aggregator.clpi: unknown key \"clpi\"",
		"grid points 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27 (14 of 28): g.yaml:",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	if lines := strings.Split(msg, "\n"); len(lines) != 2 {
		t.Errorf("%d lines, want one per distinct problem (2):\n%s", len(lines), msg)
	}
}

// Numbers whose products or sums overflow, or that are outside what the
// code can use, are refused with the key that sets them.
func TestNumericExtremesRefused(t *testing.T) {
	withDelta := explicitBase + "client: {lr: 0.1}\n"
	cases := []struct{ edit, want string }{
		{"aggregator: {clip: 1}\nserver: {lr: 1}\ndata: {dataset: mnist, partition: iid, clients: 4, per_client: 4611686018427387929}",
			"p.yaml:9: data.per_client: data.clients 4 × per_client 4611686018427387929 = 1.84467e+19 examples; MNIST has 60000"},
		{"aggregator: {kind: dp-agd, clip: 1, step_candidates: 1000000000}",
			"aggregator.step_candidates: 1000000000 is more than 100"},
		{"aggregator: {clip: 1, clip_quantile: 0.5, clip_count_stddev: 1e-300}\nserver: {lr: 1}",
			"aggregator.clip_count_stddev: 1e-300 is below 1e-100"},
		{"aggregator: {clip: 1}\nserver: {lr: 1, optimizer: adam, tau: 1e-200}", "server.tau: 1e-200 is out of range"},
		{"aggregator: {clip: 1}\nserver: {lr: 1, optimizer: yogi, tau: 1e+200}", "server.tau: 1e+200 is out of range"},
		{"aggregator: {clip: 1}\nserver: {lr: 1}\nparticipation: {kind: uniform, cohort: 100, clock: {round_minutes: 1e308}}",
			"participation.clock.round_minutes: 1e+308 is too long"},
		{"aggregator: {clip: 1}\nserver: {lr: 1}\ndata: {dataset: mnist, partition: iid, clients: 9223372036854775000}\naudit: {canaries: 9000}",
			"data.clients: the run needs an estimated"},
	}
	for _, c := range cases {
		base := withDelta
		for _, sec := range []string{"data", "participation"} {
			if strings.Contains(c.edit, sec+":") {
				lines := strings.Split(base, "\n")
				for i, l := range lines {
					if strings.HasPrefix(l, sec+":") {
						lines = append(lines[:i], lines[i+1:]...)
						break
					}
				}
				base = strings.Join(lines, "\n")
			}
		}
		if strings.Contains(c.edit, "dp-agd") {
			base = strings.Replace(base, "{kind: kb, k: 2, b: 5, cohort: 100}", "{kind: uniform, cohort: 100}", 1)
		}
		_, _, err := Load([]byte(base+c.edit+"\n"), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %q", c.edit, err, c.want)
		}
		if err != nil && strings.Contains(c.edit, "canaries") && strings.Contains(err.Error(), "cannot be drawn from") {
			t.Errorf("%s: an overflowed population is reported: %v", c.edit, err)
		}
	}
}

// A grid's own problems (a bad axis) and its points' problems are
// reported together.
func TestGridAxisAndPointProblemsTogether(t *testing.T) {
	grid := strings.Replace(explicitBase, ", delta: 1.0e-5", "", 1) + "client: {lr: 0.1}\naggregator: {clip: 1}\nserver: {lr: 1}\n" + `grid:
  aggregator.kindd: [tree]
  seed: [1, 2]
`
	_, err := ParseGrid([]byte(grid), "g.yaml")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{`g.yaml:11: grid.aggregator.kindd: unknown key "kindd" under aggregator`, "every grid point (2): g.yaml:6: privacy.delta: required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// A delta of at least 1/data.clients is refused with the other problems,
// not only once the run is planned.
func TestLargeDeltaWithOtherProblems(t *testing.T) {
	data := strings.Replace(explicitBase, "delta: 1.0e-5", "delta: 1.0e-3", 1) + "client: {lr: 0.1}\naggregator: {clip: 1, clpi: 2}\nserver: {lr: 1}\n"
	data = strings.Replace(data, "clients: 6000", "clients: 1000", 1)
	_, _, err := Load([]byte(data), "p.yaml")
	for _, want := range []string{`p.yaml:8: aggregator.clpi: unknown key`, "p.yaml:6: privacy.delta: 0.001 is not below 1/population = 1/1000"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// A value left out for being bad does not bring problems of its own
// default: a duplicated participation.kind (the second dropped) does not
// make k and b "unused", and a bad rounds does not make eval.every
// "required".
func TestBadValueBringsNoConsequentialProblems(t *testing.T) {
	base := explicitBase + "client: {lr: 0.1}\naggregator: {clip: 1}\nserver: {lr: 1}\n"
	for _, c := range []struct{ from, to, want string }{
		{"{kind: kb, k: 2, b: 5, cohort: 100}", "{kind: uniform, kind: kb, k: 2, b: 5, cohort: 100}", "participation.kind: given twice"},
		{"rounds: 20", "rounds: x", `rounds: cannot use "x" as an integer`},
	} {
		_, _, err := Load([]byte(strings.Replace(base, c.from, c.to, 1)), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), "\n") != 0 {
			t.Errorf("%s: got\n%v\nwant the one line %q", c.to, err, c.want)
		}
	}
}
