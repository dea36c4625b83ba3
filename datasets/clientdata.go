package datasets

import (
	"context"
	"errors"
)

// ClientData serves a population's training examples by client, one
// cohort at a time: a run asks for the current cohort's clients and reads
// their examples, so that a population need not be held in memory. A
// Federated value read into memory serves them from Train and Clients; a
// streamed TensorFlow Federated file (FileOptions.Stream) reads each
// cohort's clients from the file. Both give a client the same examples in
// the same order.
type ClientData interface {
	// Len is the number of training examples of client id (any client of
	// the population, fetched or not).
	Len(id int) int
	// Fetch makes the examples of the clients ids available to Examples
	// until a later Fetch asks for clients it does not hold; ids at or
	// beyond the population (an audit's canaries) are skipped. next, when
	// not nil, is the cohort likely asked for next: it may be read in the
	// background meanwhile.
	Fetch(ctx context.Context, ids, next []int) error
	// Examples returns the dataset holding the training examples of client
	// id, fetched before, and their rows in it, in the client's order. The
	// dataset and rows are read only; they stay valid until the next Fetch.
	// It is safe for concurrent use.
	Examples(id int) (*Dataset, []int)
	// Close releases what the examples are read from (a file); a later
	// Fetch opens it again.
	Close() error
}

// Cohorts returns the seam through which a run reads its clients'
// training examples (see ClientData).
func (f *Federated) Cohorts() ClientData {
	if f.stream != nil {
		return f.stream
	}
	return memClients{f}
}

// Streamed reports whether the clients' training examples stay in their
// file and are read cohort by cohort (Cohorts); Train then holds no
// example and Clients is nil.
func (f *Federated) Streamed() bool { return f.stream != nil }

// Close releases the file a streamed population reads from (nothing for
// one in memory).
func (f *Federated) Close() error {
	if f.stream == nil {
		return nil
	}
	return f.stream.Close()
}

// memClients serves the clients of a population held in memory.
type memClients struct{ f *Federated }

func (m memClients) Len(id int) int                            { return len(m.f.Clients[id]) }
func (m memClients) Fetch(context.Context, []int, []int) error { return nil }
func (m memClients) Examples(id int) (*Dataset, []int)         { return m.f.Train, m.f.Clients[id] }
func (m memClients) Close() error                              { return nil }

// errNotFetched is the error of Examples on a client no Fetch asked for
// (a caller's bug).
var errNotFetched = errors.New("datasets: examples of a client that was not fetched")
