package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"dpfl/datasets"
	"dpfl/sim/rng"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

const dataUsageHead = `Usage:
  dpfl data [flags] DATASET

Prints the partition statistics of a federated dataset: clients, examples per
client (min/median/max), held-out examples, classes per client or vocabulary
coverage, and writes a histogram of examples per client (PNG). The flags set
the keys of a run's data section (-mnist: dir, -qmnist: qmnist_dir, -seq:
seq_len, -min-tokens: min_tokens); those the dataset does not use are
ignored. The default partition is the one where the data makes the clients
(mnist: writer, one client per NIST writer, needs the QMNIST label files:
-qmnist or $DPFL_QMNIST_DIR); iid and dirichlet take -clients (default 100).
The federated files (tff-*, leaf) are streamed: -clients N keeps a random
subset of N clients and reads only their examples into memory.

Datasets:
`

// dataUsage is the help text, with the datasets of datasets.Kinds.
func dataUsage() string {
	var b strings.Builder
	b.WriteString(dataUsageHead)
	for _, k := range datasets.Kinds {
		var parts []string
		for _, p := range k.Partitions {
			parts = append(parts, p.Name)
		}
		fmt.Fprintf(&b, "  %-17s %s (partitions: %s)\n", k.Name, k.Doc, strings.Join(parts, ", "))
	}
	b.WriteString("\nFlags:\n")
	return b.String()
}

// dataStats is what dpfl data reports.
type dataStats struct {
	clients          int
	sizes            []int // training examples per client
	held             []int // held-out examples per client (natural partitions)
	total, testTotal int
	classes          int   // classifiers: number of classes
	perClient        []int // classifiers: distinct labels per client
	vocab            int   // text: ids in the vocabulary, specials included
	covTrain, covTst float64
	tokens           int // text: non-padding training targets
}

// dataRequest is a parsed dpfl data command line.
type dataRequest struct {
	cfg  datasets.Config // normalized and validated
	kind *datasets.Kind
	seed uint64
	plot string
}

// dataFlagKeys maps dpfl data's flags to the data section's keys.
var dataFlagKeys = map[string]string{
	"partition": "partition", "clients": "clients", "alpha": "alpha", "mnist": "dir", "qmnist": "qmnist_dir",
	"test-fraction": "test_fraction", "changelogs": "changelogs", "path": "path", "vocab": "vocab", "seq": "seq_len", "min-tokens": "min_tokens",
	"per-client": "per_client", "train-split": "train_split", "test-split": "test_split", "digits-only": "digits_only",
}

