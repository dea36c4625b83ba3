package models

import "testing"

// TestTensorsCoverParams: every kind names its parameter tensors, and they
// lie end to end over the whole parameter vector (what model.safetensors
// relies on), with the documented names first and last.
func TestTensorsCoverParams(t *testing.T) {
	cases := []struct {
		spec         Spec
		dim, classes int
		first, last  string
	}{
		{Spec{Kind: "logreg"}, 784, 10, "W0", "b0"},
		{Spec{Kind: "mlp", Hidden: []int{8, 4}}, 784, 10, "W0", "b2"},
		{Spec{Kind: "cnn"}, 784, 10, "conv0", "b1"},
		{Spec{Kind: "cnn-large"}, 784, 62, "conv0", "b1"},
		{Spec{Kind: "lstm", Hidden: []int{6}, Embed: 4, Proj: 3}, 5, 20, "emb", "bo"},
	}
	for _, c := range cases {
		c.spec.Normalize()
		m, err := c.spec.Build(c.dim, c.classes, 2)
		if err != nil {
			t.Fatal(err)
		}
		ts := m.(Layered).Tensors()
		off := 0
		for _, x := range ts {
			n := 1
			for _, d := range x.Shape {
				n *= d
			}
			if x.Offset != off {
				t.Errorf("%s: tensor %s at %d, want %d", c.spec.Kind, x.Name, x.Offset, off)
			}
			off += n
		}
		if off != m.NumParams() || ts[0].Name != c.first || ts[len(ts)-1].Name != c.last {
			t.Errorf("%s: tensors %v cover %d of %d parameters", c.spec.Kind, ts, off, m.NumParams())
		}
	}
}
