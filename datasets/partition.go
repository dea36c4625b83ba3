package datasets

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"
)

// PartitionIID shuffles the n examples and deals them into the given number of
// clients; shard sizes differ by at most one.
func PartitionIID(n, clients int, r *rand.Rand) ([][]int, error) {
	if clients <= 0 || clients > n {
		return nil, fmt.Errorf("datasets: cannot split %d examples into %d clients", n, clients)
	}
	perm := r.Perm(n)
	out := make([][]int, clients)
	for c := range out {
		lo, hi := c*n/clients, (c+1)*n/clients
		out[c] = append([]int(nil), perm[lo:hi]...)
	}
	return out, nil
}

// PartitionDirichlet gives every client the same number of examples,
// floor(n/clients), with a label mix drawn from a symmetric Dirichlet(alpha)
// over the classes (small alpha: few labels per client; large alpha: close to
// IID). Each example is drawn without replacement from the pool of its class;
// when a class runs out, the client's remaining draws are spread over the
// classes it still has in proportion to its mix. Leftover examples are unused.
func PartitionDirichlet(labels []int32, classes, clients int, alpha float64, r *rand.Rand) ([][]int, error) {
	n := len(labels)
	if clients <= 0 || clients > n {
		return nil, fmt.Errorf("datasets: cannot split %d examples into %d clients", n, clients)
	}
	if !(alpha > 0) {
		return nil, fmt.Errorf("datasets: Dirichlet alpha %v must be positive", alpha)
	}
	pools := make([][]int, classes)
	for i, y := range labels {
		pools[y] = append(pools[y], i)
	}
	for _, p := range pools {
		r.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	}
	gamma := distuv.Gamma{Alpha: alpha, Beta: 1, Src: r}
	size := n / clients
	mix := make([]float64, classes)
	out := make([][]int, clients)
	for c := range out {
		for k := range mix {
			mix[k] = gamma.Rand()
		}
		idx := make([]int, 0, size)
		for len(idx) < size {
			// Weights: the client's mix on the classes that still have
			// examples; uniform over them if the mix has no mass there.
			total, live := 0.0, 0
			for j, p := range pools {
				if len(p) > 0 {
					total += mix[j]
					live++
				}
			}
			u := r.Float64()
			if total > 0 {
				u *= total
			} else {
				u *= float64(live)
			}
			k := -1
			for j, p := range pools {
				if len(p) == 0 {
					continue
				}
				k = j
				w := 1.0
				if total > 0 {
					w = mix[j]
				}
				if u -= w; u < 0 {
					break
				}
			}
			p := pools[k]
			idx = append(idx, p[len(p)-1])
			pools[k] = p[:len(p)-1]
		}
		out[c] = idx
	}
	return out, nil
}
