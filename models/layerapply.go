package models

import (
	"fmt"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
)

// The layer types' shape inference and graph building (see layerTypes).
// Each declares its tensors with net.param in a fixed order (the layout's
// and the initial draws' order) and checks its input's shape.

func applyDense(c *net, l *Layer, x val) (val, error) {
	if err := c.features(x.s); err != nil {
		return x, err
	}
	in, units := x.s.feat, l.Units
	if units == 0 {
		units = c.classes
	}
	w := c.param("weight", glorotInit(in, units), in, units)
	b := c.param("bias", zeroInit, units)
	return c.out(act{feat: units}, func() (*G.Node, error) { return denseLayer(c.gm.mm, x.n, w, b) })
}

func applyConv(c *net, l *Layer, x val) (val, error) {
	img, err := c.image(x.s)
	if err != nil {
		return x, err
	}
	k, stride, pad := l.Kernel, max(l.Stride, 1), l.Padding
	if img.h+2*pad < k || img.w+2*pad < k {
		return x, c.errorf("a %d×%d kernel with padding %d does not fit the input %v", k, k, pad, img)
	}
	g := newConvGeom(c.rows(), img.c, img.h, img.w, img.nchw, l.Filters, k, stride, pad)
	w := c.param("weight", glorotInit(img.c*k*k, l.Filters*k*k), l.Filters, k, k, img.c)
	b := c.param("bias", zeroInit, l.Filters)
	y := act{feat: g.outDim(), h: g.oh, w: g.ow, c: l.Filters}
	if !c.building() {
		c.floats += float64(g.pixels() * g.kdim()) // its im2col rows
	}
	return c.out(y, func() (*G.Node, error) { return conv2d(c.gm.mm, x.n, w, b, g) })
}

func applyMaxPool(c *net, _ *Layer, x val) (val, error) {
	img, err := c.nhwcImage(x.s)
	if err != nil {
		return x, err
	}
	if img.h < 2 || img.w < 2 {
		return x, c.errorf("a 2×2 window does not fit the input %v", img)
	}
	y := act{feat: (img.h / 2) * (img.w / 2) * img.c, h: img.h / 2, w: img.w / 2, c: img.c}
	return c.out(y, func() (*G.Node, error) { return maxPool2(x.n, c.rows(), img.h, img.w, img.c) })
}

func applyFlatten(c *net, _ *Layer, x val) (val, error) {
	if x.s.ids {
		return x, c.errorf("needs values, got %v", x.s)
	}
	return val{s: act{feat: x.s.feat}, n: x.n}, nil
}

func applyDropout(c *net, l *Layer, x val) (val, error) {
	if x.s.ids {
		return x, c.errorf("needs values, got %v", x.s)
	}
	c.dropouts++
	return c.out(x.s, func() (*G.Node, error) {
		d := c.drop
		n, t := c.gm.input(fmt.Sprintf("mask%d", len(d.masks)), c.rows(), x.s.feat)
		d.masks, d.rates = append(d.masks, t), append(d.rates, l.Rate)
		return applyMask(x.n, n)
	})
}

func applyEmbedding(c *net, l *Layer, x val) (val, error) {
	if !x.s.ids {
		return x, c.errorf("reads token ids, got %v: it must be the first layer of a sequence model (head token-xent)", x.s)
	}
	t := c.param("weight", uniformInit(0.05), c.classes, l.Dim)
	return c.out(act{feat: l.Dim}, func() (*G.Node, error) { return embed(t, x.n) })
}

func applyLSTM(c *net, l *Layer, x val) (val, error) {
	if c.seq == 0 {
		return x, c.errorf("needs a token sequence: the list must start with an embedding and end with token-xent")
	}
	if err := c.features(x.s); err != nil {
		return x, err
	}
	in, H := x.s.feat, l.Hidden
	wx := c.param("weight_ih", glorotInit(in, H), in, nGates*H)
	wh := c.param("weight_hh", glorotInit(H, H), H, nGates*H)
	b := c.param("bias", lstmBiasInit(H), nGates*H)
	return c.out(act{feat: H}, func() (*G.Node, error) {
		// The input contributions of all steps and gates at once, then
		// the recurrence.
		xg, err := denseLayer(c.gm.mm, x.n, wx, b)
		if err != nil {
			return nil, err
		}
		return lstmLayer(c.gm.mm, xg, wh, c.seq, c.batch)
	})
}

// lstmBiasInit zeroes the gate biases but the forget gate's, which start
// at 1.
func lstmBiasInit(hidden int) paramInit {
	return func(_ *rand.Rand, b []float32) {
		clear(b)
		for i := hidden; i < 2*hidden; i++ {
			b[i] = 1
		}
	}
}

func applyResidual(c *net, l *Layer, x val) (val, error) {
	path, typ, prefix := c.path, c.typ, c.prefix
	y, err := c.layers(l.Layers, path+".layers", prefix+".layers", x)
	if err != nil {
		return x, err
	}
	c.path, c.typ = path, typ
	skip, what := x, "its input is"
	if len(l.Shortcut) > 0 {
		if skip, err = c.layers(l.Shortcut, path+".shortcut", prefix+".shortcut", x); err != nil {
			return x, err
		}
		c.path, c.typ, what = path, typ, "its shortcut outputs"
	}
	if y.s.feat != skip.s.feat || y.s.h != skip.s.h || y.s.w != skip.s.w || y.s.c != skip.s.c || y.s.ids != skip.s.ids {
		return x, c.errorf("its layers output %v, %s %v: they must match to be added (a shortcut changes the input's shape)", y.s, what, skip.s)
	}
	return c.out(y.s, func() (*G.Node, error) { return addNodes(skip.n, y.n) })
}