// parseData parses the command line into a data section; ok is false when
// the command is done (help, or a usage error already reported).
func parseData(args []string, stderr io.Writer) (req dataRequest, code int, ok bool) {
	fs := flag.NewFlagSet("data", flag.ContinueOnError)
	var c datasets.Config
	fs.StringVar(&c.Partition, "partition", "", "mnist: writer (the default), iid or dirichlet")
	fs.IntVar(&c.Clients, "clients", 0, "population size (iid/dirichlet: default 100; writer, text, tff-*, leaf: a random subset, 0 = every writer or user)")
	fs.Float64Var(&c.Alpha, "alpha", 0.5, "mnist dirichlet: concentration")
	fs.IntVar(&c.PerClient, "per-client", 0, "mnist iid: examples per client, drawn without replacement (0: all 60,000 dealt evenly)")
	fs.Uint64Var(&req.seed, "seed", 1, "root seed (partition stream)")
	fs.StringVar(&c.Dir, "mnist", "", "folder of the MNIST IDX files (default: GoMNIST in the module cache, or $"+datasets.MNISTDirEnv+")")
	fs.StringVar(&c.QMNISTDir, "qmnist", "", "folder of the QMNIST label files (default $"+datasets.QMNISTDirEnv+")")
	fs.Float64Var(&c.TestFraction, "test-fraction", 0, "held-out share of each client's data (default 0.1 for writers, 0.2 for text)")
	fs.StringVar(&c.Changelogs, "changelogs", datasets.DebianPinned, "debian: pinned (the committed manifest), or a glob of changelog.Debian.gz files such as "+datasets.DebianChangelogGlob)
	fs.StringVar(&c.Path, "path", "", "text: directory or JSONL file; tff-*: the SQLite file; leaf: the dataset folder")
	fs.StringVar(&c.TrainSplit, "train-split", "train", "tff-*: the training split")
	fs.StringVar(&c.TestSplit, "test-split", "test", "tff-*: the held-out split (the same clients' examples)")
	fs.BoolVar(&c.DigitsOnly, "digits-only", false, "tff-emnist, leaf FEMNIST: keep the digits (10 classes)")
	fs.IntVar(&c.Vocab, "vocab", 1000, "text: vocabulary words (special tokens excluded)")
	fs.IntVar(&c.SeqLen, "seq", 20, "text: tokens per example")
	fs.IntVar(&c.MinTokens, "min-tokens", 100, "text: drop users with fewer training tokens")
	fs.StringVar(&req.plot, "plot", "", "histogram PNG to write (default data-DATASET.png; \"none\" to skip)")
	pos, code, ok := parseInterleaved(fs, args, dataUsage(), stderr)
	if !ok {
		return req, code, false
	}
	usageErr := func(format string, a ...any) (dataRequest, int, bool) {
		fmt.Fprintf(stderr, "dpfl data: "+format+"\n", a...)
		return req, exitUsage, false
	}
	if len(pos) != 1 {
		return usageErr("want one DATASET (%s), got %d arguments (see dpfl data -h)", strings.Join(datasets.KindNames(nil), ", "), len(pos))
	}
	if req.kind = datasets.LookupKind(pos[0]); req.kind == nil {
		return usageErr("unknown dataset %q (want %s)", pos[0], strings.Join(datasets.KindNames(nil), ", "))
	}
	// The flags given, of the keys the dataset uses; the defaults for the
	// rest.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[dataFlagKeys[f.Name]] = true })
	uses := append([]string{"partition", "clients", "test_fraction"}, req.kind.Keys()...)
	req.cfg = datasets.Config{Dataset: req.kind.Name}
	from, to := reflect.ValueOf(&c).Elem(), reflect.ValueOf(&req.cfg).Elem()
	for _, key := range uses {
		if set[key] {
			copyKey(to, from, key)
		}
	}
	if !set["partition"] {
		req.cfg.Partition = defaultPartition(req.kind)
	}
	if !req.cfg.FromData() && !set["clients"] {
		req.cfg.Clients = 100
	}
	req.cfg.Normalize()
	var problems []string
	req.cfg.Validate(func(key, format string, args ...any) {
		problems = append(problems, "-"+flagOf(key)+": "+fmt.Sprintf(format, args...))
	}, func(key string) bool { return set[key] })
	if len(problems) > 0 {
		return usageErr("%s", strings.Join(problems, "; "))
	}
	return req, exitOK, true
}

// defaultPartition is dpfl data's default: the first partition where the
// data makes the clients (writer for mnist), else the dataset's default.
func defaultPartition(k *datasets.Kind) string {
	for _, p := range k.Partitions {
		if p.FromData {
			return p.Name
		}
	}
	return k.Partitions[0].Name
}

// flagOf is the flag that sets a key of the data section.
func flagOf(key string) string {
	for f, k := range dataFlagKeys {
		if k == key {
			return f
		}
	}
	return key
}

// copyKey copies the field with YAML key key (inlined structs included)
// from one data section to another.
func copyKey(to, from reflect.Value, key string) {
	for i := 0; i < from.NumField(); i++ {
		f := from.Type().Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case opts == "inline" && f.Type.Kind() == reflect.Struct:
			copyKey(to.Field(i), from.Field(i), key)
		case opts == "inline": // a registered dataset's own keys (datasets.Config.Own)
			if v, ok := from.Field(i).Interface().(map[string]any)[key]; ok {
				if to.Field(i).IsNil() {
					to.Field(i).Set(reflect.ValueOf(map[string]any{}))
				}
				to.Field(i).SetMapIndex(reflect.ValueOf(key), reflect.ValueOf(v))
			}
		case name == key:
			to.Field(i).Set(from.Field(i))
		}
	}
}

