package models

import "fmt"

// Dense model kinds: multinomial logistic regression (no hidden layer) and
// the MLP (ReLU between layers), softmax cross-entropy loss; presets
// (denseStack) whose tensors are, per layer, W (in x out, row-major) then
// b.
const (
	LogReg = "logreg"
	MLP    = "mlp"
)

func init() {
	Register(&logRegKind)
	Register(&mlpKind)
}

var logRegKind = Kind{
	Name: LogReg, Order: 10, Doc: "multinomial logistic regression",
	Validate: func(s Spec, add Problems) {
		if len(s.Hidden) > 0 {
			add("hidden", "logreg has no hidden layers (use kind: mlp)")
		}
	},
	Build: func(s Spec, dim, classes, batch int) (Model, error) {
		sp, err := denseStack(LogReg, nil, dim, classes)
		if err != nil {
			return nil, err
		}
		return buildStack(sp, batch)
	},
	NumParams: func(s Spec, dim, classes int) int { return denseParams(nil, dim, classes) },
	Estimate: func(s Spec, dim, classes float64) Estimate {
		return Estimate{Params: dim*classes + classes, Key: "kind", ActivationBytes: denseActivations(s.Hidden, dim, classes)}
	},
}

var mlpKind = Kind{
	Name: MLP, Order: 20, Doc: "ReLU hidden layers (hidden: widths, default [200])", Uses: []string{"hidden"},
	Defaults: func(s *Spec) {
		if len(s.Hidden) == 0 {
			s.Hidden = []int{200}
		}
	},
	Build: func(s Spec, dim, classes, batch int) (Model, error) {
		if len(s.Hidden) == 0 {
			return nil, fmt.Errorf("models: mlp needs at least one hidden layer width")
		}
		for _, h := range s.Hidden {
			if h <= 0 {
				return nil, fmt.Errorf("models: hidden width %d must be positive", h)
			}
		}
		sp, err := denseStack(MLP, s.Hidden, dim, classes)
		if err != nil {
			return nil, err
		}
		return buildStack(sp, batch)
	},
	NumParams: func(s Spec, dim, classes int) int { return denseParams(s.Hidden, dim, classes) },
	Estimate: func(s Spec, dim, classes float64) Estimate {
		n, in := 0.0, dim
		for _, h := range s.Hidden {
			w := float64(max(h, 0))
			n += in*w + w
			in = w
		}
		return Estimate{Params: n + in*classes + classes, Key: "hidden", ActivationBytes: denseActivations(s.Hidden, dim, classes)}
	},
}

// denseParams is the parameter count of a dense network.
func denseParams(hidden []int, dim, classes int) int {
	n, in := 0, dim
	for _, h := range hidden {
		n += in*h + h
		in = h
	}
	return n + in*classes + classes
}

// denseActivations estimates the bytes one example takes in a dense network.
func denseActivations(hidden []int, dim, classes float64) float64 {
	floats := dim + classes
	for _, h := range hidden {
		floats += float64(max(h, 0))
	}
	return 4 * (activationCopies*floats + dim)
}
