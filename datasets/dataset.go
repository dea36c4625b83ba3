package datasets

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Dataset is a set of examples stored row-major: example i has features
// X[i*Dim:(i+1)*Dim] and label Y[i] in [0, Classes).
//
// Sequence data (next-token prediction) also sets Next: example i is a
// sequence of Dim input token ids X[i*Dim:(i+1)*Dim] (stored as float32, exact
// below 2^24) with next-token targets Next[i*Dim:(i+1)*Dim] in [0, Classes);
// Classes is the vocabulary size and target 0 is padding (see PadID). Y is
// then unused by models (zero).
type Dataset struct {
	X       []float32
	Y       []int32
	Dim     int
	Classes int
	Next    []int32 // nil, or len(X) next-token targets (sequence data)
}

// Len reports the number of examples.
func (d *Dataset) Len() int { return len(d.Y) }

// Row returns the features of example i (a view, not a copy).
func (d *Dataset) Row(i int) []float32 { return d.X[i*d.Dim : (i+1)*d.Dim] }

// Subset returns a new dataset holding copies of the examples idx, in order.
func (d *Dataset) Subset(idx []int) *Dataset {
	s := &Dataset{X: make([]float32, len(idx)*d.Dim), Y: make([]int32, len(idx)), Dim: d.Dim, Classes: d.Classes}
	if d.Next != nil {
		s.Next = make([]int32, len(idx)*d.Dim)
	}
	for k, i := range idx {
		copy(s.X[k*d.Dim:], d.Row(i))
		s.Y[k] = d.Y[i]
		if d.Next != nil {
			copy(s.Next[k*d.Dim:], d.Next[i*d.Dim:(i+1)*d.Dim])
		}
	}
	return s
}

// Validate checks the dataset's shape and labels.
func (d *Dataset) Validate() error {
	switch {
	case d.Dim <= 0:
		return fmt.Errorf("datasets: dimension %d must be positive", d.Dim)
	case len(d.X) != len(d.Y)*d.Dim:
		return fmt.Errorf("datasets: %d feature values for %d examples of dimension %d", len(d.X), len(d.Y), d.Dim)
	case d.Classes <= 0:
		return errors.New("datasets: no classes")
	}
	for i, y := range d.Y {
		if y < 0 || int(y) >= d.Classes {
			return fmt.Errorf("datasets: example %d has label %d outside [0, %d)", i, y, d.Classes)
		}
	}
	if d.Next == nil {
		return nil
	}
	if len(d.Next) != len(d.X) {
		return fmt.Errorf("datasets: %d next-token targets for %d input tokens", len(d.Next), len(d.X))
	}
	for i, t := range d.Next {
		if t < 0 || int(t) >= d.Classes {
			return fmt.Errorf("datasets: example %d has target token %d outside [0, %d)", i/d.Dim, t, d.Classes)
		}
		if x := d.X[i]; x < 0 || x >= float32(d.Classes) || x != float32(int32(x)) {
			return fmt.Errorf("datasets: example %d has input token %v, not an id in [0, %d)", i/d.Dim, x, d.Classes)
		}
	}
	return nil
}

// Batch is a fixed-size batch of examples. Rows beyond the real examples are
// padding: their weight W is 0, so a batch of any real size fits one graph.
// Real rows have weight 1/Real, so the weighted loss sum is the mean loss.
type Batch struct {
	X    []float32 // Size*Dim features
	Y    []int32   // Size labels
	W    []float32 // Size weights
	Size int       // rows, including padding
	Real int       // real (non-padding) rows, first in the batch
	Dim  int
	// Next holds Size*Dim next-token targets when the batch was filled from
	// sequence data (Dataset.Next); padding rows get PadID. Nil otherwise.
	Next []int32
}

// NewBatch allocates a batch of size rows for examples of dimension dim.
func NewBatch(size, dim int) *Batch {
	return &Batch{X: make([]float32, size*dim), Y: make([]int32, size), W: make([]float32, size), Size: size, Dim: dim}
}

// Fill loads the examples idx of d into the batch (len(idx) <= b.Size) and
// pads the rest with zero rows of weight 0.
func (b *Batch) Fill(d *Dataset, idx []int) {
	if len(idx) > b.Size || len(idx) == 0 || d.Dim != b.Dim {
		panic(fmt.Sprintf("datasets: Fill %d examples of dimension %d into a batch of %d rows of dimension %d", len(idx), d.Dim, b.Size, b.Dim))
	}
	w := 1 / float32(len(idx))
	if d.Next != nil && len(b.Next) != b.Size*b.Dim {
		b.Next = make([]int32, b.Size*b.Dim)
	}
	if d.Next == nil {
		b.Next = nil
	}
	for k := 0; k < b.Size; k++ {
		row := b.X[k*b.Dim : (k+1)*b.Dim]
		if k < len(idx) {
			copy(row, d.Row(idx[k]))
			b.Y[k], b.W[k] = d.Y[idx[k]], w
			if d.Next != nil {
				copy(b.Next[k*b.Dim:(k+1)*b.Dim], d.Next[idx[k]*d.Dim:(idx[k]+1)*d.Dim])
			}
			continue
		}
		clear(row)
		b.Y[k], b.W[k] = 0, 0
		if d.Next != nil {
			clear(b.Next[k*b.Dim : (k+1)*b.Dim])
		}
	}
	b.Real = len(idx)
}

