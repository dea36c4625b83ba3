package datasets

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"dpfl/sim/rng"
)

// Partition names accepted by NewFederated.
const (
	IID       = "iid"
	Dirichlet = "dirichlet"
)

// PartitionSpec says how to split a training pool into clients.
type PartitionSpec struct {
	Kind    string  // IID, Dirichlet or Writer
	Clients int     // population size (Writer: 0 means every writer)
	Alpha   float64 // Dirichlet concentration (Dirichlet only)
	// PerClient (IID only) gives every client this many examples, drawn
	// without replacement (Clients × PerClient of the pool; the rest are
	// unused); 0 deals the whole pool.
	PerClient int

	// Writer only (MNIST by NIST writer; see NewWriterFederated).
	QMNISTDir    string  // folder of the QMNIST label files
	TestFraction float64 // held-out share of each writer's examples (0 = 0.1)
}

// NewFederated splits train into clients as spec says, drawing randomness
// from r, and pairs it with the central test set.
func NewFederated(name string, train, test *Dataset, spec PartitionSpec, r *rand.Rand) (*Federated, error) {
	var (
		clients [][]int
		err     error
	)
	switch spec.Kind {
	case Writer:
		f, err := NewWriterFederated(train, test, WriterOptions{QMNISTDir: spec.QMNISTDir, TestFraction: spec.TestFraction, Clients: spec.Clients}, r)
		if f != nil {
			f.Name = name
		}
		return f, err
	case IID:
		n := train.Len()
		if spec.PerClient > 0 {
			if spec.Clients > 0 && spec.PerClient > n/spec.Clients {
				// (compared by division: the product may overflow)
				return nil, fmt.Errorf("datasets: %d clients of %d examples need %.6g examples; the pool has %d", spec.Clients, spec.PerClient, float64(spec.Clients)*float64(spec.PerClient), n)
			}
			n = spec.Clients * spec.PerClient
		}
		clients, err = PartitionIID(n, spec.Clients, r)
		if err == nil && n < train.Len() {
			// PartitionIID dealt a permutation of [0, n): map it onto a
			// random n of the pool.
			pick := r.Perm(train.Len())[:n]
			for _, c := range clients {
				for i := range c {
					c[i] = pick[c[i]]
				}
			}
		}
	case Dirichlet:
		clients, err = PartitionDirichlet(train.Y, train.Classes, spec.Clients, spec.Alpha, r)
	default:
		return nil, fmt.Errorf("datasets: unknown partition %q (want %q, %q or %q)", spec.Kind, IID, Dirichlet, Writer)
	}
	if err != nil {
		return nil, err
	}
	f := &Federated{Name: name, Train: train, Clients: clients, Test: test}
	return f, f.Validate()
}

// MNISTConfig is the mnist dataset's own key.
type MNISTConfig struct {
	// Dir is the folder of the MNIST IDX files; empty: the loader's default
	// (dpfl's CLI: $DPFL_MNIST_DIR), else the GoMNIST module. Relative to
	// the config file.
	Dir string `yaml:"dir"`
}

// MNISTPartitionConfig is the keys of the mnist partitions.
type MNISTPartitionConfig struct {
	Alpha float64 `yaml:"alpha"` // Dirichlet concentration (partition dirichlet; default 0.5)
	// PerClient (partition iid) gives every client this many training
	// examples, drawn without replacement: clients × per_client of MNIST's
	// 60,000 are used (e.g. clients 12000, per_client 1: example-level DP on
	// a fifth of MNIST). 0 (the default) deals all 60,000 evenly.
	PerClient int `yaml:"per_client"`
	// QMNISTDir is the folder of qmnist-train-labels.tsv.gz and
	// qmnist-test-labels.tsv.gz (partition writer; QMNIST's writer IDs for
	// the MNIST digits, from https://github.com/facebookresearch/qmnist).
	// Empty: the loader's default (dpfl's CLI: $DPFL_QMNIST_DIR). Relative to
	// the config file.
	QMNISTDir string `yaml:"qmnist_dir"`
}

// mnistBytes is the memory of the MNIST images and labels, loaded once.
const mnistBytes = 3e8

