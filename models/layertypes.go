package models

import (
	"fmt"
	"slices"

	"dpfl/sim/registry"

	G "gorgonia.org/gorgonia"
)

// layerType is one type of Layer: the keys it reads, their checks, and how
// it transforms its input (planning its tensors, or adding its ops).
type layerType struct {
	name string
	doc  string // one line, for the docs
	keys []string
	// head: a loss head, the list's last layer (text: token-level).
	head, text bool
	// check reports problems of the keys' values alone (shapes aside).
	check func(l Layer, add Problems)
	// apply plans or builds the layer on its input (nil for heads, which
	// the list applies itself).
	apply func(c *net, l *Layer, x val) (val, error)
}

// layerTypes lists the layer types, in the docs' order (set by init: a
// residual block applies a list, which looks its types up here).
var layerTypes []*layerType

func init() { layerTypes = allLayerTypes() }

func allLayerTypes() []*layerType {
	return []*layerType{
		{name: "dense", keys: []string{"units"}, apply: applyDense,
			doc: "x·W + b: W [in, units] (weight), b [units] (bias); units unset: the classes"},
		{name: "conv2d", keys: []string{"filters", "kernel", "stride", "padding"}, check: checkConv, apply: applyConv,
			doc: "convolution of an image: W [filters, kernel, kernel, in channels] (weight), b [filters] (bias)"},
		{name: "max-pool", keys: []string{"kernel", "stride"}, check: checkMaxPool, apply: applyMaxPool,
			doc: "2×2 max-pooling, stride 2 (a last odd row or column is dropped)"},
		{name: "avg-pool", keys: []string{"kernel", "stride"}, apply: applyAvgPool,
			doc: "average-pooling over kernel×kernel windows (default 2), stride default the kernel, no padding"},
		{name: "flatten", apply: applyFlatten, doc: "an image's values as one vector (NHWC order)"},
		{name: "dropout", keys: []string{"rate"}, check: checkDropout, apply: applyDropout,
			doc: "inverted dropout in training (rate: probability of dropping a unit)"},
		{name: "relu", apply: elementwise(rectify), doc: "max(x, 0)"},
		{name: "tanh", apply: elementwise(tanhAct), doc: "tanh(x)"},
		{name: "gelu", apply: elementwise(geluAct), doc: "x·Φ(x) (the exact GELU)"},
		{name: "layer-norm", apply: applyLayerNorm,
			doc: "normalizes each row (each example, or each token) to mean 0, variance 1, then gain (weight) and bias per value, both [width]"},
		{name: "group-norm", keys: []string{"groups"}, check: checkGroupNorm, apply: applyGroupNorm,
			doc: "normalizes each example's channels in groups, then gain (weight) and bias per channel, both [channels]"},
		{name: "embedding", keys: []string{"dim"}, check: checkPositive("dim"), apply: applyEmbedding,
			doc: "token ids to vectors: table [vocabulary, dim] (weight); the first layer of a sequence model"},
		{name: "lstm", keys: []string{"hidden"}, check: checkPositive("hidden"), apply: applyLSTM,
			doc: "one LSTM layer over the sequence: weight_ih [in, 4·hidden], weight_hh [hidden, 4·hidden], bias [4·hidden] (gates i, f, g, o)"},
		{name: "pos-embedding", apply: applyPosEmbedding,
			doc: "adds a learned vector per position: weight [sequence length, width]"},
		{name: "attention", keys: []string{"heads"}, check: checkPositive("heads"), apply: applyAttention,
			doc: "multi-head causal self-attention: in_proj_weight [width, 3·width] (queries, keys, values), in_proj_bias [3·width], out_proj.weight [width, width], out_proj.bias [width]"},
		{name: "global-avg-pool", apply: applyGlobalAvgPool,
			doc: "the mean of each channel of a square image over its pixels: an image h×h×c to c features"},
		{name: "residual", keys: []string{"layers", "shortcut"}, check: checkResidual, apply: applyResidual,
			doc: "s(x) + f(x), f the sub-list layers, s the sub-list shortcut (unset: s(x) = x); both outputs of one shape"},
		{name: "xent", head: true,
			doc: "head: softmax cross-entropy of each example's class (image classifiers)"},
		{name: "token-xent", head: true, text: true,
			doc: "head: softmax cross-entropy of each token's next token (sequence models; PAD targets ignored)"},
	}
}

// lookupLayerType returns the type named name, or nil.
func lookupLayerType(name string) *layerType {
	for _, t := range layerTypes {
		if t.name == name {
			return t
		}
	}
	return nil
}

// layerTypeNames lists the heads (head) or the other types.
func layerTypeNames(head bool) []string {
	var out []string
	for _, t := range layerTypes {
		if t.head == head {
			out = append(out, t.name)
		}
	}
	return out
}

