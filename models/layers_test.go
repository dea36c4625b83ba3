package models

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestLayerTensorNames: a layer list's tensors are named
// layers.<index>.<name> (nested lists under their block's prefix), in list
// order, end to end over the parameters; NumParams agrees without
// building; the head decides whether the model reads text.
func TestLayerTensorNames(t *testing.T) {
	s := Spec{Layers: imageLayers()}
	s.Normalize()
	if s.Kind != Layers || s.Text() {
		t.Fatalf("kind %q, text %v", s.Kind, s.Text())
	}
	m, err := s.Build(64, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	off := 0
	for _, x := range m.(Layered).Tensors() {
		names = append(names, x.Name)
		if x.Offset != off {
			t.Fatalf("%s at %d, want %d", x.Name, x.Offset, off)
		}
		n := 1
		for _, d := range x.Shape {
			n *= d
		}
		off += n
	}
	want := []string{"layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
		"layers.3.layers.0.weight", "layers.3.layers.0.bias", "layers.8.weight", "layers.8.bias",
		"layers.9.weight", "layers.9.bias", "layers.11.weight", "layers.11.bias"}
	if !slices.Equal(names, want) || off != m.NumParams() || s.NumParams(64, 3) != off {
		t.Fatalf("tensors %v over %d of %d parameters (Spec.NumParams %d)", names, off, m.NumParams(), s.NumParams(64, 3))
	}
	if _, ok := m.(Stochastic); !ok {
		t.Fatal("a list with dropout is not Stochastic")
	}
	rn := Spec{Kind: Layers, Layers: resnetLayers()}
	m, err = rn.Build(64, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	names = names[:0]
	for _, x := range m.(Layered).Tensors() {
		names = append(names, x.Name)
	}
	want = []string{"layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
		"layers.3.layers.0.weight", "layers.3.layers.0.bias", "layers.3.layers.1.weight", "layers.3.layers.1.bias",
		"layers.3.layers.3.weight", "layers.3.layers.3.bias", "layers.3.layers.4.weight", "layers.3.layers.4.bias",
		"layers.3.shortcut.0.weight", "layers.3.shortcut.0.bias", "layers.3.shortcut.1.weight", "layers.3.shortcut.1.bias",
		"layers.6.weight", "layers.6.bias"}
	if !slices.Equal(names, want) {
		t.Fatalf("resnet tensors %v", names)
	}
	text := Spec{Layers: textLayers()}
	text.Normalize()
	if !text.Text() {
		t.Fatal("a token-xent list does not read text")
	}
	if e := text.Estimate(5, 20); e.Params != float64(text.NumParams(5, 20)) || e.Key != "layers" || !(e.ActivationBytes > 0) {
		t.Fatalf("estimate %+v, %d parameters", e, text.NumParams(5, 20))
	}
}

// TestLayerShapeErrors: a list that does not fit its input is refused when
// built, with one line naming the layer (key and type) and both shapes.
func TestLayerShapeErrors(t *testing.T) {
	dense := func(u int) Layer { return Layer{Type: "dense", Units: u} }
	for _, c := range []struct {
		ls   []Layer
		want string
	}{
		{[]Layer{{Type: "residual", Layers: []Layer{dense(5)}}, dense(0), {Type: "xent"}},
			"layers[0] (residual): its layers output 5 features, its input is 64 features: they must match to be added"},
		{[]Layer{{Type: "conv2d", Filters: 2, Kernel: 3}, {Type: "residual", Layers: []Layer{{Type: "flatten"}, {Type: "layer-norm"}}}, {Type: "flatten"}, dense(0), {Type: "xent"}},
			"layers[1] (residual): its layers output 72 features, its input is image 6×6×2"},
		{[]Layer{{Type: "embedding", Dim: 4}, dense(0), {Type: "xent"}},
			"layers[0] (embedding): reads token ids, got 64 features"},
		{[]Layer{{Type: "lstm", Hidden: 4}, dense(0), {Type: "xent"}},
			"layers[0] (lstm): needs a token sequence"},
		{[]Layer{{Type: "conv2d", Filters: 4, Kernel: 3}, {Type: "group-norm", Groups: 3}, {Type: "flatten"}, dense(0), {Type: "xent"}},
			"layers[1] (group-norm): 3 groups do not divide the 4 channels of image 6×6×4"},
		{[]Layer{{Type: "avg-pool", Kernel: 9}, {Type: "flatten"}, dense(0), {Type: "xent"}},
			"layers[0] (avg-pool): a 9×9 window does not fit the input image 8×8×1"},
		{[]Layer{dense(4), {Type: "token-xent"}}, "layers[0] (dense): needs features, got token ids"},
		{[]Layer{{Type: "conv2d", Filters: 2, Kernel: 3, Padding: 1}, {Type: "residual", Layers: []Layer{{Type: "conv2d", Filters: 4, Kernel: 3, Stride: 2, Padding: 1}}, Shortcut: []Layer{{Type: "conv2d", Filters: 4, Kernel: 1}}}, {Type: "flatten"}, dense(0), {Type: "xent"}},
			"layers[1] (residual): its layers output image 4×4×4, its shortcut outputs image 8×8×4: they must match to be added"},
		{[]Layer{{Type: "conv2d", Filters: 2, Kernel: 3, Padding: 1}, {Type: "residual", Layers: []Layer{{Type: "relu"}}, Shortcut: []Layer{{Type: "dense", Units: 3}}}, {Type: "flatten"}, dense(0), {Type: "xent"}},
			"layers[1].shortcut[0] (dense): needs flat features, got image 8×8×2"},
		{[]Layer{{Type: "conv2d", Filters: 2, Kernel: 3}, {Type: "max-pool"}, {Type: "conv2d", Filters: 2, Kernel: 1, Padding: 0, Stride: 2}, {Type: "global-avg-pool"}, {Type: "global-avg-pool"}, dense(0), {Type: "xent"}},
			"layers[4] (global-avg-pool): needs an image, got 2 features"},
	} {
		s := Spec{Kind: Layers, Layers: c.ls}
		_, err := s.Build(64, 3, 2)
		var le *LayerError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &le) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: got %v, want %q", c.ls, err, c.want)
		}
		if s.NumParams(64, 3) != 0 {
			t.Errorf("%v: NumParams %d for a list that does not fit", c.ls, s.NumParams(64, 3))
		}
	}
	// A list too large to hold is refused, not allocated.
	s := Spec{Kind: Layers, Layers: []Layer{{Type: "dense", Units: 1 << 24}, {Type: "dense", Units: 1 << 24}, {Type: "dense"}, {Type: "xent"}}}
	if _, err := s.Build(64, 3, 1); err == nil || !strings.Contains(err.Error(), "parameters, more than") {
		t.Fatalf("huge list: %v", err)
	}
}

