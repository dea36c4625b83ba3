package models

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

func graphOf(t *testing.T, m Model) *graphModel {
	t.Helper()
	switch mm := m.(type) {
	case *dense:
		return mm.graphModel
	case *cnn:
		return mm.graphModel
	case *lstm:
		return mm.graphModel
	case *stack:
		return mm.graphModel
	case stochasticStack:
		return mm.graphModel
	}
	t.Fatalf("unexpected model type %T", m)
	return nil
}

// TestExecutorMatchesTapeMachine: dpfl's executor computes, bit for bit,
// the loss and gradients Gorgonia's own tape machine computes on the same
// graph (the oracle for the executor's ordering and buffer wiring).
func TestExecutorMatchesTapeMachine(t *testing.T) {
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(13, 14))
			d := tc.data(tc.batch, r)
			m := build(t, tc, d, tc.batch)
			m.Init(r)
			fixMasks(m)
			grad := make([]float32, m.NumParams())
			loss, err := m.Grad(grad, fill(d, tc.batch, seq(0, tc.batch-1)))
			if err != nil {
				t.Fatal(err)
			}
			gm := graphOf(t, m)
			grads, err := G.Grad(lossNode(t, gm), gm.wrt...) // the nodes finish made (Grad is idempotent)
			if err != nil {
				t.Fatal(err)
			}
			vm := G.NewTapeMachine(gm.g)
			defer vm.Close()
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			if got := float64(lossNode(t, gm).Value().Data().(float32)); got != loss {
				t.Fatalf("loss: executor %v, tape machine %v", loss, got)
			}
			for k, n := range grads {
				want := n.Value().Data().([]float32)
				got := gm.lay.view(grad, k)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("gradient of %s[%d]: executor %v, tape machine %v", gm.lay.names[k], i, got[i], want[i])
					}
				}
			}
		})
	}
}

// lossNode finds the graph's loss: the one scalar node of a dpfl op.
func lossNode(t *testing.T, gm *graphModel) *G.Node {
	t.Helper()
	for _, n := range gm.g.AllNodes() {
		if o, ok := n.Op().(*op); ok {
			if _, ok := o.k.(xent); ok {
				return n
			}
		}
	}
	t.Fatal("no loss node")
	return nil
}

// TestGradAllocatesNothing: a training step and an evaluation of every
// model allocate nothing once the model is built.
func TestGradAllocatesNothing(t *testing.T) {
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(15, 16))
			d := tc.data(tc.batch, r)
			m := build(t, tc, d, tc.batch)
			m.Init(r)
			b := fill(d, tc.batch, seq(0, tc.batch))
			grad := make([]float32, m.NumParams())
			step := func() {
				if _, err := m.Grad(grad, b); err != nil {
					t.Fatal(err)
				}
			}
			if n := testing.AllocsPerRun(10, step); n != 0 {
				t.Errorf("Grad: %v allocations per step", n)
			}
			if s, ok := m.(Stochastic); ok { // masks from the caller's RNG
				s.SetRNG(rand.New(rand.NewPCG(1, 1)))
				if n := testing.AllocsPerRun(10, step); n != 0 {
					t.Errorf("Grad with SetRNG: %v allocations per step", n)
				}
			}
			if n := testing.AllocsPerRun(10, func() {
				if _, err := m.Eval(b); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("Eval: %v allocations per call", n)
			}
		})
	}
}