// Federated is a population of clients over one training pool, plus a central
// test set.
type Federated struct {
	Name    string
	Train   *Dataset // the training pool
	Clients [][]int  // Clients[c] lists the indices in Train owned by client c
	Test    *Dataset
	// ClientTest, when non-nil, holds each client's own held-out examples as
	// indices into Test (natural partitions: writers, authors); Test is then
	// the union of these parts.
	ClientTest [][]int
	// Users, when non-nil, names each client (writer ID, author).
	Users []string
	// Vocab is the vocabulary of a text population (nil otherwise).
	Vocab *Vocab
	// Notes are notices about how the data was read that did not stop it
	// (pinned changelogs missing on this machine).
	Notes []string

	// stream, when not nil, reads the clients' training examples from
	// their file cohort by cohort (Cohorts): Train holds none and Clients
	// is nil. targets then counts the training targets by token id (what
	// MajorityAccuracy needs of Train).
	stream  *tffStream
	targets []int
}

// NumClients reports the population size.
func (f *Federated) NumClients() int {
	if f.stream != nil {
		return len(f.stream.lens)
	}
	return len(f.Clients)
}

// MajorityAccuracy is MajorityAccuracy(f.Train, f.Test), for a streamed
// population too.
func (f *Federated) MajorityAccuracy() (acc float64, ok bool) {
	if f.stream == nil {
		return MajorityAccuracy(f.Train, f.Test)
	}
	if f.Train.Next == nil || f.Train.Classes <= NumSpecial {
		return 0, false
	}
	return majorityScore(f.targets, f.Test)
}

// Validate checks that every client owns at least one example and that no
// example belongs to two clients.
func (f *Federated) Validate() error {
	if err := f.Train.Validate(); err != nil {
		return err
	}
	if err := f.Test.Validate(); err != nil {
		return err
	}
	if f.stream != nil {
		return f.validateClientTest()
	}
	owner := make([]int32, f.Train.Len())
	for c, idx := range f.Clients {
		if len(idx) == 0 {
			return fmt.Errorf("datasets: client %d has no examples", c)
		}
		for _, i := range idx {
			if i < 0 || i >= len(owner) {
				return fmt.Errorf("datasets: client %d owns example %d outside the pool of %d", c, i, len(owner))
			}
			if owner[i] != 0 {
				return fmt.Errorf("datasets: example %d belongs to clients %d and %d", i, owner[i]-1, c)
			}
			owner[i] = int32(c + 1)
		}
	}
	return f.validateClientTest()
}

// validateClientTest checks the clients' held-out parts.
func (f *Federated) validateClientTest() error {
	if f.ClientTest == nil {
		return nil
	}
	if len(f.ClientTest) != f.NumClients() {
		return fmt.Errorf("datasets: %d client test parts for %d clients", len(f.ClientTest), f.NumClients())
	}
	owner := make([]int32, f.Test.Len())
	for c, idx := range f.ClientTest {
		for _, i := range idx {
			if i < 0 || i >= len(owner) {
				return fmt.Errorf("datasets: client %d holds test example %d outside the test set of %d", c, i, len(owner))
			}
			if owner[i] != 0 {
				return fmt.Errorf("datasets: test example %d belongs to clients %d and %d", i, owner[i]-1, c)
			}
			owner[i] = int32(c + 1)
		}
	}
	return nil
}

// SplitValidation draws a share frac (0 < frac < 1) of test's rows, with r,
// as a validation set and returns it and the rest, each in test's order.
// Both keep at least one row.
func SplitValidation(test *Dataset, frac float64, r *rand.Rand) (val, rest *Dataset, err error) {
	n := test.Len()
	k := int(math.Round(frac * float64(n)))
	if !(frac > 0 && frac < 1) || k < 1 || k >= n {
		return nil, nil, fmt.Errorf("a share %v of %d test rows leaves the validation set or the test set empty", frac, n)
	}
	perm := r.Perm(n)
	vi, ri := slices.Clone(perm[:k]), slices.Clone(perm[k:])
	slices.Sort(vi)
	slices.Sort(ri)
	return test.Subset(vi), test.Subset(ri), nil
}

// MajorityAccuracy returns, for next-token text (ok), the accuracy on test
// of always predicting the most frequent in-vocabulary target of train
// (ties to the smaller id), scored as the next-word models score: over the
// targets that are not padding, out-of-vocabulary or end of document.
func MajorityAccuracy(train, test *Dataset) (acc float64, ok bool) {
	if train == nil || test == nil || train.Next == nil || test.Next == nil || train.Classes <= NumSpecial {
		return 0, false
	}
	counts := make([]int, train.Classes)
	for _, t := range train.Next {
		if t >= NumSpecial && int(t) < len(counts) {
			counts[t]++
		}
	}
	return majorityScore(counts, test)
}

// majorityScore is MajorityAccuracy from the training targets' counts by
// token id.
func majorityScore(counts []int, test *Dataset) (acc float64, ok bool) {
	best := int32(NumSpecial)
	for id := NumSpecial; id < len(counts); id++ {
		if counts[id] > counts[best] {
			best = int32(id)
		}
	}
	scored, right := 0, 0
	for _, t := range test.Next {
		if t == PadID || t == OOVID || t == EOSID {
			continue
		}
		scored++
		if t == best {
			right++
		}
	}
	if scored == 0 {
		return 0, false
	}
	return float64(right) / float64(scored), true
}
