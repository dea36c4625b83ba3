package models

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"dpfl/datasets"
	"dpfl/sim/registry"
)

// Model is a trainable classifier with a flat parameter vector.
type Model interface {
	// NumParams reports the length of the parameter vector.
	NumParams() int
	// Params returns the model's parameter vector. The model computes with
	// whatever values it holds; callers write into it to set the model.
	Params() []float32
	// Init draws fresh initial parameters from r into Params.
	Init(r *rand.Rand)
	// Grad writes into grad the gradient, at Params, of the batch's weighted
	// loss (the mean loss over the real rows) and returns that loss.
	Grad(grad []float32, b *datasets.Batch) (loss float64, err error)
	// Eval scores the batch's real rows at Params.
	Eval(b *datasets.Batch) (Score, error)
}

// Batched is implemented by models built for a fixed number of rows per
// batch (every model of this package): callers check their batches fit.
type Batched interface {
	// BatchSize reports the fixed number of rows per batch.
	BatchSize() int
}

// Score is an evaluation of one batch: the summed loss and the number of
// correct predictions over Count scored predictions (one per real row for
// classifiers; sequence models score every counted token).
type Score struct {
	LossSum float64
	Correct int
	Count   int
}

// Add accumulates o into s.
func (s *Score) Add(o Score) {
	s.LossSum += o.LossSum
	s.Correct += o.Correct
	s.Count += o.Count
}

// Spec describes a model architecture, as the model section of a run
// configuration gives it (YAML keys kind, hidden, embed, proj, layers);
// Build makes one instance of it.
type Spec struct {
	Kind     string `yaml:"kind"`   // one of Kinds
	Hidden   []int  `yaml:"hidden"` // hidden layer widths (mlp); recurrent width (lstm, one entry)
	Channels int    `yaml:"-"`      // image channels (cnn, cnn-large; 0 means 1); not a configuration key
	Embed    int    `yaml:"embed"`  // token embedding width (lstm; 0 means 32)
	Proj     int    `yaml:"proj"`   // projection width before the output layer (lstm; 0 means Embed)
	// Layers is the layer list of kind layers (see Layer), its last layer
	// a head. Omitted when empty, so the config.yaml of a run of another
	// kind is what it was before the key existed.
	Layers []Layer `yaml:"layers,omitempty"`
	// Init is a safetensors file of the initial weights (path relative to
	// the configuration's folder): its tensors those of Tensors, by name
	// and shape (a model.safetensors a run wrote, or a PyTorch state_dict
	// mapped as the package doc says). Empty: drawn by Init. Package
	// experiments reads it; the file's fingerprint is part of the run's
	// inputs. Omitted when empty, like Freeze.
	Init string `yaml:"init,omitempty"`
	// Freeze lists the tensors that are not trained: names or name
	// prefixes (NewTrainable). Any kind takes both keys.
	Freeze []string `yaml:"freeze,omitempty"`
}

// Kind is one model kind: its name, whether it models text, the Spec keys
// it reads, its defaults and validation, how it is built, and its size
// without building it. Each kind registers its Kind (Register) from the
// init function of the file that defines it; Kinds is the one table
// experiments and the docs read.
type Kind struct {
	Name string
	Doc  string // one line, for docs and help texts
	// Order places the kind in Kinds (increasing; equal Orders in the
	// order they registered): the order of the help texts and of the
	// messages that list kinds.
	Order int
	// Text: a next-word model over token sequences (for the text
	// datasets); otherwise a classifier of images. IsText, when set,
	// decides instead from the spec (nil: Text).
	Text   bool
	IsText func(s Spec) bool
	// Uses lists the keys besides kind it reads (hidden, embed, proj); a
	// key it does not read must be unset.
	Uses []string

	// Defaults fills its unset keys and Validate reports its problems
	// through add (keys relative to the section); each may be nil.
	Defaults func(s *Spec)
	Validate func(s Spec, add Problems)
	// Build makes one instance for inputs of dimension dim, the given
	// classes and a fixed batch size (required). The model must also be
	// Layered (its tensors are recorded): Spec.Build refuses one that is
	// not.
	Build func(s Spec, dim, classes, batch int) (Model, error)
	// NumParams is its parameter count without building it (nil: built
	// once to count); Estimate its size from the configuration alone, for
	// the memory estimate (nil: logistic regression's).
	NumParams func(s Spec, dim, classes int) int
	Estimate  func(s Spec, dim, classes float64) Estimate
}

// Kinds lists the model kinds, in increasing Order. To add one: its file
// (the network, and its Kind value with defaults, validation, build and
// size, registered in the file's init function); a Spec field (with its
// YAML tag) if it takes a new key.
var Kinds []*Kind

// Register adds the kind k to Kinds at its Order (from an init function of
// its file); it panics on a name registered twice or a Kind without Build.
func Register(k *Kind) {
	if k.Build == nil {
		panic("models: " + k.Name + " registered without Build")
	}
	kinds.Register(k)
}

// Problems receives the problems of the model section, each with its key
// relative to the section (e.g. "hidden", "hidden[1]") and its reason.
type Problems = registry.Problems

// Estimate is a model's size for a memory estimate, computed from its
// configuration alone (float64: nothing overflows).
type Estimate struct {
	Params float64 // parameter count
	// Key is what sizes the parameters: the key "kind", "hidden", "embed"
	// or "proj", or "classes" (the number of classes or vocabulary).
	Key string
	// ActivationBytes is the memory one example of a batch takes.
	ActivationBytes float64
}

// activationCopies counts the forward values, gradients and scratch kept per
// activation, in the estimates.
const activationCopies = 3

