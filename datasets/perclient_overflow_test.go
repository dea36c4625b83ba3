package datasets

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// A per-client count whose product with the clients overflows int is
// refused, not wrapped around to a small pool (4 × 4611686018427387929
// wraps to 100).
func TestPerClientOverflowRefused(t *testing.T) {
	n := 1000
	train := &Dataset{X: make([]float32, n), Y: make([]int32, n), Dim: 1, Classes: 10}
	test := &Dataset{X: make([]float32, 10), Y: make([]int32, 10), Dim: 1, Classes: 10}
	_, err := NewFederated("m", train, test, PartitionSpec{Kind: IID, Clients: 4, PerClient: 4611686018427387929}, rand.New(rand.NewPCG(3, 4)))
	if err == nil || !strings.Contains(err.Error(), "the pool has 1000") {
		t.Fatalf("err = %v, want the pool refused", err)
	}
	var probs []string
	c := Config{Dataset: "mnist", Partition: IID, Clients: 4}
	c.PerClient = 4611686018427387929
	c.Validate(func(key, format string, args ...any) { probs = append(probs, key) }, func(string) bool { return true })
	if !strings.Contains(strings.Join(probs, ","), "per_client") {
		t.Errorf("validation problems %v, want per_client", probs)
	}
}
