package datasets

import (
	"fmt"
	"math/rand/v2"
)

// Partition names accepted by NewFederated.
const (
	IID       = "iid"
	Dirichlet = "dirichlet"
)

// PartitionSpec says how to split a training pool into clients.
type PartitionSpec struct {
	Kind    string  // IID, Dirichlet or Writer
	Clients int     // population size (Writer: 0 means every writer)
	Alpha   float64 // Dirichlet concentration (Dirichlet only)
	// PerClient (IID only) gives every client this many examples, drawn
	// without replacement (Clients × PerClient of the pool; the rest are
	// unused); 0 deals the whole pool.
	PerClient int

	// Writer only (MNIST by NIST writer; see NewWriterFederated).
	QMNISTDir    string  // folder of the QMNIST label files
	TestFraction float64 // held-out share of each writer's examples (0 = 0.1)
}

// NewFederated splits train into clients as spec says, drawing randomness
// from r, and pairs it with the central test set.
func NewFederated(name string, train, test *Dataset, spec PartitionSpec, r *rand.Rand) (*Federated, error) {
	var (
		clients [][]int
		err     error
	)
	switch spec.Kind {
	case Writer:
		f, err := NewWriterFederated(train, test, WriterOptions{QMNISTDir: spec.QMNISTDir, TestFraction: spec.TestFraction, Clients: spec.Clients}, r)
		if f != nil {
			f.Name = name
		}
		return f, err
	case IID:
		n := train.Len()
		if spec.PerClient > 0 {
			if spec.Clients > 0 && spec.PerClient > n/spec.Clients {
				// (compared by division: the product may overflow)
				return nil, fmt.Errorf("datasets: %d clients of %d examples need %.6g examples; the pool has %d", spec.Clients, spec.PerClient, float64(spec.Clients)*float64(spec.PerClient), n)
			}
			n = spec.Clients * spec.PerClient
		}
		clients, err = PartitionIID(n, spec.Clients, r)
		if err == nil && n < train.Len() {
			// PartitionIID dealt a permutation of [0, n): map it onto a
			// random n of the pool.
			pick := r.Perm(train.Len())[:n]
			for _, c := range clients {
				for i := range c {
					c[i] = pick[c[i]]
				}
			}
		}
	case Dirichlet:
		clients, err = PartitionDirichlet(train.Y, train.Classes, spec.Clients, spec.Alpha, r)
	default:
		return nil, fmt.Errorf("datasets: unknown partition %q (want %q, %q or %q)", spec.Kind, IID, Dirichlet, Writer)
	}
	if err != nil {
		return nil, err
	}
	f := &Federated{Name: name, Train: train, Clients: clients, Test: test}
	return f, f.Validate()
}
