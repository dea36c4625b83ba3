package extension

import (
	"context"
	"slices"
	"strings"
	"testing"

	"dpfl/experiments"
	"dpfl/participation"
	"dpfl/sim/registry"
	"dpfl/sim/rng"
)

// A new availability kind, added as a built-in one is: its registration by
// name with its validation and how its participation.Availability is built.

// evenClients makes the clients with an even ID available at every time and
// the others never. Its validation, to show that a kind's own validation
// applies, refuses a peak other than 0 or 1.
type evenClients struct{}

func (evenClients) Available(c int, _ float64) bool { return c%2 == 0 }

func init() {
	experiments.RegisterAvailability(experiments.AvailabilityKind{Name: "even-clients",
		Validate: func(a *experiments.AvailabilityConfig, add registry.Problems) {
			if a.Peak != 0 && a.Peak != 1 {
				add("peak", "%v must be 0 or 1 for even-clients", a.Peak)
			}
		},
		Build: func(experiments.AvailabilityConfig, int, rng.Root, string) (participation.Availability, error) {
			return evenClients{}, nil
		}})
}

const evenRun = `
name: even-clients
seed: 3
rounds: 2
data: {dataset: mnist, partition: iid, clients: 40}
model: {kind: logreg}
client: {batch_size: 10, lr: 0.1, max_examples: 20}
participation: {cohort: 10, availability: {kind: even-clients}}
aggregator: {kind: dpfedavg, clip: 1.0, noise_multiplier: 1}
privacy: {delta: 1.0e-3}
server: {lr: 1}
`

// TestRegisteredAvailability: an availability kind registered from a test
// file is a value of participation.availability.kind, its validation
// applies, the planner draws only the clients it makes available, and the
// kinds that need everyone available (Poisson sampling) refuse it.
func TestRegisteredAvailability(t *testing.T) {
	if !slices.Contains(experiments.Availabilities, "even-clients") {
		t.Fatalf("even-clients is not an availability kind: %v", experiments.Availabilities)
	}
	cfg, _, err := experiments.Load([]byte(evenRun), "even.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := experiments.NewPlan(context.Background(), cfg, experiments.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	drawn := 0
	for r, ids := range p.Schedule.Rounds {
		for _, c := range ids {
			drawn++
			if c%2 != 0 {
				t.Errorf("round %d draws client %d, which is never available", r, c)
			}
		}
	}
	if drawn != 20 {
		t.Errorf("drew %d clients in two rounds of 10, want 20", drawn)
	}
	for _, c := range []struct{ old, repl, want string }{
		{"kind: even-clients}", "kind: even-clients, peak: 0.5}", "participation.availability.peak: 0.5 must be 0 or 1"},
		{"kind: even-clients}", "kind: even-clients, file: x.csv}", "participation.availability.file: only availability kind trace reads a file"},
		{"{cohort: 10,", "{kind: poisson, q: 0.2,", "participation.availability.kind: poisson sampling amplifies privacy only when every client is always available"},
	} {
		bad := strings.Replace(evenRun, c.old, c.repl, 1)
		if _, _, err := experiments.Load([]byte(bad), "even.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.repl, err, c.want)
		}
	}
}
