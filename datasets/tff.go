package datasets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	_ "modernc.org/sqlite" // pure-Go SQLite driver "sqlite" (no cgo)

	"dpfl/results/regular"
)

// TensorFlow Federated's simulation datasets, as the SQLite files that
// tff.simulation.datasets.{emnist,stackoverflow,shakespeare}.load_data
// downloads and caches. Each file has the tables
//
//	examples(split_name TEXT, client_id TEXT, serialized_example_proto BLOB)
//	client_metadata(client_id TEXT, split_name TEXT, num_examples INTEGER)
//
// with one serialized tf.train.Example per row. The features read are:
//
//   - EMNIST: pixels (float_list of 28×28 values in [0, 1], stored as TFF
//     stores them: 1.0 is the white background) and label (int64_list of
//     one class in [0, 62): digits, then upper- and lower-case letters; the
//     digits-only file has 0-9). Splits train and test; one client per
//     writer (3,400 in the full file, 3,383 in the digits-only one).
//   - StackOverflow: tokens (bytes_list of one space-separated sentence).
//     Splits train, heldout and test (heldout's users are not train's, so it
//     cannot be a held-out split here).
//   - Shakespeare: snippets (bytes_list of one passage of a character's
//     lines). Splits train and test.

// TFF dataset kinds (LoadTFF).
const (
	TFFEMNIST        = "emnist"
	TFFStackOverflow = "stackoverflow"
	TFFShakespeare   = "shakespeare"
)

// TFFKinds lists the kinds LoadTFF reads.
var TFFKinds = []string{TFFEMNIST, TFFStackOverflow, TFFShakespeare}

// tffSchema is what a TFF file must hold, for error messages.
const tffSchema = "examples(split_name, client_id, serialized_example_proto) and client_metadata(client_id, split_name, num_examples)"

// LoadTFF reads a TFF SQLite file of the given kind:
//
//   - emnist: one client per writer owning its train-split images (28×28,
//     62 classes, or 10 with opt.DigitsOnly); its test-split images are its
//     held-out part.
//   - stackoverflow: next-word prediction, one client per user: sentences
//     are tokenized, the vocabulary built from the training split and
//     windowed exactly as NewTextFederated does (see buildDocs; de-duplication
//     is not applied and the held-out documents are the test split's).
//   - shakespeare: next-character prediction, the same with characters as
//     tokens (case and white space kept).
//
// Clients are ordered by client ID. The file is streamed: a census of the
// training split first, then only the chosen clients' examples are kept.
// With opt.Stream (see StreamAuto, StreamAlways) a text file's training
// examples are not kept at all: Federated.Cohorts reads each cohort's from
// the file.
func LoadTFF(path, kind string, opt FileOptions) (*Federated, error) {
	return LoadTFFContext(context.Background(), path, kind, opt)
}

// LoadTFFContext is LoadTFF stopping with ctx's error once ctx is done.
func LoadTFFContext(ctx context.Context, path, kind string, opt FileOptions) (*Federated, error) {
	opt = opt.withDefaults()
	t, err := openTFF(ctx, path, opt)
	if err != nil {
		return nil, err
	}
	defer t.db.Close()
	name := "tff-" + kind
	var f *Federated
	stream, err := t.streams(kind, opt)
	if err != nil {
		return nil, t.wrap(err)
	}
	switch kind {
	case TFFEMNIST:
		var c *census
		if c, err = t.imageCensus(opt); err == nil {
			f, err = buildImages(ctx, name, t.images, c, opt)
		}
	case TFFStackOverflow, TFFShakespeare:
		tok := tokenizer{chars: kind == TFFShakespeare}
		scan := t.docs(kind)
		var c *census
		if c, err = countDocs(scan, tok, opt); err == nil && stream {
			f, err = streamDocs(ctx, t, name, kind, tok, c, opt)
		} else if err == nil {
			f, err = buildDocs(ctx, name, scan, tok, c, opt)
		}
	default:
		return nil, fmt.Errorf("datasets: unknown TFF dataset %q (want one of %s)", kind, strings.Join(TFFKinds, ", "))
	}
	if err != nil {
		return nil, t.wrap(err)
	}
	return f, nil
}