// applyGlobalAvgPool averages each channel over the pixels: an average
// pool whose one window is the whole (square) image.
func applyGlobalAvgPool(c *net, _ *Layer, x val) (val, error) {
	img, err := c.nhwcImage(x.s)
	if err != nil {
		return x, err
	}
	if img.h != img.w {
		return x, c.errorf("needs a square image, got %v", img)
	}
	p := avgPool{batch: c.rows(), h: img.h, w: img.w, c: img.c, k: img.h, s: img.h}
	return c.out(act{feat: img.c}, func() (*G.Node, error) { return averagePool(x.n, p) })
}

func applyAvgPool(c *net, l *Layer, x val) (val, error) {
	img, err := c.nhwcImage(x.s)
	if err != nil {
		return x, err
	}
	k := l.Kernel
	if k == 0 {
		k = 2
	}
	p := avgPool{batch: c.rows(), h: img.h, w: img.w, c: img.c, k: k, s: l.Stride}
	if p.s == 0 {
		p.s = k
	}
	switch {
	case k > img.h || k > img.w:
		return x, c.errorf("a %d×%d window does not fit the input %v", k, k, img)
	}
	y := act{feat: p.oh() * p.ow() * img.c, h: p.oh(), w: p.ow(), c: img.c}
	return c.out(y, func() (*G.Node, error) { return averagePool(x.n, p) })
}

func applyLayerNorm(c *net, _ *Layer, x val) (val, error) {
	if x.s.ids {
		return x, c.errorf("needs values, got %v", x.s)
	}
	if x.s.feat < 2 {
		return x, c.errorf("needs at least 2 values per row, got %v", x.s)
	}
	gain := c.param("weight", oneInit, x.s.feat)
	bias := c.param("bias", zeroInit, x.s.feat)
	return c.out(x.s, func() (*G.Node, error) { return normalize(x.n, gain, bias, x.s.feat, 1) })
}

func applyGroupNorm(c *net, l *Layer, x val) (val, error) {
	if x.s.ids {
		return x, c.errorf("needs values, got %v", x.s)
	}
	ch := x.s.feat
	if x.s.h > 0 {
		ch = x.s.c
	}
	if x.s.nchw && x.s.c > 1 || x.s.raw && max(c.channels, 1) > 1 {
		return x, c.errorf("reads NHWC images, got the channel-major input: put a conv2d first")
	}
	if ch%l.Groups != 0 || x.s.feat/l.Groups < 2 {
		return x, c.errorf("%d groups do not divide the %d channels of %v into groups of at least 2 values", l.Groups, ch, x.s)
	}
	gain := c.param("weight", oneInit, ch)
	bias := c.param("bias", zeroInit, ch)
	return c.out(x.s, func() (*G.Node, error) { return normalize(x.n, gain, bias, ch, l.Groups) })
}

func applyPosEmbedding(c *net, _ *Layer, x val) (val, error) {
	if c.seq == 0 {
		return x, c.errorf("needs a token sequence: the list must start with an embedding and end with token-xent")
	}
	if err := c.features(x.s); err != nil {
		return x, err
	}
	t := c.param("weight", uniformInit(0.05), c.seq, x.s.feat)
	return c.out(x.s, func() (*G.Node, error) { return addPositions(x.n, t, c.seq, c.batch) })
}

func applyAttention(c *net, l *Layer, x val) (val, error) {
	if c.seq == 0 {
		return x, c.errorf("needs a token sequence: the list must start with an embedding and end with token-xent")
	}
	if err := c.features(x.s); err != nil {
		return x, err
	}
	D := x.s.feat
	if D%l.Heads != 0 {
		return x, c.errorf("%d heads do not divide the input's %d features", l.Heads, D)
	}
	win := c.param("in_proj_weight", glorotInit(D, 3*D), D, 3*D)
	bin := c.param("in_proj_bias", zeroInit, 3*D)
	wout := c.param("out_proj.weight", glorotInit(D, D), D, D)
	bout := c.param("out_proj.bias", zeroInit, D)
	if !c.building() {
		c.floats += float64(c.seq * (3*D + D + l.Heads*c.seq)) // projections, heads, weights
	}
	return c.out(x.s, func() (*G.Node, error) {
		qkv, err := denseLayer(c.gm.mm, x.n, win, bin)
		if err != nil {
			return nil, err
		}
		a, err := attend(qkv, c.seq, c.batch, l.Heads)
		if err != nil {
			return nil, err
		}
		return denseLayer(c.gm.mm, a, wout, bout)
	})
}

// elementwise is the apply function of a layer type that maps every value
// by f (relu, tanh, gelu): the shape is unchanged, token ids are refused.
func elementwise(f func(*G.Node) (*G.Node, error)) func(*net, *Layer, val) (val, error) {
	return func(c *net, _ *Layer, x val) (val, error) {
		if x.s.ids {
			return x, c.errorf("needs values, got %v", x.s)
		}
		return c.out(x.s, func() (*G.Node, error) { return f(x.n) })
	}
}
