package sim

import (
	"fmt"
	"math/bits"
	"sync"
)

// NewLocalComms returns the n ranks of an in-process Comm: each is used by
// its own goroutine, and their collectives meet in memory. It runs a
// spread run's code paths (sim.Ranks, a rank 0 and followers) inside one
// process, for tests and for checking an executor without MPI.
func NewLocalComms(n int) []Comm {
	g := &group{n: n, words: make([][]uint64, n), bytes: make([][]byte, n)}
	g.cond = sync.NewCond(&g.mu)
	out := make([]Comm, n)
	for r := range out {
		out[r] = member{g, r}
	}
	return out
}

// group is the meeting point of NewLocalComms's ranks.
type group struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n       int
	arrived int
	gen     int
	words   [][]uint64
	bytes   [][]byte
	drop    bool // for tests' negative controls: sums leave out the ranks above 0
}

// wait is a barrier of the n members (g.mu held).
func (g *group) wait() {
	gen := g.gen
	g.arrived++
	if g.arrived == g.n {
		g.arrived, g.gen = 0, g.gen+1
		g.cond.Broadcast()
		return
	}
	for gen == g.gen {
		g.cond.Wait()
	}
}

type member struct {
	g    *group
	rank int
}

func (m member) Rank() int { return m.rank }
func (m member) Size() int { return m.g.n }

// SumWords implements Comm.
func (m member) SumWords(buf []uint64) error {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.words[m.rank] = buf
	g.wait()
	out := make([]uint64, len(buf))
	var err error
	for r, w := range g.words {
		if len(w) != len(buf) {
			err = fmt.Errorf("sim: rank %d summed %d words, rank %d %d", r, len(w), m.rank, len(buf))
			break
		}
		if g.drop && r > 0 {
			continue
		}
		for i := 0; i+1 < len(w); i += 2 {
			var c uint64
			out[i], c = bits.Add64(out[i], w[i], 0)
			out[i+1] += w[i+1] + c
		}
	}
	g.wait()
	if err != nil {
		return err
	}
	copy(buf, out)
	return nil
}

// Broadcast implements Comm.
func (m member) Broadcast(buf []byte) error {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bytes[m.rank] = buf
	g.wait()
	src := g.bytes[0]
	g.wait()
	if len(src) != len(buf) {
		return fmt.Errorf("sim: rank %d broadcast %d bytes, rank %d expected %d", 0, len(src), m.rank, len(buf))
	}
	copy(buf, src)
	return nil
}
