package models

import (
	"math/rand/v2"
	"os"
	"testing"

	"dpfl/datasets"
)

// trainEval runs plain SGD on train and returns the test score (Eval's
// counted predictions, on at most 2,000 test examples) before and after.
func trainEval(t *testing.T, spec Spec, train, test *datasets.Dataset, batch, steps int, lr float32) (before, after Score) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 1))
	m, err := spec.Build(train.Dim, train.Classes, batch)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(r)
	acc := func() Score {
		var s Score
		b := datasets.NewBatch(batch, test.Dim)
		for lo := 0; lo < min(test.Len(), 2000); lo += batch {
			b.Fill(test, seq(lo, min(lo+batch, test.Len())))
			sc, err := m.Eval(b)
			if err != nil {
				t.Fatal(err)
			}
			s.Add(sc)
		}
		return s
	}
	before = acc()
	grad := make([]float32, m.NumParams())
	b := datasets.NewBatch(batch, train.Dim)
	idx := make([]int, batch)
	for step := 0; step < steps; step++ {
		for i := range idx {
			idx[i] = r.IntN(train.Len())
		}
		b.Fill(train, idx)
		if _, err := m.Grad(grad, b); err != nil {
			t.Fatal(err)
		}
		for i, g := range grad {
			m.Params()[i] -= lr * g
		}
	}
	return before, acc()
}

// TestRealDataLong trains the CNNs on real MNIST and the LSTM on this
// machine's Debian changelogs for a few hundred steps (DPFL_LONG=1; minutes).
// Thresholds are loose: MNIST CNN accuracy at least 0.85 after 300 steps of
// batch 32; next-word accuracy at least doubles from its initial value.
func TestRealDataLong(t *testing.T) {
	if os.Getenv("DPFL_LONG") == "" {
		t.Skip("trains on real data for minutes; set DPFL_LONG=1 to run")
	}
	train, test, err := datasets.LoadMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{CNN, CNNLarge} {
		before, after := trainEval(t, Spec{Kind: k}, train, test, 32, 300, 0.05)
		t.Logf("%s on MNIST: accuracy %.3f -> %.3f", k, acc(before), acc(after))
		if acc(after) < 0.85 {
			t.Errorf("%s: accuracy %.3f after 300 steps", k, acc(after))
		}
	}
	docs, err := datasets.ReadDebianChangelogs("")
	if err != nil {
		t.Skipf("no Debian changelogs: %v", err)
	}
	f, err := datasets.NewTextFederated("debian", docs, datasets.TextOptions{}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	before, after := trainEval(t, Spec{Kind: LSTM}, f.Train, f.Test, 16, 600, 1)
	lb, la := before.LossSum/float64(before.Count), after.LossSum/float64(after.Count)
	t.Logf("lstm on Debian changelogs: loss %.3f -> %.3f, accuracy %.3f -> %.3f (targets not PAD/OOV/EOS)", lb, la, acc(before), acc(after))
	// Early on the argmax is OOV (about 30%% of word targets), which never
	// counts as correct; the loss on counted targets must still fall at least
	// 0.3 nats below the initial (about uniform, ln V) value.
	if la > lb-0.3 {
		t.Errorf("lstm: loss %.3f -> %.3f", lb, la)
	}
}

func acc(s Score) float64 { return float64(s.Correct) / float64(s.Count) }
