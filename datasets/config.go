package datasets

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"dpfl/sim/registry"
	"dpfl/sim/rng"
)

// Config is the data section of a run configuration (YAML key data): the
// dataset, its partition into clients and the population, and each
// dataset's own keys (inlined structs, each owned by the datasets of Kinds
// that list it). A key of a struct the chosen dataset does not own is an
// error.
//
// The population is either set by Clients (partitions iid and dirichlet of
// mnist) or determined by the data: one client per NIST writer (partition
// writer) or per user (the text datasets, partition user); there Clients,
// if set, keeps a random subset of that many clients.
//
// The order of the fields is the order of the keys in a run's config.yaml
// and in the hash of its run ID: a new dataset's struct goes at the end, and
// a new key must be zero by default (zero keys are left out of the hash).
type Config struct {
	// Dataset is the name of one of Kinds: mnist (digits from the GoMNIST
	// module, or Dir), debian (next-word prediction on the Debian
	// changelogs matching Changelogs, one client per maintainer) or text
	// (next-word prediction on the user-attributed corpus at Path, one
	// client per user).
	Dataset     string `yaml:"dataset"`
	MNISTConfig `yaml:",inline"`
	// Partition: one of the dataset's partitions (the first is the
	// default): for mnist iid (equal random shards), dirichlet (label skew,
	// see Alpha) or writer (one client per NIST writer, as federated EMNIST:
	// each writer's digits are split into its own training and held-out
	// parts, and the union of the held-out parts is the central test set;
	// needs the QMNIST label files, see QMNISTDir); for debian and text user
	// (one client per user).
	Partition string `yaml:"partition"`
	// Clients is the population size (iid, dirichlet: required). For writer
	// and user partitions the data determines the population; Clients, if
	// set, keeps a random subset of that many writers or users (0: all).
	Clients              int `yaml:"clients"`
	MNISTPartitionConfig `yaml:",inline"`
	// TestFraction is the share of each client's data held out for the
	// central test set, for the partitions where the data determines the
	// population (writer: of its digits, default 0.1; user: of its
	// documents, default 0.2). A client always keeps at least one training
	// example.
	TestFraction float64 `yaml:"test_fraction"`
	DebianConfig `yaml:",inline"`
	TextConfig   `yaml:",inline"`
	TokenConfig  `yaml:",inline"`
	SplitConfig  `yaml:",inline"`
	DigitsConfig `yaml:",inline"`
	// Own holds the keys of the datasets registered with a key struct of
	// their own (Kind.Own), from any package, as the YAML gave them; the
	// dataset reads them with OwnKeys. A key no registered struct has is
	// refused when the section is decoded, and a key of another dataset's
	// struct by Validate. Empty for the built-in datasets.
	Own map[string]any `yaml:",inline"`
}

// Kind is one dataset: its name, partitions and own keys, their defaults and
// validation, and how it is read. Each dataset registers its Kind (Register)
// from the init function of the file that defines it; Kinds is the one
// table experiments, dpfl data and the docs read.
type Kind struct {
	Name string
	Doc  string // one line, for docs and help texts
	// Order places the dataset in Kinds (increasing; equal Orders in the
	// order they registered): the order of the help texts, dpfl data's
	// listing and the messages that list datasets.
	Order int
	// Text: next-word text (token sequences, one client per user), for the
	// next-word models; otherwise images for the classifiers.
	Text bool
	// DataTells: the files hold either images or text and tell which (a
	// LEAF folder: FEMNIST or Shakespeare); Text is then unused and the
	// model is checked against the data once it is read (CheckModel).
	DataTells bool
	// Partitions are the partitions it takes, the default first.
	Partitions []Partition

	// Defaults fills its unset keys; Validate reports the problems of its
	// keys through add (given: whether a key was written); Paths lists
	// the keys naming files, resolved against the config's folder. Each
	// may be nil.
	Defaults func(c *Config)
	Validate func(c *Config, add Problems, given func(key string) bool)
	Paths    func(c *Config) []*string
	// Load builds the population (required); Population counts it reading
	// as little as it can (nil: Clients); Inputs lists the files Load
	// reads (see Input; nil: none); Shape is its model input dimension and
	// classes, and the memory its data holds besides the population
	// (bytes, for the memory estimate; nil: MNIST's 784 and 10, none).
	// Load and Population stop with the context's error once it is done.
	Load       func(ctx context.Context, c *Config, l *Loader, root rng.Root) (*Federated, error)
	Population func(ctx context.Context, c *Config, l *Loader, root rng.Root) (int, error)
	Inputs     func(c *Config, l *Loader) ([]Input, error)
	Shape      func(c *Config, textModel bool) (dim, classes, bytes float64)

	// Own, if not nil, returns a new value (a struct pointer) of the
	// dataset's own key struct, YAML tags and doc comments: for a dataset
	// with keys of its own registered from any package. Its keys are
	// decoded into Config.Own (each checked against its field's type) and
	// read by OwnKeys; each must be zero by default (zero keys are left out
	// of the run ID's hash).
	Own func() any

	params []func(c *Config) any // the inlined structs of Config it owns
}