// kinds reads Kinds.
var kinds = registry.Table[*Kind]{List: &Kinds, Name: func(k *Kind) string { return k.Name }, Order: func(k *Kind) int { return k.Order }}

// LookupKind returns the kind named name, or nil.
func LookupKind(name string) *Kind { k, _ := kinds.Lookup(name); return k }

// KindNames lists the kinds' names in table order; text selects the
// next-word models (true) or the image classifiers (false), all when nil.
func KindNames(text *bool) []string {
	return kinds.Names(func(k *Kind) bool { return text == nil || k.Text == *text })
}

// Text reports whether the model reads text (a next-token model).
func (s Spec) Text() bool {
	k := LookupKind(s.Kind)
	if k != nil && k.IsText != nil {
		return k.IsText(s)
	}
	return k != nil && k.Text
}

// Normalize fills the kind's defaults of unset keys (a spec with layers
// and no kind is of kind layers).
func (s *Spec) Normalize() {
	if s.Kind == "" && len(s.Layers) > 0 {
		s.Kind = Layers
	}
	if k := LookupKind(s.Kind); k != nil && k.Defaults != nil {
		k.Defaults(s)
	}
}

// Validate reports the problems of the (normalized) spec through add; an
// unknown or missing kind is the caller's to report.
func (s Spec) Validate(add Problems) {
	k := LookupKind(s.Kind)
	if k == nil {
		return
	}
	reported := map[string]bool{}
	if k.Validate != nil {
		k.Validate(s, func(key, format string, args ...any) {
			reported[key] = true
			add(key, format, args...)
		})
	}
	for i, f := range s.Freeze {
		if f == "" {
			add(fmt.Sprintf("freeze[%d]", i), "empty: give a tensor's name or name prefix")
		}
	}
	for i, h := range s.Hidden {
		if h <= 0 {
			add(fmt.Sprintf("hidden[%d]", i), "width %d must be positive", h)
		}
	}
	// A key of Spec the kind does not use must be unset (unless the kind's
	// own validation said so in its words).
	for _, key := range registry.SetKeys(&s) {
		if key != "kind" && key != "-" && key != "init" && key != "freeze" && !reported[key] && !slices.Contains(k.Uses, key) {
			users := kinds.Names(func(k *Kind) bool { return slices.Contains(k.Uses, key) })
			add(key, "only model kind %s uses it", strings.Join(users, " or "))
		}
	}
}

// Build compiles one instance of the model for inputs of dimension dim,
// the given number of classes and a fixed batch size.
func (s Spec) Build(dim, classes, batch int) (Model, error) {
	if dim <= 0 || classes < 2 || batch <= 0 {
		return nil, fmt.Errorf("models: cannot build for dim %d, %d classes, batch %d", dim, classes, batch)
	}
	k := LookupKind(s.Kind)
	if k == nil {
		return nil, fmt.Errorf("models: unknown model kind %q (want one of %v)", s.Kind, KindNames(nil))
	}
	m, err := k.Build(s, dim, classes, batch)
	if err != nil {
		return nil, err
	}
	if _, ok := m.(Layered); !ok {
		return nil, fmt.Errorf("models: model kind %s builds a model (%T) that does not list its parameter tensors (models.Layered), which a run records", s.Kind, m)
	}
	return m, nil
}

// NumParams reports the parameter count of the architecture for the given
// input dimension and classes, without building a graph (a kind without
// NumParams is built once to count). It returns 0 when the architecture
// cannot take such inputs.
func (s Spec) NumParams(dim, classes int) int {
	k := LookupKind(s.Kind)
	switch {
	case k == nil:
		return denseParams(nil, dim, classes)
	case k.NumParams != nil:
		return k.NumParams(s, dim, classes)
	}
	m, err := s.Build(dim, classes, 1)
	if err != nil {
		return 0
	}
	return m.NumParams()
}

// Estimate is the model's size for inputs of dimension dim and the given
// classes, for a memory estimate (no graph is built; unknown kinds are
// sized as logistic regression).
func (s Spec) Estimate(dim, classes float64) Estimate {
	if k := LookupKind(s.Kind); k != nil && k.Estimate != nil {
		return k.Estimate(s, dim, classes)
	}
	return logRegKind.Estimate(s, dim, classes)
}

// Tensor is one named parameter tensor of a model: its shape (row-major)
// and where its values start in the flat parameter vector.
type Tensor struct {
	Name   string
	Shape  []int
	Offset int
}

// Layered is implemented by models whose parameter vector is a sequence of
// named tensors (every model of this package): dense layers' weights "W0",
// "W1", … of shape [in, out] (the layer computes x·W + b) and biases "b0",
// …; convolution filters "conv0", … of shape [out, kh, kw, in] and biases
// "convb0", …; the lstm's "emb" [vocab, embed], "Wx" [embed, 4·hidden],
// "Wh" [hidden, 4·hidden], "b" [4·hidden] (gates i, f, g, o), "Wp"
// [hidden, proj], "bp", "Wo" [proj, vocab], "bo"; a layer list's
// "layers.<i>.weight", "layers.<i>.bias", … (see the package doc, with
// the mapping from PyTorch's state_dict names). The tensors are
// contiguous and in order, covering the vector.
type Layered interface {
	Tensors() []Tensor
}

// Tensors lists the model's parameter tensors in layout order.
func (m *graphModel) Tensors() []Tensor {
	out := make([]Tensor, len(m.lay.names))
	for k, name := range m.lay.names {
		out[k] = Tensor{Name: name, Shape: []int(m.lay.shapes[k].Clone()), Offset: m.lay.offs[k]}
	}
	return out
}