// CountTFF returns the number of clients LoadTFF(path, kind, opt) gives
// (opt.Clients, if set and not above the eligible clients), reading only what
// the census needs: EMNIST's client_metadata (all 62 classes) or its labels
// (digits only); the text's training split.
func CountTFF(path, kind string, opt FileOptions) (int, error) {
	return CountTFFContext(context.Background(), path, kind, opt)
}

// CountTFFContext is CountTFF stopping with ctx's error once ctx is done.
func CountTFFContext(ctx context.Context, path, kind string, opt FileOptions) (int, error) {
	opt = opt.withDefaults()
	t, err := openTFF(ctx, path, opt)
	if err != nil {
		return 0, err
	}
	defer t.db.Close()
	var c *census
	min := 1
	switch kind {
	case TFFEMNIST:
		c, err = t.imageCensus(opt)
	case TFFStackOverflow, TFFShakespeare:
		c, err = countDocs(t.docs(kind), tokenizer{chars: kind == TFFShakespeare}, opt)
		min = opt.Text.MinTokens
	default:
		return 0, fmt.Errorf("datasets: unknown TFF dataset %q (want one of %s)", kind, strings.Join(TFFKinds, ", "))
	}
	if err != nil {
		return 0, t.wrap(err)
	}
	eligible, kept, err := c.choose(min, opt)
	if err != nil {
		return 0, t.wrap(err)
	}
	if len(eligible) == 0 {
		return 0, fmt.Errorf("datasets: %s: no client is eligible", path)
	}
	return len(kept), nil
}

type tffFile struct {
	ctx  context.Context
	db   *sql.DB
	path string
	size int64 // bytes
}

// wrap names the file in an error from a reader (the builders' errors name
// neither the package nor the file).
func (t *tffFile) wrap(err error) error {
	if cerr := t.ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		// SQLite reports a query cut by the context as interrupted.
		return fmt.Errorf("datasets: %s: %w", t.path, cerr)
	}
	if strings.HasPrefix(err.Error(), "datasets: ") && strings.Contains(err.Error(), t.path) {
		return err
	}
	return fmt.Errorf("datasets: %s: %w", t.path, err)
}

// openTFF opens a TFF SQLite file read-only and checks its tables and the
// splits opt names.
func openTFF(ctx context.Context, path string, opt FileOptions) (*tffFile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("datasets: %s is a folder, want a TFF SQLite file", path)
	}
	// Not a FIFO or device: SQLite's open would block or read for ever.
	if err := regular.Check(path); err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	// A URI, so that mode=ro applies: a missing file is never created.
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?mode=ro"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("datasets: %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	t := &tffFile{ctx: ctx, db: db, path: path, size: st.Size()}
	if err := t.check(opt); err != nil {
		db.Close()
		return nil, t.wrap(err)
	}
	return t, nil
}

func (t *tffFile) check(opt FileOptions) error {
	want := map[string][]string{
		"examples":        {"split_name", "client_id", "serialized_example_proto"},
		"client_metadata": {"client_id", "split_name", "num_examples"},
	}
	for _, table := range []string{"examples", "client_metadata"} {
		rows, err := t.db.QueryContext(t.ctx, "SELECT name FROM pragma_table_info(?)", table)
		if err != nil {
			if strings.Contains(err.Error(), "not a database") {
				return fmt.Errorf("datasets: %s is not a SQLite file (want a TFF SQLite file with tables %s)", t.path, tffSchema)
			}
			return fmt.Errorf("datasets: %s: %w", t.path, err)
		}
		var cols []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return fmt.Errorf("datasets: %s: %w", t.path, err)
			}
			cols = append(cols, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("datasets: %s: %w", t.path, err)
		}
		if len(cols) == 0 {
			return fmt.Errorf("datasets: %s: table %s missing (a TFF SQLite file has tables %s)", t.path, table, tffSchema)
		}
		for _, c := range want[table] {
			if !slices.Contains(cols, c) {
				return fmt.Errorf("datasets: %s: table %s has no column %s (a TFF SQLite file has tables %s)", t.path, table, c, tffSchema)
			}
		}
	}
	splits, err := t.splits()
	if err != nil {
		return err
	}
	for _, s := range []string{opt.TrainSplit, opt.TestSplit} {
		if !slices.Contains(splits, s) {
			return fmt.Errorf("datasets: %s: no split %q in client_metadata (the file has %s)", t.path, s, strings.Join(splits, ", "))
		}
	}
	return nil
}