var mnistKind = Kind{
	Name: "mnist", Doc: "MNIST digits (the GoMNIST module), split iid, by Dirichlet label skew, or by NIST writer",
	Partitions: []Partition{{Name: IID}, {Name: Dirichlet}, {Name: Writer, FromData: true, DefaultTestFraction: 0.1}},
	params:     []func(c *Config) any{func(c *Config) any { return &c.MNISTConfig }, func(c *Config) any { return &c.MNISTPartitionConfig }},
	defaults: func(c *Config) {
		if c.Partition == Dirichlet && c.Alpha == 0 {
			c.Alpha = 0.5
		}
	},
	validate: func(c *Config, add Problems, given func(string) bool) {
		if c.Partition != IID && c.Partition != Dirichlet && c.Partition != Writer && slices.Contains(PartitionNames(), c.Partition) {
			text := true
			add("partition", "%s is the partition of the text datasets (%s); mnist takes iid, dirichlet or writer", c.Partition, strings.Join(KindNames(&text), ", "))
		}
		if c.Alpha != 0 && c.Partition != Dirichlet {
			add("alpha", "only partition dirichlet uses it")
		}
		if c.Partition == Dirichlet {
			if !given("alpha") && c.Alpha == 0 {
				add("alpha", "required (a positive number)")
			} else if !(c.Alpha > 0) || math.IsInf(c.Alpha, 0) {
				add("alpha", "%v must be a positive finite number", c.Alpha)
			}
		}
		if c.PerClient != 0 && c.Partition != IID {
			add("per_client", "only partition iid uses it")
		} else if c.PerClient < 0 {
			add("per_client", "%d must be positive (0 or unset: the whole pool, dealt evenly)", c.PerClient)
		} else if c.PerClient > 0 && c.Clients > 0 && c.PerClient > 60000/c.Clients {
			// (compared by division: the product may overflow)
			add("per_client", "data.clients %d × per_client %d = %.6g examples; MNIST has 60000", c.Clients, c.PerClient, float64(c.Clients)*float64(c.PerClient))
		}
		if c.QMNISTDir != "" && c.Partition != Writer {
			add("qmnist_dir", "only partition writer uses it")
		}
	},
	paths: func(c *Config) []*string { return []*string{&c.Dir, &c.QMNISTDir} },
	load: func(_ context.Context, c *Config, l *Loader, root rng.Root) (*Federated, error) {
		spec := PartitionSpec{Kind: c.Partition, Clients: c.Clients, Alpha: c.Alpha, PerClient: c.PerClient, QMNISTDir: c.QMNISTDir, TestFraction: c.TestFraction}
		if c.Partition == Writer {
			// Fail on missing label files before reading 70,000 images.
			dir, err := l.QMNISTDir(spec.QMNISTDir)
			if err != nil {
				return nil, keyErr("qmnist_dir", err)
			}
			spec.QMNISTDir = dir
		}
		train, test, err := l.LoadMNIST(c.Dir)
		if err != nil {
			return nil, keyErr("dir", err)
		}
		f, err := NewFederated(c.Dataset, train, test, spec, root.Stream("partition"))
		if err != nil {
			return nil, &KeyError{What: "mnist, partition " + c.Partition, Err: err}
		}
		return f, nil
	},
	population: func(_ context.Context, c *Config, l *Loader, _ rng.Root) (int, error) {
		if c.Partition != Writer {
			return c.Clients, nil
		}
		train, test, err := l.LoadQMNISTWriters(c.QMNISTDir)
		if err != nil {
			return 0, keyErr("qmnist_dir", err)
		}
		writers := slices.Concat(train.Writer, test.Writer)
		slices.Sort(writers)
		n := len(slices.Compact(writers))
		if c.Clients > n {
			return 0, keyErr("clients", fmt.Errorf("%d clients asked for, but MNIST has %d writers", c.Clients, n))
		}
		if c.Clients > 0 {
			n = c.Clients
		}
		return n, nil
	},
	inputs: func(c *Config, l *Loader) ([]Input, error) {
		var in []Input
		files, module, err := l.MNISTFiles(c.Dir)
		if err != nil {
			return nil, keyErr("dir", err)
		}
		if !module {
			in = append(in, Input{Key: "dir", Files: files})
		}
		if c.Partition == Writer {
			files, err := l.QMNISTFiles(c.QMNISTDir)
			if err != nil {
				return nil, keyErr("qmnist_dir", err)
			}
			in = append(in, Input{Key: "qmnist_dir", Files: files})
		}
		return in, nil
	},
	shape: func(*Config, bool) (dim, classes, bytes float64) { return 784, 10, mnistBytes },
}