// validateLayers reports the problems of the list's keys and values (the
// shapes are checked when the model is built, or by Spec.CheckShapes).
func validateLayers(ls []Layer, path string, add Problems, top bool) {
	if len(ls) == 0 {
		add(path, "empty list")
		return
	}
	for i, l := range ls {
		key := fmt.Sprintf("%s[%d]", path, i)
		t := lookupLayerType(l.Type)
		switch {
		case l.Type == "":
			add(key+".type", "required (one of %v)", append(layerTypeNames(false), layerTypeNames(true)...))
			continue
		case t == nil:
			add(key+".type", "unknown layer type %q (want one of %v)", l.Type, append(layerTypeNames(false), layerTypeNames(true)...))
			continue
		case t.head && (!top || i != len(ls)-1):
			add(key+".type", "%s is a head: only the last layer of the list may be one", l.Type)
		case !t.head && top && i == len(ls)-1:
			add(key+".type", "the last layer must be a head (%v), not %s", layerTypeNames(true), l.Type)
		}
		checkLayer(l, t, func(k, format string, args ...any) { add(key+"."+k, format, args...) })
		if l.Type == "residual" && len(l.Layers) > 0 {
			validateLayers(l.Layers, key+".layers", add, false)
		}
		if l.Type == "residual" && len(l.Shortcut) > 0 {
			validateLayers(l.Shortcut, key+".shortcut", add, false)
		}
	}
}

// maxLayerInt bounds every integer key of a layer.
const maxLayerInt = 1 << 24

// checkLayer reports the problems of one layer's own keys and values (its
// sub-list aside), keys relative to the layer.
func checkLayer(l Layer, t *layerType, add Problems) {
	for _, k := range registry.SetKeys(&l) {
		if k != "type" && k != "-" && !slices.Contains(t.keys, k) {
			add(k, "layer type %s does not read it (it reads %v)", l.Type, t.keys)
		}
	}
	for _, k := range []struct {
		name string
		v    int
	}{{"units", l.Units}, {"filters", l.Filters}, {"kernel", l.Kernel}, {"stride", l.Stride}, {"padding", l.Padding}, {"dim", l.Dim}, {"hidden", l.Hidden}, {"groups", l.Groups}, {"heads", l.Heads}} {
		if k.v < 0 {
			add(k.name, "%d must not be negative", k.v)
		} else if k.v > maxLayerInt {
			add(k.name, "%d is more than %d", k.v, maxLayerInt)
		}
	}
	if t.check != nil {
		t.check(l, add)
	}
}

func checkPositive(key string) func(l Layer, add Problems) {
	return func(l Layer, add Problems) {
		if v := map[string]int{"dim": l.Dim, "hidden": l.Hidden, "filters": l.Filters, "groups": l.Groups, "heads": l.Heads}[key]; v == 0 {
			add(key, "required: a positive width")
		}
	}
}

func checkConv(l Layer, add Problems) {
	if l.Filters == 0 {
		add("filters", "required: the number of output channels")
	}
	if l.Kernel == 0 {
		add("kernel", "required: the kernel's side")
	}
	if l.Kernel > 0 && l.Padding >= l.Kernel {
		add("padding", "%d must be less than the kernel's side %d", l.Padding, l.Kernel)
	}
}

func checkMaxPool(l Layer, add Problems) {
	if l.Kernel != 0 && l.Kernel != 2 {
		add("kernel", "max-pool takes 2×2 windows only, got %d", l.Kernel)
	}
	if l.Stride != 0 && l.Stride != 2 {
		add("stride", "max-pool takes stride 2 only, got %d", l.Stride)
	}
}

func checkDropout(l Layer, add Problems) {
	if !(l.Rate > 0 && l.Rate < 1) {
		add("rate", "%v must be in (0, 1)", l.Rate)
	}
}

func checkGroupNorm(l Layer, add Problems) {
	if l.Groups == 0 {
		add("groups", "required: the number of channel groups")
	} else if l.Groups > maxGroups {
		add("groups", "%d is more than %d", l.Groups, maxGroups)
	}
}

func checkResidual(l Layer, add Problems) {
	if len(l.Layers) == 0 {
		add("layers", "required: the layers whose output is added to their input")
	}
}

// out is the layer's output of shape s, its node made by mk when building
// (mk is not called while planning).
func (c *net) out(s act, mk func() (*G.Node, error)) (val, error) {
	if !c.building() {
		return val{s: s}, nil
	}
	n, err := mk()
	if err != nil {
		return val{}, c.errorf("%v", err)
	}
	return val{s: s, n: n}, nil
}
