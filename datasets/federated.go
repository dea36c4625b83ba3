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
	Kind    string  // IID or Dirichlet
	Clients int     // population size
	Alpha   float64 // Dirichlet concentration (Dirichlet only)
}

// NewFederated splits train into clients as spec says, drawing randomness
// from r, and pairs it with the central test set.
func NewFederated(name string, train, test *Dataset, spec PartitionSpec, r *rand.Rand) (*Federated, error) {
	var (
		clients [][]int
		err     error
	)
	switch spec.Kind {
	case IID:
		clients, err = PartitionIID(train.Len(), spec.Clients, r)
	case Dirichlet:
		clients, err = PartitionDirichlet(train.Y, train.Classes, spec.Clients, spec.Alpha, r)
	default:
		return nil, fmt.Errorf("datasets: unknown partition %q (want %q or %q)", spec.Kind, IID, Dirichlet)
	}
	if err != nil {
		return nil, err
	}
	f := &Federated{Name: name, Train: train, Clients: clients, Test: test}
	return f, f.Validate()
}
