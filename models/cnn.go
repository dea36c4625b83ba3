package models

import (
	"fmt"
	"math"
)

// Convolutional model kinds. Inputs are square images of Spec.Channels
// channels (default 1) stored channel-major in each batch row
// (dim = channels·side·side); inside, feature maps are NHWC and filters
// [out, kh, kw, in] (conv.go).
//
// CNN is the papers' (E)MNIST network (Kairouz et al. 2021 Table 2, after Papernot et al.):
// conv 16 filters 8×8 stride 2, ReLU, conv 32 filters 4×4 stride 2, ReLU,
// dense 32, ReLU, dense classes, softmax. The papers do not give the padding;
// dpfl pads the first conv by 3 and the second by 1 on every side, which is
// TensorFlow's "same" padding for a 28×28 input: 28 → 14 → 7, so the dense
// layer sees 7·7·32 = 1,568 features (59,802 parameters for 10 classes). Any
// even side works (side s → s/2 → ⌈s/4⌉ for s ≡ 0 mod 4).
//
// CNNLarge is the federated-EMNIST CNN of FL papers (McMahan et al.; Reddi et
// al.): conv 32 3×3, ReLU, conv 64 3×3, ReLU (no padding, stride 1), max-pool
// 2×2, dropout 0.25, dense 128, ReLU, dropout 0.5, dense classes, softmax
// (28×28: 1,199,882 parameters for 10 classes, 1,206,590 for 62). Dropout
// masks are inputs drawn from dpfl's RNG (see Stochastic), never Gorgonia's
// clock-seeded Dropout; evaluation uses all-ones masks on the model's own
// graph, so it cannot switch dropout off in another model.
const (
	CNN      = "cnn"
	CNNLarge = "cnn-large"
)

// cnnGeom is the shape bookkeeping of both CNNs.
type cnnGeom struct {
	ch, side int
	flat     int // features entering the first dense layer
	large    bool
	hidden   int // dense width
	conv     [2]struct{ out, k, stride, pad int }
}

func newCNNGeom(large bool, dim, channels int) (cnnGeom, error) {
	if channels <= 0 {
		channels = 1
	}
	side := int(math.Round(math.Sqrt(float64(dim / channels))))
	if dim%channels != 0 || side*side*channels != dim {
		return cnnGeom{}, fmt.Errorf("models: input dimension %d is not %d square channel(s)", dim, channels)
	}
	g := cnnGeom{ch: channels, side: side, large: large}
	if large {
		s := (side - 4) / 2
		if side < 6 {
			return cnnGeom{}, fmt.Errorf("models: %s needs images of side at least 6, got %d", CNNLarge, side)
		}
		g.conv[0].out, g.conv[0].k, g.conv[0].stride = 32, 3, 1
		g.conv[1].out, g.conv[1].k, g.conv[1].stride = 64, 3, 1
		g.flat, g.hidden = 64*s*s, 128
		return g, nil
	}
	if side < 4 || side%2 != 0 {
		return cnnGeom{}, fmt.Errorf("models: %s needs images of even side at least 4, got %d", CNN, side)
	}
	g.conv[0].out, g.conv[0].k, g.conv[0].stride, g.conv[0].pad = 16, 8, 2, 3
	g.conv[1].out, g.conv[1].k, g.conv[1].stride, g.conv[1].pad = 32, 4, 2, 1
	s1 := (side+6-8)/2 + 1
	s2 := (s1+2-4)/2 + 1
	g.flat, g.hidden = 32*s2*s2, 32
	return g, nil
}

// layout lists the parameters: conv filters [out, kh, kw, in] and biases
// [out], then dense W [in, out] and b [out].
func (g cnnGeom) layout(classes int) layout {
	var l layout
	in := g.ch
	for i, c := range g.conv {
		l.add(fmt.Sprintf("conv%d", i), c.out, c.k, c.k, in)
		l.add(fmt.Sprintf("convb%d", i), c.out)
		in = c.out
	}
	l.add("W0", g.flat, g.hidden)
	l.add("b0", g.hidden)
	l.add("W1", g.hidden, classes)
	l.add("b1", classes)
	return l
}

// labels writes the class ids into y (as float32, exact below 2^24).
func labels(y []float32, ids []int32, classes int) {
	for i, c := range ids {
		if c < 0 || int(c) >= classes {
			panic(fmt.Sprintf("models: label %d outside %d classes", c, classes))
		}
		y[i] = float32(c)
	}
}

func argmax(row []float32) int {
	best := 0
	for c := range row {
		if row[c] > row[best] {
			best = c
		}
	}
	return best
}

// Floats per example and input pixel of the CNNs' activations (im2col
// buffers included), measured (experiments' memory estimate).
const (
	cnnFloatsPerPixel      = 256
	cnnLargeFloatsPerPixel = 1600
)

var cnnKind = cnnKindOf(CNN, 30, false, cnnFloatsPerPixel, "the (E)MNIST CNN of the FL papers: two strided convolutions, dense 32 (59,802 parameters on MNIST)")

var cnnLargeKind = cnnKindOf(CNNLarge, 40, true, cnnLargeFloatsPerPixel, "the federated-EMNIST CNN: two 3×3 convolutions, max-pool, dropout, dense 128 (1.2M parameters)")

func init() {
	Register(&cnnKind)
	Register(&cnnLargeKind)
}

func cnnKindOf(name string, order int, large bool, floatsPerPixel float64, doc string) Kind {
	return Kind{
		Name: name, Order: order, Doc: doc,
		Validate: func(s Spec, add Problems) {
			if len(s.Hidden) > 0 {
				add("hidden", "%s has fixed layers (use kind: mlp to choose hidden widths)", name)
			}
		},
		Build: func(s Spec, dim, classes, batch int) (Model, error) {
			sp, err := cnnStack(large, dim, s.Channels, classes)
			if err != nil {
				return nil, err
			}
			return buildStack(sp, batch)
		},
		NumParams: func(s Spec, dim, classes int) int {
			g, err := newCNNGeom(large, dim, s.Channels)
			if err != nil {
				return 0
			}
			return g.layout(classes).n
		},
		Estimate: func(s Spec, dim, classes float64) Estimate {
			// Fixed layers, sized on MNIST.
			var params float64
			if g, err := newCNNGeom(large, 784, s.Channels); err == nil {
				params = float64(g.layout(10).n)
			}
			return Estimate{Params: params, Key: "kind", ActivationBytes: 4 * (floatsPerPixel * dim)}
		},
	}
}
