package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	G "gorgonia.org/gorgonia"
)

// Layer is one entry of a model's layer list (the model section's key
// layers, kind layers): its type and the keys that type reads (layerTypes
// lists which). A key the type does not read must be unset; unset keys are
// left out when a run writes its config.yaml.
type Layer struct {
	Type    string  `yaml:"type"`
	Units   int     `yaml:"units,omitempty"`   // dense: output width (unset: the number of classes, or the vocabulary)
	Filters int     `yaml:"filters,omitempty"` // conv2d: output channels
	Kernel  int     `yaml:"kernel,omitempty"`  // conv2d: side of the square kernel; pools: window side (default 2)
	Stride  int     `yaml:"stride,omitempty"`  // conv2d: default 1; pools: default the kernel
	Padding int     `yaml:"padding,omitempty"` // conv2d: zero rows and columns added on every side
	Rate    float64 `yaml:"rate,omitempty"`    // dropout: probability of dropping a unit
	Dim     int     `yaml:"dim,omitempty"`     // embedding: vector width
	Hidden  int     `yaml:"hidden,omitempty"`  // lstm: recurrent width
	Groups  int     `yaml:"groups,omitempty"`  // group-norm: channel groups
	Heads   int     `yaml:"heads,omitempty"`   // attention: heads (dividing the width)
	Layers  []Layer `yaml:"layers,omitempty"`  // residual: the layers whose output is added to their input
	// Shortcut (residual): the layers applied to the block's input on the
	// skip path (a 1×1 conv2d with a stride, a group-norm) when the block
	// changes its input's shape; unset: the input itself.
	Shortcut []Layer `yaml:"shortcut,omitempty"`
	// Names overrides the names of the layer's tensors, in the layer's
	// parameter order (the presets keep their historical names); not a
	// configuration key.
	Names []string `yaml:"-"`
}

// act is the shape of one row group of activations: per example (a
// classifier's row) or per token (a sequence model's rows, time-major).
type act struct {
	feat    int  // values per row
	h, w, c int  // an image (h > 0): feat = h·w·c, NHWC unless nchw
	nchw    bool // channel-major (the model's input image)
	ids     bool // token ids (the sequence model's input)
	raw     bool // the classifier's input vector, which may be read as an image
}

func (a act) String() string {
	switch {
	case a.ids:
		return "token ids"
	case a.h > 0:
		return fmt.Sprintf("image %d×%d×%d", a.h, a.w, a.c)
	}
	return fmt.Sprintf("%d features", a.feat)
}

// val is a layer's input or output: its shape and, when building, its node.
type val struct {
	s act
	n *G.Node // nil while planning
}

// net is one pass over a layer list: planning (shapes, parameter tensors
// and their initializers; gm nil) or building the graph on gm from the
// plan's layout.
type net struct {
	gm                *graphModel // nil while planning
	lay               layout
	inits             []paramInit // per tensor, in layout order
	next              int         // building: the next parameter node
	batch, seq        int         // seq: tokens per sequence (sequence models), else 0
	classes, channels int
	drop              *dropout // building: the dropout masks
	dropouts          int      // dropout layers met
	floats            float64  // planning: activation values per example
	paramsF           float64  // planning: parameters (float64: cannot overflow)
	path              string   // the layer's key (layers[3]) while it is applied
	typ               string   // its type
	prefix            string   // the layer's tensor name prefix (layers.3)
	names             []string // the layer's Names
	nparam            int      // tensors of the layer so far
}

// paramInit draws one tensor's initial values.
type paramInit func(r *rand.Rand, w []float32)

// uniformInit draws U(-a, a) in order.
func uniformInit(a float64) paramInit {
	return func(r *rand.Rand, w []float32) {
		for i := range w {
			w[i] = float32((2*r.Float64() - 1) * a)
		}
	}
}

// glorotInit is Glorot's uniform U(-a, a), a = sqrt(6/(fanIn+fanOut)).
func glorotInit(fanIn, fanOut int) paramInit {
	return uniformInit(math.Sqrt(6 / float64(fanIn+fanOut)))
}

func zeroInit(_ *rand.Rand, w []float32) { clear(w) }

func oneInit(_ *rand.Rand, w []float32) {
	for i := range w {
		w[i] = 1
	}
}

// rows is the number of rows of every activation: the batch's, times the
// sequence length for sequence models.
func (c *net) rows() int { return c.batch * max(c.seq, 1) }

// building reports whether the pass builds the graph.
func (c *net) building() bool { return c.gm != nil }

// param declares the layer's next tensor (named suffix unless the layer
// names it) while planning and returns its node while building.
func (c *net) param(suffix string, init paramInit, shape ...int) *G.Node {
	name := c.prefix + "." + suffix
	if c.nparam < len(c.names) {
		name = c.names[c.nparam]
	}
	c.nparam++
	if !c.building() {
		n := 1.0
		for _, d := range shape {
			n *= float64(d)
		}
		c.paramsF += n
		c.lay.add(name, shape...)
		c.inits = append(c.inits, init)
		return nil
	}
	n := c.gm.wrt[c.next]
	c.next++
	return n
}

// LayerError is a problem of one layer of a list, found when its shapes
// are inferred: the layer's key (relative to the model section, e.g.
// "layers[3]" or "layers[2].layers[0]"), its type and what is wrong.
type LayerError struct {
	Key, Type, Msg string
}

func (e *LayerError) Error() string { return fmt.Sprintf("%s (%s): %s", e.Key, e.Type, e.Msg) }

// errorf is a shape problem of the current layer.
func (c *net) errorf(format string, args ...any) error {
	return &LayerError{Key: c.path, Type: c.typ, Msg: fmt.Sprintf(format, args...)}
}