// Partition is one way to split a dataset into clients.
type Partition struct {
	Name string
	// FromData: the data determines the population (one client per writer
	// or user, each with its own held-out part of share TestFraction,
	// DefaultTestFraction by default).
	FromData            bool
	DefaultTestFraction float64
	// OwnSplit: the data holds its own held-out split (a federated file's
	// test split), so TestFraction does not apply.
	OwnSplit bool
}

// Kinds lists the datasets, in increasing Order. To add one: its file (the
// reader, and its Kind value with defaults, validation and loading,
// registered in the file's init function); a dataset with keys of its own
// returns its key struct from Kind.Own (the built-in ones inline theirs at
// the end of Config).
var Kinds []*Kind

// Register adds the dataset k to Kinds at its Order (from an init function
// of its file); it panics on a name registered twice or a Kind without
// Load or Partitions.
func Register(k *Kind) {
	if k.Load == nil || len(k.Partitions) == 0 {
		panic("datasets: " + k.Name + " registered without Load or Partitions")
	}
	kinds.Register(k)
}

// Problems receives the problems of the data section, each with its key
// relative to the section (e.g. "vocab") and its reason.
type Problems = registry.Problems

// KeyError is an error about the value of one key of the data section (Key
// relative to it, e.g. "qmnist_dir"), or, with Key "", about the data the
// section describes (What says which, e.g. "mnist, partition writer").
type KeyError struct {
	Key, What string
	Err       error
}

func (e *KeyError) Error() string {
	if e.Key != "" {
		return e.Key + ": " + e.Err.Error()
	}
	return "(" + e.What + "): " + e.Err.Error()
}

func (e *KeyError) Unwrap() error { return e.Err }

// keyErr wraps a non-nil err as a KeyError of key.
func keyErr(key string, err error) error {
	if err == nil {
		return nil
	}
	return &KeyError{Key: key, Err: err}
}

// Input is a list of files a dataset reads, for a fingerprint of the run's
// inputs: the key that names them, and Root, the folder their names are
// taken relative to ("" for base names; a lone file given as Root has no
// name).
type Input struct {
	Key   string
	Root  string
	Files []string
	// Fingerprint, when set, is the fingerprint of the data read, used
	// instead of hashing Files: a pinned corpus whose content the manifest
	// verified (PinnedFingerprint).
	Fingerprint string
}

// kinds reads Kinds.
var kinds = registry.Table[*Kind]{List: &Kinds, Name: func(k *Kind) string { return k.Name }, Order: func(k *Kind) int { return k.Order }}

// LookupKind returns the dataset named name, or nil.
func LookupKind(name string) *Kind { k, _ := kinds.Lookup(name); return k }

// KindNames lists the datasets' names in table order; text selects the
// next-word datasets (true) or the image ones (false), all when nil (a
// dataset whose data tells is in both lists).
func KindNames(text *bool) []string {
	return kinds.Names(func(k *Kind) bool { return text == nil || k.DataTells || k.Text == *text })
}

// PartitionNames lists every dataset's partitions, each once, in table order.
func PartitionNames() []string {
	var out []string
	for _, k := range Kinds {
		for _, p := range k.Partitions {
			if !slices.Contains(out, p.Name) {
				out = append(out, p.Name)
			}
		}
	}
	return out
}

// kind is the configured dataset (nil when unknown).
func (c *Config) kind() *Kind { return LookupKind(c.Dataset) }

// Text reports whether the dataset is next-word text.
func (c *Config) Text() bool { k := c.kind(); return k != nil && !k.DataTells && k.Text }

// DataTells reports whether the dataset's files tell whether they hold
// images or text (see Kind.DataTells).
func (c *Config) DataTells() bool { k := c.kind(); return k != nil && k.DataTells }

// partition is the configured partition of the dataset (nil when unknown).
func (c *Config) partition() *Partition {
	if k := c.kind(); k != nil {
		for i := range k.Partitions {
			if k.Partitions[i].Name == c.Partition {
				return &k.Partitions[i]
			}
		}
	}
	return nil
}

