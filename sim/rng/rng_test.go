package rng

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestStreamsAreReproducibleAndDistinct(t *testing.T) {
	r := New(42)
	a, b := r.Stream("noise", 3), r.Stream("noise", 3)
	for i := 0; i < 100; i++ {
		if x, y := a.Uint64(), b.Uint64(); x != y {
			t.Fatalf("same stream name gave different values at %d: %d vs %d", i, x, y)
		}
	}
	type name struct {
		label string
		idx   []uint64
	}
	names := []name{{"noise", []uint64{3}}, {"noise", []uint64{4}}, {"noise", []uint64{3, 0}}, {"client", []uint64{3}}, {"noise3", nil}}
	seen := map[uint64]int{}
	for k, n := range names {
		v := r.Stream(n.label, n.idx...).Uint64()
		if j, ok := seen[v]; ok {
			t.Fatalf("streams %v and %v start with the same value", names[j], n)
		}
		seen[v] = k
	}
	if New(1).Stream("x").Uint64() == New(2).Stream("x").Uint64() {
		t.Fatal("different root seeds gave the same stream")
	}
}

func TestSubRootsDoNotCollide(t *testing.T) {
	r := New(7)
	if r.Sub("point", 1).Seed() == r.Sub("point", 2).Seed() {
		t.Fatal("sub roots collide")
	}
	if r.Sub("point", 1).Stream("x").Uint64() != r.Sub("point", 1).Stream("x").Uint64() {
		t.Fatal("sub root not reproducible")
	}
}

// TestFillNormalMoments checks the first two moments of FillNormal; the negative
// control shows the test detects a variance off by 10%.
func TestFillNormalMoments(t *testing.T) {
	const n = 200000
	x := make([]float64, n)
	FillNormal(x, New(1).Stream("moments"))
	mean, m2 := 0.0, 0.0
	for _, v := range x {
		mean += v
		m2 += v * v
	}
	mean /= n
	variance := m2/n - mean*mean
	// Standard errors: mean 1/sqrt(n) = 0.0022, variance sqrt(2/n) = 0.0032; allow 5 SE.
	check := func(mean, variance float64) bool {
		return math.Abs(mean) < 5/math.Sqrt(n) && math.Abs(variance-1) < 5*math.Sqrt(2.0/n)
	}
	if !check(mean, variance) {
		t.Fatalf("mean %g variance %g outside 5 standard errors", mean, variance)
	}
	if check(mean, 1.1*variance) {
		t.Fatal("negative control: a variance 10% too large passed")
	}
}

func TestReseedMatchesStream(t *testing.T) {
	r := New(9)
	var cc rand.ChaCha8
	g := rand.New(&cc)
	r.Reseed(&cc, "noise", 5)
	want := r.Stream("noise", 5)
	for i := 0; i < 10; i++ {
		if a, b := g.NormFloat64(), want.NormFloat64(); a != b {
			t.Fatalf("reseeded generator differs at %d: %v vs %v", i, a, b)
		}
	}
	if n := testing.AllocsPerRun(100, func() { r.Reseed(&cc, "noise", 7) }); n != 0 {
		t.Fatalf("Reseed allocates %v times", n)
	}
}
