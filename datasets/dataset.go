package datasets

import (
	"errors"
	"fmt"
)

// Dataset is a set of examples stored row-major: example i has features
// X[i*Dim:(i+1)*Dim] and label Y[i] in [0, Classes).
type Dataset struct {
	X       []float32
	Y       []int32
	Dim     int
	Classes int
}

// Len reports the number of examples.
func (d *Dataset) Len() int { return len(d.Y) }

// Row returns the features of example i (a view, not a copy).
func (d *Dataset) Row(i int) []float32 { return d.X[i*d.Dim : (i+1)*d.Dim] }

// Subset returns a new dataset holding copies of the examples idx, in order.
func (d *Dataset) Subset(idx []int) *Dataset {
	s := &Dataset{X: make([]float32, len(idx)*d.Dim), Y: make([]int32, len(idx)), Dim: d.Dim, Classes: d.Classes}
	for k, i := range idx {
		copy(s.X[k*d.Dim:], d.Row(i))
		s.Y[k] = d.Y[i]
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
	for k := 0; k < b.Size; k++ {
		row := b.X[k*b.Dim : (k+1)*b.Dim]
		if k < len(idx) {
			copy(row, d.Row(idx[k]))
			b.Y[k], b.W[k] = d.Y[idx[k]], w
			continue
		}
		clear(row)
		b.Y[k], b.W[k] = 0, 0
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
}

// NumClients reports the population size.
func (f *Federated) NumClients() int { return len(f.Clients) }

// Validate checks that every client owns at least one example and that no
// example belongs to two clients.
func (f *Federated) Validate() error {
	if err := f.Train.Validate(); err != nil {
		return err
	}
	if err := f.Test.Validate(); err != nil {
		return err
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
	return nil
}