// FromData reports whether the data, not Clients, determines the
// population (one client per writer or per user).
func (c *Config) FromData() bool { p := c.partition(); return p != nil && p.FromData }

// heldOutShare reports whether TestFraction applies: the data makes the
// clients and dpfl draws each one's held-out part.
func (c *Config) heldOutShare() bool {
	p := c.partition()
	return p != nil && p.FromData && !p.OwnSplit
}

// Normalize fills the defaults of unset keys.
func (c *Config) Normalize() {
	k := c.kind()
	if k == nil {
		return
	}
	if c.Partition == "" {
		c.Partition = k.Partitions[0].Name
	}
	if p := c.partition(); c.heldOutShare() && c.TestFraction == 0 {
		c.TestFraction = p.DefaultTestFraction
	}
	if k.Defaults != nil {
		k.Defaults(c)
	}
}

// Validate reports every problem with the (normalized) section through
// add; given reports whether a key was written (an unset required key and
// a key set to zero get different messages).
func (c *Config) Validate(add Problems, given func(key string) bool) {
	positiveInt := func(key string, v int) {
		if !given(key) && v == 0 {
			add(key, "required (a positive integer)")
		} else if v <= 0 {
			add(key, "%d must be positive", v)
		}
	}
	registry.OneOf(add, "dataset", c.Dataset, KindNames(nil))
	k := c.kind()
	if k != nil {
		registry.OneOf(add, "partition", c.Partition, PartitionNames())
	}
	var seen []any // the structs reported (several datasets may own one)
	for _, o := range Kinds {
		for _, get := range o.params {
			if k != nil && slices.ContainsFunc(k.params, func(f func(*Config) any) bool { return sameStruct(f(c), get(c)) }) {
				continue
			}
			if slices.ContainsFunc(seen, func(v any) bool { return sameStruct(v, get(c)) }) {
				continue
			}
			seen = append(seen, get(c))
			for _, key := range registry.SetKeys(get(c)) {
				add(key, "only dataset %s uses it", commaOr(owners(get)))
			}
		}
	}
	c.validateOwn(k, add)
	if c.FromData() || (k == nil && slices.Contains([]string{"writer", "user"}, c.Partition)) {
		if c.Clients < 0 {
			add("clients", "%d must not be negative (0 or unset: every %s in the data)", c.Clients, c.Partition)
		}
	} else {
		positiveInt("clients", c.Clients)
	}
	switch p := c.partition(); {
	case c.TestFraction == 0:
	case p != nil && p.OwnSplit:
		add("test_fraction", "dataset %s holds its own held-out split: test_fraction does not apply", c.Dataset)
	case !c.FromData():
		add("test_fraction", "only partitions %s use it (each client's held-out share)", strings.Join(fromDataPartitions(), " and "))
	}
	if c.heldOutShare() && !(c.TestFraction > 0 && c.TestFraction < 1) {
		add("test_fraction", "%v must be in (0, 1)", c.TestFraction)
	}
	if k != nil && k.Validate != nil {
		k.Validate(c, add, given)
	}
}

// validateOwn refuses the keys of Own that the dataset k does not own, and
// those that do not decode into its key struct.
func (c *Config) validateOwn(k *Kind, add Problems) {
	var mine []string
	if k != nil && k.Own != nil {
		mine = registry.Keys(k.Own())
	}
	keys := slices.Sorted(maps.Keys(c.Own))
	for _, key := range keys {
		if !slices.Contains(mine, key) {
			var users []string
			for _, o := range Kinds {
				if o.Own != nil && slices.Contains(registry.Keys(o.Own()), key) {
					users = append(users, o.Name)
				}
			}
			add(key, "only dataset %s uses it", commaOr(users))
		}
	}
	if len(mine) > 0 && len(keys) > 0 {
		if err := c.OwnKeys(k.Own()); err != nil {
			add(keys[0], "%v", err)
		}
	}
}

// OwnKeys decodes the keys of Own into dst, a pointer to the dataset's own
// key struct (Kind.Own); keys it does not have are left out.
func (c *Config) OwnKeys(dst any) error {
	if len(c.Own) == 0 {
		return nil
	}
	b, err := yaml.Marshal(c.Own)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(b, dst)
}

// OwnKeyType returns the type of the key of the data section that a
// registered dataset's own key struct (Kind.Own) has, and false when none
// has it: the decoder checks such a key's value against it.
func (Config) OwnKeyType(key string) (reflect.Type, bool) {
	for _, k := range Kinds {
		if k.Own == nil {
			continue
		}
		t := reflect.TypeOf(k.Own()).Elem()
		for i := 0; i < t.NumField(); i++ {
			if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name == key {
				return t.Field(i).Type, true
			}
		}
	}
	return nil, false
}