// cmdData prints partition statistics and writes a histogram plot.
func cmdData(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	req, code, ok := parseData(args, stderr)
	if !ok {
		return code
	}
	req.cfg.Stream = datasets.StreamNever // the statistics read every client's examples
	f, err := req.cfg.LoadContext(ctx, dataLoader(), rng.New(req.seed))
	var ke *datasets.KeyError
	if errors.As(err, &ke) {
		err = ke.Err // the flags name the keys
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return failed(ctx, stderr, "data", err)
	}
	for _, n := range f.Notes {
		fmt.Fprintln(stderr, "dpfl data: "+n)
	}
	name, partition := req.kind.Name, req.cfg.Partition
	if len(req.kind.Partitions) > 1 {
		f.Name = name + "-" + partition
	} else {
		partition = ""
	}
	st := statsOf(f)
	out := req.plot
	if out == "" {
		out = "data-" + name + ".png"
	}
	if out != "none" {
		if err := histogram(out, st.sizes, fmt.Sprintf("%s: examples per client (%d clients)", f.Name, st.clients)); err != nil {
			fmt.Fprintf(stderr, "dpfl data: plot: %s\n", oneLine(err))
			return exitFailure
		}
	} else {
		out = ""
	}
	if req.kind.DataTells {
		name = f.Name // which data the folder holds
	}
	printStats(stdout, f, name, partition, st, out)
	return exitOK
}

func statsOf(f *datasets.Federated) dataStats {
	st := dataStats{clients: f.NumClients(), testTotal: f.Test.Len()}
	for c, idx := range f.Clients {
		st.sizes = append(st.sizes, len(idx))
		st.total += len(idx)
		if f.ClientTest != nil {
			st.held = append(st.held, len(f.ClientTest[c]))
		}
	}
	if f.Train.Next != nil {
		st.vocab = f.Train.Classes
		st.covTrain, st.covTst = datasets.TokenCoverage(f.Train), datasets.TokenCoverage(f.Test)
		for _, t := range f.Train.Next {
			if t != datasets.PadID {
				st.tokens++
			}
		}
		return st
	}
	st.classes = f.Train.Classes
	for _, idx := range f.Clients {
		seen := map[int32]bool{}
		for _, i := range idx {
			seen[f.Train.Y[i]] = true
		}
		st.perClient = append(st.perClient, len(seen))
	}
	return st
}

// minMedMax returns the minimum, median (lower middle for even counts) and
// maximum of xs.
func minMedMax(xs []int) (lo, med, hi int) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[0], s[(len(s)-1)/2], s[len(s)-1]
}

func printStats(w io.Writer, f *datasets.Federated, name, partition string, st dataStats, plotFile string) {
	what := name
	if partition != "" {
		what += " (" + partition + " partition)"
	}
	fmt.Fprintf(w, "dataset            %s\n", what)
	fmt.Fprintf(w, "clients            %d\n", st.clients)
	lo, med, hi := minMedMax(st.sizes)
	fmt.Fprintf(w, "examples/client    min %d  median %d  max %d  (total %d)\n", lo, med, hi, st.total)
	if st.held != nil {
		lo, med, hi = minMedMax(st.held)
		fmt.Fprintf(w, "held-out/client    min %d  median %d  max %d  (central test set %d)\n", lo, med, hi, st.testTotal)
	} else {
		fmt.Fprintf(w, "central test set   %d\n", st.testTotal)
	}
	if st.vocab > 0 {
		fmt.Fprintf(w, "examples           sequences of %d tokens; %d training targets\n", f.Train.Dim, st.tokens)
		fmt.Fprintf(w, "vocabulary         %d ids (%d words + %d special)\n", st.vocab, st.vocab-datasets.NumSpecial, datasets.NumSpecial)
		fmt.Fprintf(w, "coverage           train %.3f  test %.3f (share of word targets in the vocabulary)\n", st.covTrain, st.covTst)
		if f.Vocab != nil && len(f.Vocab.Words) > 0 {
			fmt.Fprintf(w, "top words          %s\n", strings.Join(f.Vocab.Words[:min(10, len(f.Vocab.Words))], " "))
		}
	} else {
		lo, med, hi = minMedMax(st.perClient)
		fmt.Fprintf(w, "classes            %d; per client min %d  median %d  max %d\n", st.classes, lo, med, hi)
	}
	if plotFile != "" {
		fmt.Fprintf(w, "plot               %s\n", plotFile)
	}
}

// histogram writes a PNG histogram of the client sizes.
func histogram(path string, sizes []int, title string) error {
	vals := make(plotter.Values, len(sizes))
	for i, s := range sizes {
		vals[i] = float64(s)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "training examples per client"
	p.Y.Label.Text = "clients"
	bins := min(40, max(1, len(sizes)/5))
	h, err := plotter.NewHist(vals, bins)
	if err != nil {
		return err
	}
	p.Add(h)
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}
