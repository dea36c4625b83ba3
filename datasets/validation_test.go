package datasets

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSplitValidation: the validation and test parts are disjoint, cover the
// test set, keep its order, have the asked share, and depend only on the
// stream; bad shares are refused.
func TestSplitValidation(t *testing.T) {
	n := 101
	d := &Dataset{X: make([]float32, n), Y: make([]int32, n), Dim: 1, Classes: 1000}
	for i := range n {
		d.X[i], d.Y[i] = float32(i), int32(i)
	}
	val, rest, err := SplitValidation(d, 0.3, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if val.Len() != 30 || rest.Len() != 71 {
		t.Fatalf("sizes %d + %d, want 30 + 71", val.Len(), rest.Len())
	}
	all := append(slices.Clone(val.Y), rest.Y...)
	if !slices.IsSorted(val.Y) || !slices.IsSorted(rest.Y) {
		t.Error("the parts do not keep the test set's order")
	}
	slices.Sort(all)
	for i, y := range all {
		if int(y) != i {
			t.Fatalf("the parts are not a partition of the test set: %v", all)
		}
	}
	again, _, _ := SplitValidation(d, 0.3, rand.New(rand.NewPCG(1, 2)))
	other, _, _ := SplitValidation(d, 0.3, rand.New(rand.NewPCG(1, 3)))
	if !slices.Equal(again.Y, val.Y) || slices.Equal(other.Y, val.Y) {
		t.Error("the split is not a function of the stream alone")
	}
	for _, f := range []float64{0, 1, -0.1, 0.001, 0.999} {
		if _, _, err := SplitValidation(d, f, rand.New(rand.NewPCG(1, 2))); err == nil {
			t.Errorf("share %v accepted", f)
		}
	}
}

// TestMajorityAccuracy against a count by hand: the most frequent training
// word is id 7 (ties would go to the smaller id); of the test targets, pad,
// OOV and EOS are not scored.
func TestMajorityAccuracy(t *testing.T) {
	train := &Dataset{Next: []int32{7, 7, 7, 5, 5, 9, OOVID, OOVID, OOVID, OOVID, PadID, PadID, PadID, PadID, PadID}, Dim: 5, Classes: 10}
	test := &Dataset{Next: []int32{7, 5, 7, 9, OOVID, EOSID, PadID, PadID, 7, 6}, Dim: 5, Classes: 10}
	acc, ok := MajorityAccuracy(train, test)
	if !ok || acc != 3.0/6 { // scored: 7 5 7 9 7 6; right: three 7s
		t.Fatalf("majority accuracy %v (%v), want 0.5", acc, ok)
	}
	// Negative control: a test set without the majority word scores 0.
	if acc, _ := MajorityAccuracy(train, &Dataset{Next: []int32{5, 9, 6}, Dim: 3, Classes: 10}); acc != 0 {
		t.Fatalf("without the majority word: %v", acc)
	}
	// Tie between 5 and 7 goes to 5.
	tie := &Dataset{Next: []int32{7, 5, 7, 5}, Dim: 4, Classes: 10}
	if acc, _ := MajorityAccuracy(tie, &Dataset{Next: []int32{5, 5, 7}, Dim: 3, Classes: 10}); acc != 2.0/3 {
		t.Fatalf("tie: %v", acc)
	}
	if _, ok := MajorityAccuracy(&Dataset{Y: []int32{1}, Dim: 1, Classes: 10}, test); ok {
		t.Fatal("images have no majority word accuracy")
	}
}

// TestPerClient: iid with per_client gives every client exactly that many
// distinct examples of the pool, a different subset for another stream;
// asking for more than the pool is an error.
func TestPerClient(t *testing.T) {
	n := 1000
	train := &Dataset{X: make([]float32, n), Y: make([]int32, n), Dim: 1, Classes: 10}
	test := &Dataset{X: make([]float32, 10), Y: make([]int32, 10), Dim: 1, Classes: 10}
	f, err := NewFederated("m", train, test, PartitionSpec{Kind: IID, Clients: 120, PerClient: 1}, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, c := range f.Clients {
		if len(c) != 1 {
			t.Fatalf("a client of %d examples", len(c))
		}
		for _, i := range c {
			if seen[i] || i < 0 || i >= n {
				t.Fatalf("example %d repeated or out of the pool", i)
			}
			seen[i] = true
		}
	}
	if slices.Max(slices.Collect(func(yield func(int) bool) {
		for i := range seen {
			if !yield(i) {
				return
			}
		}
	})) < 500 {
		t.Error("the 120 examples all come from the start of the pool")
	}
	// Negative control: without per_client the whole pool is dealt.
	g, _ := NewFederated("m", train, test, PartitionSpec{Kind: IID, Clients: 120}, rand.New(rand.NewPCG(3, 4)))
	if total := len(slices.Concat(g.Clients...)); total != n {
		t.Fatalf("without per_client %d examples dealt, want %d", total, n)
	}
	if _, err := NewFederated("m", train, test, PartitionSpec{Kind: IID, Clients: 501, PerClient: 2}, rand.New(rand.NewPCG(3, 4))); err == nil {
		t.Fatal("1002 examples from a pool of 1000 accepted")
	}
}