// TestLayerBadValuesNeverPanic: a list that was never validated (bad
// values, as a memory estimate of an invalid configuration may see) is
// refused by Build, NumParams and Estimate without panicking.
func TestLayerBadValuesNeverPanic(t *testing.T) {
	for _, l := range []Layer{
		{Type: "conv2d", Filters: 2, Kernel: 3, Padding: -5}, {Type: "conv2d", Filters: 2, Kernel: 3, Stride: -1},
		{Type: "conv2d", Filters: -2, Kernel: 3}, {Type: "conv2d", Filters: 2}, {Type: "avg-pool", Kernel: -1},
		{Type: "avg-pool", Stride: -2}, {Type: "dense", Units: -3}, {Type: "group-norm"}, {Type: "attention"},
		{Type: "dropout", Rate: 2}, {Type: "residual"}, {Type: "embedding"}, {Type: "lstm"}, {Type: "dense", Units: 1 << 40},
		{Type: "relu", Units: 3},
	} {
		for _, text := range []bool{false, true} {
			ls := []Layer{l, {Type: "xent"}}
			dim := 64
			if text {
				ls = []Layer{{Type: "embedding", Dim: 4}, l, {Type: "token-xent"}}
				dim = 5
			}
			s := Spec{Kind: Layers, Layers: ls}
			if _, err := s.Build(dim, 20, 2); err == nil {
				t.Errorf("%+v built", l)
			}
			if n := s.NumParams(dim, 20); n != 0 {
				t.Errorf("%+v: %d parameters", l, n)
			}
			_ = s.Estimate(float64(dim), 20)
		}
	}
}
