package models

import (
	"fmt"
	"math"
)

// The kinds logreg, mlp, cnn, cnn-large and lstm are presets: each expands
// to a layer list whose tensors keep the kind's historical names (W0, b0,
// conv0, emb, …; see Layered), so a preset builds the graph, the layout and
// the initial draws of the kind's hand-built network (dense.go, cnn.go,
// lstm.go) bit for bit, and its runs keep their results.

// named is a layer whose tensors have the given names.
func named(l Layer, names ...string) Layer {
	l.Names = names
	return l
}

// denseStack is logistic regression (no hidden widths) or an MLP.
func denseStack(name string, hidden []int, dim, classes int) (stackSpec, error) {
	var ls []Layer
	for i, h := range hidden {
		ls = append(ls, named(Layer{Type: "dense", Units: h}, fmt.Sprintf("W%d", i), fmt.Sprintf("b%d", i)), Layer{Type: "relu"})
	}
	n := len(hidden)
	ls = append(ls, named(Layer{Type: "dense", Units: classes}, fmt.Sprintf("W%d", n), fmt.Sprintf("b%d", n)), Layer{Type: "xent"})
	sp, err := newStackSpec(ls, dim, classes, 0)
	sp.name = name
	return sp, err
}

// cnnStack is the CNN or CNNLarge preset. Both draw a dropout stream (the
// hand-built CNNs implement Stochastic, with or without dropout layers).
func cnnStack(large bool, dim, channels, classes int) (stackSpec, error) {
	g, err := newCNNGeom(large, dim, channels)
	if err != nil {
		return stackSpec{}, err
	}
	var ls []Layer
	for i, cv := range g.conv {
		conv := Layer{Type: "conv2d", Filters: cv.out, Kernel: cv.k, Stride: cv.stride, Padding: cv.pad}
		ls = append(ls, named(conv, fmt.Sprintf("conv%d", i), fmt.Sprintf("convb%d", i)), Layer{Type: "relu"})
	}
	dropout := func(rate float64) {
		if large {
			ls = append(ls, Layer{Type: "dropout", Rate: rate})
		}
	}
	if large {
		ls = append(ls, Layer{Type: "max-pool"})
	}
	ls = append(ls, Layer{Type: "flatten"})
	dropout(0.25)
	ls = append(ls, named(Layer{Type: "dense", Units: g.hidden}, "W0", "b0"), Layer{Type: "relu"})
	dropout(0.5)
	ls = append(ls, named(Layer{Type: "dense", Units: classes}, "W1", "b1"), Layer{Type: "xent"})
	sp, err := newStackSpec(ls, dim, classes, channels)
	sp.name, sp.stochastic = map[bool]string{false: CNN, true: CNNLarge}[large], true
	return sp, err
}

// lstmStack is the LSTM preset.
func lstmStack(d lstmDims) (stackSpec, error) {
	ls := []Layer{
		named(Layer{Type: "embedding", Dim: d.embed}, "emb"),
		named(Layer{Type: "lstm", Hidden: d.hidden}, "Wx", "Wh", "b"),
		named(Layer{Type: "dense", Units: d.proj}, "Wp", "bp"),
		named(Layer{Type: "dense", Units: d.vocab}, "Wo", "bo"),
		{Type: "token-xent"},
	}
	sp, err := newStackSpec(ls, d.seq, d.vocab, 0)
	sp.name = LSTM
	return sp, err
}

// Layers is the model kind built from the layer list of Spec.Layers.
const Layers = "layers"

func init() { Register(&layersKind) }

var layersKind = Kind{
	Name: Layers, Order: 60, Uses: []string{"layers"},
	Doc: "a list of layers (layers: dense, conv2d, pools, flatten, dropout, activations, norms, embedding, positions, attention, lstm, residual blocks, ending in a head)",
	IsText: func(s Spec) bool {
		if n := len(s.Layers); n > 0 {
			t := lookupLayerType(s.Layers[n-1].Type)
			return t != nil && t.text
		}
		return false
	},
	Validate: func(s Spec, add Problems) {
		if len(s.Layers) == 0 {
			add("layers", "required with kind layers: the list of layers, ending in a head (%v)", layerTypeNames(true))
			return
		}
		validateLayers(s.Layers, "layers", add, true)
	},
	Build: func(s Spec, dim, classes, batch int) (Model, error) {
		sp, err := s.layerStack(dim, classes)
		if err != nil {
			return nil, err
		}
		return buildStack(sp, batch)
	},
	NumParams: func(s Spec, dim, classes int) int {
		sp, err := s.layerStack(dim, classes)
		if err != nil {
			return 0
		}
		sp.batch = 1
		c, err := sp.plan()
		if err != nil || c.paramsF > maxStackParams {
			return 0
		}
		return c.lay.n
	},
	Estimate: estimateLayers,
}

// maxStackParams bounds a layer list's parameters (its flat vector's
// length): a larger one is refused when built.
const maxStackParams = 1 << 31

func (s Spec) layerStack(dim, classes int) (stackSpec, error) {
	sp, err := newStackSpec(s.Layers, dim, classes, s.Channels)
	if err != nil {
		return sp, fmt.Errorf("models: %w", err)
	}
	sp.name = Layers
	return sp, nil
}

// estimateLayers sizes a layer list from its planning pass: its parameters
// and the activations (layer outputs, im2col buffers) of one example.
func estimateLayers(s Spec, dim, classes float64) Estimate {
	e := Estimate{Key: "layers"}
	if !(dim >= 1 && dim <= 1<<30 && classes >= 2 && classes <= 1<<30) {
		return e
	}
	sp, err := s.layerStack(int(dim), int(classes))
	if err != nil {
		return e
	}
	sp.batch = 1
	c := &net{} // planned without plan's bound, which the memory estimate reports
	if _, err := sp.pass(c, nil); err != nil {
		return e
	}
	e.Params = c.paramsF
	e.ActivationBytes = 4 * (activationCopies*c.floats + dim)
	if math.IsInf(e.ActivationBytes, 0) {
		e.ActivationBytes = math.MaxFloat64
	}
	return e
}