// commaOr joins a list as "a, b or c".
func commaOr(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// sameStruct reports whether two struct pointers point at the same field.
func sameStruct(a, b any) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }

// owners lists the datasets that own the struct get returns.
func owners(get func(*Config) any) []string {
	var c Config
	var out []string
	for _, k := range Kinds {
		for _, f := range k.params {
			if sameStruct(f(&c), get(&c)) {
				out = append(out, k.Name)
			}
		}
	}
	return out
}

func fromDataPartitions() []string {
	var out []string
	for _, k := range Kinds {
		for _, p := range k.Partitions {
			if p.FromData && !slices.Contains(out, p.Name) {
				out = append(out, p.Name)
			}
		}
	}
	return out
}

// Resolved returns the section with its file names made relative to
// baseDir (the config file's folder).
func (c Config) Resolved(baseDir string) Config {
	if k := c.kind(); k != nil && k.Paths != nil {
		for _, p := range k.Paths(&c) {
			if *p != "" && !filepath.IsAbs(*p) && baseDir != "" {
				*p = filepath.Join(baseDir, *p)
			}
		}
	}
	return c
}

// Load builds the population the (normalized, resolved) section describes,
// reading files with l. Randomness: the split (shards, label mix, held-out
// parts, writer subset) comes from the stream ("partition"), a subset of
// text users from ("data/subset"). Errors are KeyErrors naming the key they
// concern.
func (c Config) Load(l *Loader, root rng.Root) (*Federated, error) {
	return c.LoadContext(context.Background(), l, root)
}

// LoadContext is Load stopping with ctx's error once ctx is done (the
// readers look at it every few thousand records).
func (c Config) LoadContext(ctx context.Context, l *Loader, root rng.Root) (*Federated, error) {
	k := c.kind()
	if k == nil {
		return nil, &KeyError{Key: "dataset", Err: fmt.Errorf("unknown dataset %q", c.Dataset)}
	}
	return k.Load(ctx, &c, l, root)
}

// Population returns the number of clients of the section's population,
// reading as little as it can (see each dataset's population).
func (c Config) Population(l *Loader, root rng.Root) (int, error) {
	return c.PopulationContext(context.Background(), l, root)
}

// PopulationContext is Population stopping with ctx's error once ctx is
// done.
func (c Config) PopulationContext(ctx context.Context, l *Loader, root rng.Root) (int, error) {
	k := c.kind()
	if k == nil || k.Population == nil {
		return c.Clients, nil
	}
	return k.Population(ctx, &c, l, root)
}

// DataKind names the data the section describes and whether it is
// next-word text, reading only what tells it: for a dataset whose data
// tells (a LEAF folder), the first example of its first training file
// (name leaf-femnist or leaf-shakespeare); for the others, the
// configuration (name the dataset's).
func (c Config) DataKind(ctx context.Context) (name string, text bool, err error) {
	k := c.kind()
	if k == nil || !k.DataTells {
		return c.Dataset, c.Text(), nil
	}
	kind, err := LEAFKindContext(ctx, c.Path)
	if err != nil {
		return "", false, keyErr("path", err)
	}
	return "leaf-" + kind, kind == LEAFShakespeare, nil
}

// Inputs lists the files Load reads, by the key that names them (the
// pinned GoMNIST module's files are not listed: go.sum fixes their content).
func (c Config) Inputs(l *Loader) ([]Input, error) {
	k := c.kind()
	if k == nil || k.Inputs == nil {
		return nil, nil
	}
	return k.Inputs(&c, l)
}

// Shape returns the models' input dimension and classes for the section's
// data, and the memory the data holds besides the population (bytes), from
// the configuration alone; textModel says whether the model reads text (for
// a dataset whose data tells).
func (c Config) Shape(textModel bool) (dim, classes, bytes float64) {
	k := c.kind()
	if k == nil || k.Shape == nil {
		return 784, 10, 0
	}
	return k.Shape(&c, textModel)
}

// Keys lists the keys of the structs the dataset owns (its own keys, besides
// the common dataset, partition, clients and test_fraction).
func (k *Kind) Keys() []string {
	var c Config
	var keys []string
	for _, get := range k.params {
		keys = append(keys, registry.Keys(get(&c))...)
	}
	if k.Own != nil {
		keys = append(keys, registry.Keys(k.Own())...)
	}
	return keys
}