// image reads x as an image: the classifier's input vector is
// channels × side × side, channel-major.
func (c *net) image(x act) (act, error) {
	if x.h > 0 {
		return x, nil
	}
	if !x.raw {
		return x, c.errorf("needs an image, got %v", x)
	}
	ch := max(c.channels, 1)
	side := int(math.Round(math.Sqrt(float64(x.feat / ch))))
	if x.feat%ch != 0 || side*side*ch != x.feat {
		return x, c.errorf("needs an image: the input's %d values are not %d square channel(s)", x.feat, ch)
	}
	return act{feat: x.feat, h: side, w: side, c: ch, nchw: true}, nil
}

// nhwcImage is image for the layers that read channel-last images (the
// pools): a channel-major input of several channels is refused.
func (c *net) nhwcImage(x act) (act, error) {
	img, err := c.image(x)
	if err == nil && img.nchw && img.c > 1 {
		err = c.errorf("reads NHWC images, got the channel-major input %v: put a conv2d first", img)
	}
	return img, err
}

// features checks that x is a vector per row (not token ids, not an image
// other than the raw input).
func (c *net) features(x act) error {
	switch {
	case x.ids:
		return c.errorf("needs features, got token ids: start with an embedding layer")
	case x.h > 0:
		return c.errorf("needs flat features, got %v: add a flatten layer before it", x)
	}
	return nil
}

// layers applies the list ls (its keys under path, its tensors under
// prefix) to x.
func (c *net) layers(ls []Layer, path, prefix string, x val) (val, error) {
	for i := range ls {
		l := &ls[i]
		t := lookupLayerType(l.Type)
		saved := struct {
			path, typ, prefix string
			names             []string
			nparam            int
		}{c.path, c.typ, c.prefix, c.names, c.nparam}
		c.path, c.typ = fmt.Sprintf("%s[%d]", path, i), l.Type
		if t == nil || t.head {
			return x, c.errorf("not a layer type of the list's body (%s)", strings.Join(layerTypeNames(false), ", "))
		}
		var bad error // the first problem of its keys (a list that was not validated)
		checkLayer(*l, t, func(key, format string, args ...any) {
			if bad == nil {
				bad = c.errorf("%s: %s", key, fmt.Sprintf(format, args...))
			}
		})
		if bad != nil {
			return x, bad
		}
		c.prefix, c.names, c.nparam = fmt.Sprintf("%s.%d", prefix, i), l.Names, 0
		y, err := t.apply(c, l, x)
		if err != nil {
			return x, err
		}
		if !c.building() {
			c.floats += float64(y.s.feat * max(c.seq, 1))
		}
		c.path, c.typ, c.prefix, c.names, c.nparam = saved.path, saved.typ, saved.prefix, saved.names, saved.nparam
		x = y
	}
	return x, nil
}

// stackSpec is a layer list with the data it is built for.
type stackSpec struct {
	layers       []Layer // the last one a head
	dim, classes int
	channels     int
	name         string // the model kind, in messages
	text         bool   // a sequence model (token-xent head)
	stochastic   bool   // implements Stochastic even without dropout layers
	batch        int
	head         *layerType
	headKey      string
}

// newStackSpec checks the list's structure (its last layer a head, heads
// nowhere else).
func newStackSpec(ls []Layer, dim, classes, channels int) (stackSpec, error) {
	sp := stackSpec{layers: ls, dim: dim, classes: classes, channels: channels}
	if len(ls) == 0 {
		return sp, &LayerError{Key: "layers", Type: "list", Msg: "empty: give at least a head"}
	}
	last := len(ls) - 1
	sp.headKey = fmt.Sprintf("layers[%d]", last)
	sp.head = lookupLayerType(ls[last].Type)
	if sp.head == nil || !sp.head.head {
		return sp, &LayerError{Key: sp.headKey, Type: ls[last].Type, Msg: "the last layer must be a head (" + strings.Join(layerTypeNames(true), " or ") + ")"}
	}
	sp.text = sp.head.text
	return sp, nil
}

// input is the shape of the model's input.
func (sp stackSpec) input() act {
	if sp.text {
		return act{feat: 1, ids: true}
	}
	return act{feat: sp.dim, raw: true}
}

// pass runs the layers (all but the head) once: planning when gm is nil.
func (sp stackSpec) pass(c *net, x *G.Node) (val, error) {
	c.batch, c.classes, c.channels = sp.batch, sp.classes, sp.channels
	if sp.text {
		c.seq = sp.dim
	}
	body := sp.layers[:len(sp.layers)-1]
	y, err := c.layers(body, "layers", "layers", val{s: sp.input(), n: x})
	if err != nil {
		return y, err
	}
	c.path, c.typ = sp.headKey, sp.head.name
	if err := c.features(y.s); err != nil {
		return y, err
	}
	if y.s.feat != sp.classes {
		what := "classes"
		if sp.text {
			what = "vocabulary ids"
		}
		return y, c.errorf("input has %d features, the %d %s need %d: give the last dense layer units %d (or leave units unset)", y.s.feat, sp.classes, what, sp.classes, sp.classes)
	}
	return y, nil
}

// plan is the list's planning pass: its layout and initializers.
func (sp stackSpec) plan() (*net, error) {
	c := &net{}
	if _, err := sp.pass(c, nil); err != nil {
		return nil, err
	}
	if c.paramsF > maxStackParams {
		return nil, &LayerError{Key: "layers", Type: "list", Msg: fmt.Sprintf("%.4g parameters, more than %d", c.paramsF, maxStackParams)}
	}
	return c, nil
}
