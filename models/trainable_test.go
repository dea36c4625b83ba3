package models

import (
	"slices"
	"strings"
	"testing"
)

// TestNewTrainable: names and dot-bounded prefixes select the frozen
// tensors (layers.1 does not freeze layers.10), adjacent trained tensors
// merge into one range, Gather and Scatter move exactly the trained
// coordinates, and an entry naming nothing or a list freezing everything
// is an error naming the key.
func TestNewTrainable(t *testing.T) {
	ts := []Tensor{
		{Name: "layers.1.weight", Shape: []int{2, 3}, Offset: 0},
		{Name: "layers.1.bias", Shape: []int{3}, Offset: 6},
		{Name: "layers.10.weight", Shape: []int{3, 2}, Offset: 9},
		{Name: "layers.10.bias", Shape: []int{2}, Offset: 15},
		{Name: "head", Shape: []int{1}, Offset: 17},
	}
	tr, err := NewTrainable(ts, []string{"layers.1", "layers.10.bias"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.Keep, []Range{{9, 15}, {17, 18}}) || tr.Len() != 7 || tr.Total != 18 {
		t.Fatalf("keep %v len %d total %d", tr.Keep, tr.Len(), tr.Total)
	}
	if !slices.Equal(tr.Frozen(), []Range{{0, 9}, {15, 17}}) {
		t.Fatalf("frozen %v", tr.Frozen())
	}
	full := make([]float32, 18)
	for i := range full {
		full[i] = float32(i)
	}
	c := make([]float32, tr.Len())
	tr.Gather(c, full)
	if !slices.Equal(c, []float32{9, 10, 11, 12, 13, 14, 17}) {
		t.Fatalf("gathered %v", c)
	}
	for i := range c {
		c[i] = -c[i]
	}
	tr.Scatter(full, c)
	for i, x := range full {
		trained := 9 <= i && i < 15 || i == 17
		if trained != (x < 0) {
			t.Fatalf("after scatter full[%d] = %v", i, x)
		}
	}
	if tr, err := NewTrainable(ts, nil); tr != nil || err != nil {
		t.Fatalf("nothing frozen: %v, %v", tr, err)
	}
	for _, c := range []struct {
		freeze []string
		want   string
	}{
		{[]string{"head", "layers.1.w"}, `freeze[1]: "layers.1.w" is no tensor's name or name prefix`},
		{[]string{"layers", "head"}, "freeze: every tensor is frozen"},
	} {
		if _, err := NewTrainable(ts, c.freeze); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.freeze, err, c.want)
		}
	}
}