// splits lists the split names of client_metadata.
func (t *tffFile) splits() ([]string, error) {
	rows, err := t.db.QueryContext(t.ctx, "SELECT DISTINCT split_name FROM client_metadata")
	if err != nil {
		return nil, fmt.Errorf("datasets: %s: client_metadata: %w", t.path, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("datasets: %s: client_metadata: %w", t.path, err)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out, rows.Err()
}

// emnistMinProto is the fewest bytes a stored EMNIST example takes: its
// 28×28 float32 pixels.
const emnistMinProto = emnistPixels * 4

// imageCensus counts the training images per client: from client_metadata
// for all 62 classes; from the labels when only digits are kept. The counts
// of client_metadata size the examples' memory, so they are refused when
// the file cannot hold that many examples.
func (t *tffFile) imageCensus(opt FileOptions) (*census, error) {
	if opt.DigitsOnly {
		return countImages(t.labels, opt)
	}
	rows, err := t.db.QueryContext(t.ctx, "SELECT client_id, num_examples FROM client_metadata WHERE split_name = ?", opt.TrainSplit)
	if err != nil {
		return nil, fmt.Errorf("client_metadata: %w", err)
	}
	defer rows.Close()
	c := newCensus()
	capacity := t.size / emnistMinProto
	var total int64
	for row := 1; rows.Next(); row++ {
		if err := ctxEvery(t.ctx, row); err != nil {
			return nil, err
		}
		var (
			client string
			n      int64
		)
		if err := rows.Scan(&client, &n); err != nil {
			return nil, fmt.Errorf("client_metadata: %w", err)
		}
		if n < 0 {
			return nil, fmt.Errorf("table client_metadata: client %q has num_examples %d in split %s (want a count)", client, n, opt.TrainSplit)
		}
		if n > capacity-total {
			before := ""
			if total > 0 {
				before = fmt.Sprintf(" (%d for the clients before it)", total)
			}
			return nil, fmt.Errorf("table client_metadata: client %q has num_examples %d in split %s%s: more than the file's %d bytes can hold (at most %d examples of 28×28 float32 pixels)",
				client, n, opt.TrainSplit, before, t.size, capacity)
		}
		total += n
		c.add(client, int(n))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("client_metadata: %w", err)
	}
	return c, t.ctx.Err()
}

// scan streams the examples of the given splits in the file's row order (a
// full table scan, so the order never depends on an index), calling fn with
// the split's position in splits, the client and the serialized proto
// (valid during the call only) of the clients keep wants.
func (t *tffFile) scan(splits []string, keep keepFunc, fn func(split int, client string, proto []byte) error) error {
	rows, err := t.db.QueryContext(t.ctx, "SELECT split_name, client_id, serialized_example_proto FROM examples NOT INDEXED")
	if err != nil {
		return fmt.Errorf("examples: %w", err)
	}
	defer rows.Close()
	var split, client, proto sql.RawBytes
	for row := 1; rows.Next(); row++ {
		if err := ctxEvery(t.ctx, row); err != nil {
			return err
		}
		if err := rows.Scan(&split, &client, &proto); err != nil {
			return fmt.Errorf("examples row %d: %w", row, err)
		}
		s := slices.IndexFunc(splits, func(name string) bool { return name == string(split) })
		if s < 0 || keep != nil && !keep(client) {
			continue
		}
		if err := fn(s, string(client), proto); err != nil {
			return fmt.Errorf("examples row %d (split %s, client %s): %w", row, split, client, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("examples: %w", err)
	}
	return t.ctx.Err()
}

// label returns the one class of an EMNIST example.
func emnistLabel(dec *exampleDecoder) (int64, error) {
	label, err := dec.feature("label", featureInt64)
	if err != nil {
		return 0, err
	}
	if len(label.ints) != 1 {
		return 0, fmt.Errorf("feature \"label\" has %d values, want 1", len(label.ints))
	}
	return label.ints[0], nil
}

// labels streams the labels of EMNIST's split (the pixels are skipped).
func (t *tffFile) labels(split string, fn func(client string, y int64) error) error {
	dec := newExampleDecoder("label")
	return t.scan([]string{split}, nil, func(_ int, client string, proto []byte) error {
		if err := dec.decode(proto); err != nil {
			return fmt.Errorf("malformed tf.train.Example: %w", err)
		}
		y, err := emnistLabel(dec)
		if err != nil {
			return err
		}
		return fn(client, y)
	})
}

// images streams EMNIST examples.
func (t *tffFile) images(splits []string, keep keepFunc, fn func(split int, client string, x []float32, y int64) error) error {
	dec := newExampleDecoder("pixels", "label")
	return t.scan(splits, keep, func(split int, client string, proto []byte) error {
		if err := dec.decode(proto); err != nil {
			return fmt.Errorf("malformed tf.train.Example: %w", err)
		}
		px, err := dec.feature("pixels", featureFloat)
		if err != nil {
			return err
		}
		if len(px.floats) != emnistPixels {
			return fmt.Errorf("feature \"pixels\" has %d values, want 28×28 = %d", len(px.floats), emnistPixels)
		}
		if err := finitePixels(px.floats); err != nil {
			return fmt.Errorf("feature \"pixels\": %w", err)
		}
		y, err := emnistLabel(dec)
		if err != nil {
			return err
		}
		return fn(split, client, px.floats, y)
	})
}

// docs streams the text examples of kind: StackOverflow's tokens,
// Shakespeare's snippets.
func (t *tffFile) docs(kind string) docScan {
	feature := "tokens"
	if kind == TFFShakespeare {
		feature = "snippets"
	}
	return func(splits []string, keep keepFunc, fn func(split int, client, text string) error) error {
		dec := newExampleDecoder(feature)
		return t.scan(splits, keep, func(split int, client string, proto []byte) error {
			if err := dec.decode(proto); err != nil {
				return fmt.Errorf("malformed tf.train.Example: %w", err)
			}
			f, err := dec.feature(feature, featureBytes)
			if err != nil {
				return err
			}
			if len(f.bytes) != 1 {
				return fmt.Errorf("feature %q has %d values, want 1", feature, len(f.bytes))
			}
			return fn(split, client, string(f.bytes[0]))
		})
	}
}

// TensorFlow Federated's files (see fileKindOf).
var (
	tffEMNISTKind = fileKindOf("tff-emnist", "TensorFlow Federated's EMNIST SQLite file at path: 28x28 images by writer, 62 classes (digits_only: 10)",
		false, true, nil, tffLoad("emnist"), tffCount("emnist"),
		func(c *Config, _ bool) (float64, float64, float64) { return 784, imageClasses(c), 0 })
	tffStackOverflowKind = fileKindOf("tff-stackoverflow", "TensorFlow Federated's StackOverflow SQLite file at path: next-word text by user",
		true, false, func(c *Config) {
			if c.SeqLen == 0 {
				c.SeqLen = 20
			}
		}, tffLoad("stackoverflow"), tffCount("stackoverflow"), tokenShape)
	tffShakespeareKind = fileKindOf("tff-shakespeare", "TensorFlow Federated's Shakespeare SQLite file at path: next-character text by role",
		true, false, func(c *Config) {
			if c.SeqLen == 0 {
				c.SeqLen = 80 // TFF's Shakespeare task
			}
		}, tffLoad("shakespeare"), tffCount("shakespeare"), tokenShape)
)

func init() {
	tffEMNISTKind.Order, tffStackOverflowKind.Order, tffShakespeareKind.Order = 40, 50, 60
	Register(&tffEMNISTKind)
	Register(&tffStackOverflowKind)
	Register(&tffShakespeareKind)
}
