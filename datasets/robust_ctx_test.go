package datasets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"dpfl/sim/rng"
)

// cancelAfter is a context cancelled by the n-th call of its Err method:
// a load cancelled at every point where a reader looks at its context.
type cancelAfter struct {
	context.Context
	cancel context.CancelFunc
	calls  atomic.Int64
	n      int64
}

func newCancelAfter(n int64) *cancelAfter {
	ctx, cancel := context.WithCancel(context.Background())
	return &cancelAfter{Context: ctx, cancel: cancel, n: n}
}

func (c *cancelAfter) Err() error {
	if c.calls.Add(1) >= c.n {
		c.cancel()
	}
	return c.Context.Err()
}

// TestReadersObserveContext: each reader stops with the context's error
// when the context is cancelled at any of the points where it looks (the
// n-th look, for every n until the load completes), and it looks at least
// once per few thousand records and once per LEAF user, so loading a large
// file stops promptly.
func TestReadersObserveContext(t *testing.T) {
	leaf, _ := femnistData(t, 6)
	tff := writeTFF(t, func(add func(split, client string, proto []byte)) {
		for w := 0; w < 4; w++ {
			for k := 0; k < 3; k++ {
				add("train", fmt.Sprintf("w%d", w), emnistProto(w, k, int64(k)))
			}
			add("test", fmt.Sprintf("w%d", w), emnistProto(w, 9, 1))
		}
	})
	jsonl := filepath.Join(t.TempDir(), "c.jsonl")
	var b bytes.Buffer
	for u := 0; u < 6; u++ {
		for d := 0; d < 5; d++ {
			fmt.Fprintf(&b, `{"user": "u%d", "text": "%s"}`+"\n", u, strings.Repeat(fmt.Sprintf("w%d x%d ", d, u), 20))
		}
	}
	os.WriteFile(jsonl, b.Bytes(), 0o644)
	cfgText := Config{Dataset: "text", TextConfig: TextConfig{Path: jsonl}, TokenConfig: TokenConfig{MinTokens: 10}}
	cfgText.Normalize()
	cfgLEAF := Config{Dataset: "leaf", TextConfig: TextConfig{Path: leaf}}
	cfgLEAF.Normalize()
	for _, c := range []struct {
		name    string
		minLook int64
		load    func(ctx context.Context) error
	}{
		{"TFF load", 3, func(ctx context.Context) error {
			_, err := LoadTFFContext(ctx, tff, TFFEMNIST, FileOptions{})
			return err
		}},
		{"TFF census", 1, func(ctx context.Context) error {
			_, err := CountTFFContext(ctx, tff, TFFEMNIST, FileOptions{})
			return err
		}},
		{"LEAF load", 18, func(ctx context.Context) error { _, err := cfgLEAF.LoadContext(ctx, nil, rng.New(1)); return err }},
		{"LEAF census", 6, func(ctx context.Context) error { _, err := cfgLEAF.PopulationContext(ctx, nil, rng.New(1)); return err }},
		{"text", 2, func(ctx context.Context) error { _, err := cfgText.LoadContext(ctx, nil, rng.New(1)); return err }},
	} {
		var n int64
		for n = 1; ; n++ {
			ctx := newCancelAfter(n)
			err := c.load(ctx)
			if err == nil {
				break
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s cancelled at look %d: %v, want the context's error", c.name, n, err)
			}
			if n > 10000 {
				t.Fatalf("%s never completes", c.name)
			}
		}
		t.Logf("%s: %d looks", c.name, n-1)
		if n-1 < c.minLook {
			t.Errorf("%s looked at its context %d times, want at least %d", c.name, n-1, c.minLook)
		}
	}
}
