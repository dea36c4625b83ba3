package datasets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"dpfl/sim/rng"
)

// SplitConfig is the split names of a TensorFlow Federated file (tff-*).
type SplitConfig struct {
	// TrainSplit and TestSplit are the split names of the file (default
	// train and test, as TFF ships them; StackOverflow also has heldout,
	// whose users are not train's, so it cannot be a client's held-out
	// part). Each client's held-out examples are its examples of
	// TestSplit; the central test set is their union.
	TrainSplit string `yaml:"train_split"`
	TestSplit  string `yaml:"test_split"`
	// Stream says whether a run holds the population's training examples
	// in memory or reads each round's cohort from the file (text files:
	// tff-stackoverflow, tff-shakespeare): auto (or unset) streams a file
	// of at least 1 GiB (StreamAutoBytes) whose examples table has an index
	// on client_id, as TFF's files have; always streams (and refuses a file
	// without the index); never reads into memory. Streaming holds the
	// current cohort's examples and the next one's, read by client id while
	// the current cohort trains, besides the census, the vocabulary and the
	// central test set (read into memory either way); it changes no result.
	// dpfl account reads only the census either way.
	Stream string `yaml:"stream,omitempty"`
}

// DigitsConfig is the digits-only option of the 62-class image files.
type DigitsConfig struct {
	// DigitsOnly keeps the digits of a 62-class EMNIST/FEMNIST file
	// (tff-emnist, leaf FEMNIST; default false): 10 classes, letters
	// dropped, writers left without a training digit dropped. TFF's
	// digits-only file needs no flag (its labels are digits) but has 62
	// output classes without it.
	DigitsOnly bool `yaml:"digits_only"`
}

// fileKindOf is a federated file's dataset: text (its TokenConfig keys
// apply) or images (digits: its DigitsOnly applies), the TFF split names
// for the tff-* files, read by load and counted by count: one client per
// client of the file, each holding out its examples of the file's test
// split; Clients keeps a random subset, drawn from ("data/subset"), and only
// its examples are read into memory.
func fileKindOf(name, doc string, text, digits bool, defaults func(*Config),
	load func(context.Context, string, FileOptions) (*Federated, error), count func(context.Context, string, FileOptions) (int, error),
	shape func(*Config, bool) (float64, float64, float64)) Kind {
	tff := strings.HasPrefix(name, "tff-")
	k := Kind{
		Name: name, Doc: doc, Text: text,
		Partitions: []Partition{{Name: "user", FromData: true, OwnSplit: true}},
		params:     []func(c *Config) any{func(c *Config) any { return &c.TextConfig }},
		Paths:      func(c *Config) []*string { return []*string{&c.Path} },
		Shape:      shape,
	}
	if text {
		k.params = append(k.params, func(c *Config) any { return &c.TokenConfig })
	}
	if tff {
		k.params = append(k.params, func(c *Config) any { return &c.SplitConfig })
	}
	if digits {
		k.params = append(k.params, func(c *Config) any { return &c.DigitsConfig })
	}
	k.Defaults = func(c *Config) {
		if tff {
			if c.TrainSplit == "" {
				c.TrainSplit = "train"
			}
			if c.TestSplit == "" {
				c.TestSplit = "test"
			}
		}
		if defaults != nil {
			defaults(c) // the file's sequence length
		}
		if text {
			c.TokenConfig.defaults(0)
		}
	}
	k.Validate = func(c *Config, add Problems, _ func(string) bool) {
		if c.Partition != "user" && slices.Contains(PartitionNames(), c.Partition) {
			add("partition", "%s has one client per client of the file: partition must be user (or unset), not %s", name, c.Partition)
		}
		if c.Path == "" {
			what := "a LEAF dataset folder (FEMNIST or Shakespeare) holding train/ and test/ folders of JSON files"
			if tff {
				what = fmt.Sprintf("the SQLite file that tff.simulation.datasets.%s.load_data caches", strings.TrimPrefix(name, "tff-"))
			}
			add("path", "required for dataset %s: %s", name, what)
		}
		if tff && c.Stream != "" && !slices.Contains(StreamChoices, c.Stream) {
			add("stream", "%q: want one of %s", c.Stream, strings.Join(StreamChoices, ", "))
		} else if tff && !text && c.Stream == StreamAlways {
			add("stream", "%s: only the text files (tff-stackoverflow, tff-shakespeare) are streamed, not %s", StreamAlways, name)
		}
		if tff && c.TrainSplit == c.TestSplit {
			add("test_split", "%q is also train_split: the held-out examples must come from another split", c.TestSplit)
		}
		if text {
			c.TokenConfig.validate(add, "tokens")
		}
	}
	options := func(c *Config, root rng.Root) FileOptions {
		return FileOptions{
			TrainSplit: c.TrainSplit, TestSplit: c.TestSplit, DigitsOnly: c.DigitsOnly,
			Text:    TextOptions{Vocab: c.Vocab, SeqLen: c.SeqLen, MinTokens: c.MinTokens},
			Clients: c.Clients, Subset: root.Stream("data/subset"), Stream: c.Stream,
		}
	}
	k.Load = func(ctx context.Context, c *Config, _ *Loader, root rng.Root) (*Federated, error) {
		f, err := load(ctx, c.Path, options(c, root))
		return f, fileErr(err)
	}
	k.Population = func(ctx context.Context, c *Config, _ *Loader, root rng.Root) (int, error) {
		n, err := count(ctx, c.Path, options(c, root))
		return n, fileErr(err)
	}
	k.Inputs = func(c *Config, _ *Loader) ([]Input, error) {
		if tff {
			return []Input{{Key: "path", Root: c.Path, Files: []string{c.Path}}}, nil
		}
		files, err := LEAFFiles(c.Path)
		return []Input{{Key: "path", Root: c.Path, Files: files}}, keyErr("path", err)
	}
	return k
}

// fileErr names the key of a federated file's reading error: clients when
// more were asked for than the file has, else path.
func fileErr(err error) error {
	if errors.Is(err, ErrTooFewClients) {
		return keyErr("clients", err)
	}
	return keyErr("path", err)
}

func tffLoad(task string) func(context.Context, string, FileOptions) (*Federated, error) {
	return func(ctx context.Context, path string, opt FileOptions) (*Federated, error) {
		return LoadTFFContext(ctx, path, task, opt)
	}
}

func tffCount(task string) func(context.Context, string, FileOptions) (int, error) {
	return func(ctx context.Context, path string, opt FileOptions) (int, error) {
		return CountTFFContext(ctx, path, task, opt)
	}
}

// imageClasses is the classes of a 62-class EMNIST/FEMNIST file.
func imageClasses(c *Config) float64 {
	if c.DigitsOnly {
		return 10
	}
	return 62
}

// tokenShape is the shape of next-token text: SeqLen tokens, Vocab plus the
// special ids.
func tokenShape(c *Config, _ bool) (float64, float64, float64) {
	return float64(max(c.SeqLen, 0)), float64(max(c.Vocab, 0)) + NumSpecial, 0
}
