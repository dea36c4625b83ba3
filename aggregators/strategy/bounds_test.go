package strategy

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dpfl/participation"

	"dpfl/aggregators/strategy/filecache"
)

// TestHugeParticipation: k and b far beyond n (up to the int range) give the
// sensitivity of the patterns n rounds can realize, checked against the
// brute force over those patterns, without loops or buffers of size k or b.
func TestHugeParticipation(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 1; n <= 9; n++ {
		x := gramOf(randomC(r, n, n, true)) // X ≥ 0: the brute force is exact
		tree := NewTree(n, TreeVanilla)
		for _, b := range []int{1, 2, 3, n, n + 1, 1 << 40, math.MaxInt} {
			for _, k := range []int{1 << 40, math.MaxInt} {
				for _, kind := range []participation.Kind{participation.KB, participation.MinSep} {
					p := participation.Schema{Kind: kind, K: k, B: b}.Pattern()
					bb := min(b, n)
					small := participation.Schema{Kind: kind, K: (n + bb - 1) / bb, B: bb}.Pattern()
					brute := math.Sqrt(bruteSens2(x, small))
					got, err := SensitivityOf(x, p)
					want, _ := SensitivityOf(x, small)
					if err != nil || got != want {
						t.Errorf("n=%d %v: %+v (%v), want %+v as for %v", n, p, got, err, want, small)
					}
					if (got.Exact && !near(got.Value, brute, 1e-10*brute)) || got.Value < brute*(1-1e-10) {
						t.Errorf("n=%d %v: %s %v, brute force %v", n, p, got.Method, got.Value, brute)
					}
					ts, err := tree.Sensitivity(p)
					tw := math.Sqrt(bruteSens2(tree.Gram(), participation.Schema{Kind: kind, K: (n + bb - 1) / bb, B: bb}.Pattern()))
					if err != nil || !near(ts.Value, tw, 1e-10*tw) {
						t.Errorf("tree n=%d %v: %v (%v), brute force %v", n, p, ts.Value, err, tw)
					}
					if got := p.MaxIn(n); got != (n+bb-1)/bb {
						t.Errorf("MaxParticipations(%d) of %v = %d", n, p, got)
					}
				}
			}
		}
	}
	v := []float64{3, 1, 4, 1, 5}
	if got := VecSens(v, math.MaxInt, math.MaxInt); got != 5 {
		t.Errorf("VecSens with k, b = MaxInt: %v, want the largest entry 5", got)
	}
	if got, want := VecSens(v, math.MaxInt, 2), VecSens(v, 3, 2); got != want {
		t.Errorf("VecSens k = MaxInt, b = 2: %v, want %v", got, want)
	}
}

// TestMemoryLimit: Build refuses a strategy whose dense matrices are
// estimated above Config.MemoryLimit, with the estimate, and builds it
// below; the estimate grows with n and never overflows.
func TestMemoryLimit(t *testing.T) {
	w := Prefix(64)
	cfg := Config{Workload: w, Participation: participation.AtMostOnce, Bands: 4, MemoryLimit: 1e5} // 3·8·64² = 98,304 bytes fit for identity
	if _, err := Build(context.Background(), "identity", cfg); err != nil {
		t.Errorf("identity within the limit: %v", err)
	}
	_, err := Build(context.Background(), "optimal", cfg)
	if err == nil || !strings.Contains(err.Error(), "strategy: optimal for n = 64 needs an estimated 0.000262 GB (dense 64×64 matrices), above the limit of 0.0001 GB") {
		t.Errorf("optimal above the limit: %v", err)
	}
	for _, name := range Names {
		small, big := MemoryBytes(name, 100, 10), MemoryBytes(name, 1000, 10)
		if !(big > small && small > 0) {
			t.Errorf("%s: MemoryBytes(100) = %g, (1000) = %g", name, small, big)
		}
		if huge := MemoryBytes(name, math.MaxInt, math.MaxInt); !(huge > 1e36) || math.IsInf(huge, 0) {
			t.Errorf("%s: MemoryBytes(MaxInt) = %g", name, huge)
		}
	}
}

// TestCacheWriteFailureWarns: a cache folder that cannot be created is a
// warning, not an error: the strategy is computed, returned and equal to an
// uncached one.
func TestCacheWriteFailureWarns(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var warned []error
	c := &Cache{Store: filecache.Dir(filepath.Join(file, "sub")), Warn: func(err error) { warned = append(warned, err) }}
	w := Prefix(16)
	f, err := c.BandMF(context.Background(), w, 2, LBFGSOptions{})
	if err != nil {
		t.Fatalf("unwritable cache: %v", err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0].Error(), "strategy: cache: mkdir") {
		t.Errorf("warnings %v", warned)
	}
	g, err := (*Cache)(nil).BandMF(context.Background(), w, 2, LBFGSOptions{})
	if err != nil || f.Bands() != g.Bands() || !near(f.Gram().At(3, 2), g.Gram().At(3, 2), 1e-12) {
		t.Errorf("the strategy differs from an uncached one: %v", err)
	}
}
