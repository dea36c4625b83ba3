package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"dpfl/aggregators"
	"dpfl/clients"
	"dpfl/datasets"
	"dpfl/models"
	"dpfl/participation"
	"dpfl/sim/rng"
)

// tiny is a synthetic federated dataset (unit tests only).
func tiny() *datasets.Federated {
	r := rand.New(rand.NewPCG(1, 1))
	mk := func(n int) *datasets.Dataset {
		d := &datasets.Dataset{X: make([]float32, n*4), Y: make([]int32, n), Dim: 4, Classes: 3}
		for i := range d.Y {
			d.Y[i] = int32(i % 3)
			for j := 0; j < 4; j++ {
				d.X[i*4+j] = float32(float64(int(d.Y[i])-j) + 0.3*r.NormFloat64())
			}
		}
		return d
	}
	train := mk(120)
	parts, _ := datasets.PartitionIID(120, 12, r)
	return &datasets.Federated{Name: "tiny", Train: train, Clients: parts, Test: mk(30)}
}

func spec(workers int) Spec {
	data := tiny()
	sched, _ := participation.Planner{Schema: participation.Schema{Kind: participation.Uniform}, Cohort: 5}.Plan(12, 6, rng.New(2))
	return Spec{
		Data: data, Model: models.Spec{Kind: models.MLP, Hidden: []int{5}},
		Client:     clients.Config{Epochs: 1, BatchSize: 3, LR: 0.1},
		Schedule:   sched,
		Aggregator: aggregators.NewDPFedAvg(1, 0.5, 5, rng.New(2)),
		Server:     &aggregators.ServerSGD{LR: 1, Momentum: 0.5},
		EvalEvery:  2, EvalBatch: 7, Workers: workers, Root: rng.New(2),
	}
}

// TestWorkerCountDoesNotMatter: the final parameters and every reported
// round are identical for 1, 2 and 4 workers.
func TestWorkerCountDoesNotMatter(t *testing.T) {
	var ref Summary
	var refRounds []Round
	for _, w := range []int{1, 2, 4} {
		var rounds []Round
		sum, err := Run(context.Background(), spec(w), func(r Round) { r.Update = nil; rounds = append(rounds, r) })
		if err != nil {
			t.Fatal(err)
		}
		if len(rounds) != 6 || !rounds[1].Evaluated || rounds[0].Evaluated || !rounds[5].Evaluated {
			t.Fatalf("rounds reported: %+v", rounds)
		}
		if w == 1 {
			ref, refRounds = sum, rounds
			continue
		}
		if !slices.Equal(sum.Params, ref.Params) || !reflect.DeepEqual(rounds, refRounds) {
			t.Fatalf("%d workers differ from 1", w)
		}
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := Run(ctx, spec(2), func(Round) {
		if n++; n == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || n != 2 {
		t.Fatalf("err %v after %d rounds", err, n)
	}
}

// TestCanaryClients: clients claimed by Spec.Canary are not trained (they
// have no data: their IDs are past the data's clients) and their updates are
// aggregated as given: with no noise, one client-free round whose cohort is
// all canaries releases exactly the mean of the canaries' clipped updates,
// and the train loss counts only clients with data. Round.Update is the
// released aggregate, and Summary.Init the initial model.
func TestCanaryClients(t *testing.T) {
	s := spec(2)
	s.Aggregator = aggregators.NewDPFedAvg(1, 0, 3, rng.New(2))
	s.Server = &aggregators.ServerSGD{LR: 1}
	// Round 0: canaries 12, 13, 14 only; round 1: data clients 0, 1 and canary 12.
	s.Schedule = &participation.Schedule{NumClients: 15, Cohort: 3, Rounds: [][]int{{12, 13, 14}, {0, 1, 12}}}
	n := 0
	canary := func(id int, delta []float32) bool {
		if id < 12 {
			return false
		}
		clear(delta)
		delta[id-12] = 2 // clipped to norm 1
		return true
	}
	s.Canary = canary
	var updates [][]float32
	var losses []float64
	sum, err := Run(context.Background(), s, func(r Round) {
		updates = append(updates, slices.Clone(r.Update))
		losses = append(losses, r.TrainLoss)
		n++
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("%d rounds", n)
	}
	want := make([]float32, len(updates[0]))
	for i := 0; i < 3; i++ {
		want[i] = 1.0 / 3
	}
	if !slices.Equal(updates[0], want) {
		t.Errorf("round 0 released %v..., want the canaries' mean %v...", updates[0][:4], want[:4])
	}
	if losses[0] != 0 || !(losses[1] > 0) {
		t.Errorf("train losses %v: want 0 for the canary-only round and the data clients' mean after", losses)
	}
	// theta_2 = init - update_0 - update_1.
	for i := range sum.Params {
		if d := sum.Init[i] - updates[0][i] - updates[1][i] - sum.Params[i]; d > 1e-6 || d < -1e-6 {
			t.Fatalf("parameter %d: init %v - updates != final %v", i, sum.Init[i], sum.Params[i])
		}
	}
}
