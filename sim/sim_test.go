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
