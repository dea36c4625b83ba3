package datasets

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"dpfl/results/regular"
)

// LEAF (https://leaf.cmu.edu) writes each federated dataset as JSON files in
// a train/ and a test/ folder, each file
//
//	{"users": [u, ...], "num_samples": [n, ...], "hierarchies": [...],
//	 "user_data": {u: {"x": [...], "y": [...]}, ...}}
//
// Two of its datasets are read:
//
//   - FEMNIST: x is a list of 784 floats (a 28×28 image as LEAF stores it,
//     1.0 the white background), y a class in [0, 62): digits, then upper-
//     and lower-case letters.
//   - Shakespeare: x is a string of 80 characters, y the character after it.
//
// The kind is told by the data: x's first value is a list (FEMNIST) or a
// string (Shakespeare).

// LEAF dataset kinds (LEAFKind).
const (
	LEAFFEMNIST     = "femnist"
	LEAFShakespeare = "shakespeare"
)

// LEAFFiles returns the JSON files LoadLEAF(dir) reads: dir/train/*.json,
// then dir/test/*.json, each in sorted order.
func LEAFFiles(dir string) ([]string, error) {
	var out []string
	for _, split := range []string{"train", "test"} {
		sub := filepath.Join(dir, split)
		if st, err := os.Stat(sub); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("datasets: %s: no %s/ folder (a LEAF dataset folder holds train/ and test/ folders of JSON files)", dir, split)
		}
		files, err := filepath.Glob(filepath.Join(sub, "*.json"))
		if err != nil {
			return nil, fmt.Errorf("datasets: %w", err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("datasets: %s: no .json files", sub)
		}
		slices.Sort(files)
		out = append(out, files...)
	}
	return out, nil
}

// leafSplitFiles returns the JSON files of one split folder.
func leafSplitFiles(dir, split string) ([]string, error) {
	files, err := LEAFFiles(dir)
	if err != nil {
		return nil, err
	}
	prefix := filepath.Join(dir, split) + string(filepath.Separator)
	var out []string
	for _, f := range files {
		if len(f) > len(prefix) && f[:len(prefix)] == prefix {
			out = append(out, f)
		}
	}
	return out, nil
}

// LEAFKind tells which LEAF dataset dir holds (LEAFFEMNIST or
// LEAFShakespeare) from the first example of its first training file.
func LEAFKind(dir string) (string, error) { return LEAFKindContext(context.Background(), dir) }

// LEAFKindContext is LEAFKind stopping with ctx's error once ctx is done.
func LEAFKindContext(ctx context.Context, dir string) (string, error) {
	files, err := leafSplitFiles(dir, "train")
	if err != nil {
		return "", err
	}
	kind := ""
	stop := errors.New("stop")
	for _, file := range files {
		err := leafFile(ctx, file, leafRead{}, func(user string, data leafUser) error {
			if len(data.X) == 0 {
				return nil
			}
			switch firstByte(data.X[0]) {
			case '[':
				kind = LEAFFEMNIST
			case '"':
				kind = LEAFShakespeare
			default:
				return fmt.Errorf("user %q: x holds neither lists of pixels (FEMNIST) nor strings (Shakespeare)", user)
			}
			return stop
		})
		if kind != "" {
			return kind, nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("datasets: %s: no example in train/", dir)
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// leafUser is one user's data, each example still raw JSON (X is nil when
// only the labels were asked for).
type leafUser struct {
	X []json.RawMessage `json:"x"`
	Y []json.RawMessage `json:"y"`
}

// leafLabels is what a label-only pass decodes: x is scanned, not kept.
type leafLabels struct {
	Y []json.RawMessage `json:"y"`
}

// skipValue decodes any JSON value into nothing.
type skipValue struct{}

func (*skipValue) UnmarshalJSON([]byte) error { return nil }

// leafRead says what leafFile decodes of each user.
type leafRead struct {
	labelsOnly bool     // decode y only (x is scanned, not kept)
	keep       keepFunc // nil: every user; else the users whose data is decoded
}

// leafFile streams the users of one LEAF JSON file, one user's data in
// memory at a time, and checks them against the file's users and
// num_samples lists. The file must hold one JSON object and nothing after
// it. It stops with ctx's error once ctx is done.
func leafFile(ctx context.Context, path string, how leafRead, fn func(user string, data leafUser) error) error {
	f, err := openRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fail := func(err error) error {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("datasets: LEAF file %s: the file ends early (%w)", path, err)
		}
		return fmt.Errorf("datasets: LEAF file %s: %w", path, err)
	}
	r := &leafReader{ctx: ctx, dec: json.NewDecoder(bufio.NewReaderSize(regular.Reader(ctx, f), 1<<20)), seen: map[string]int{}}
	if err := r.delim('{'); err != nil {
		return fail(err)
	}
	for r.dec.More() {
		tok, err := r.dec.Token()
		if err != nil {
			return fail(err)
		}
		switch key, _ := tok.(string); key {
		case "users":
			err = r.dec.Decode(&r.listed)
		case "num_samples":
			err = r.dec.Decode(&r.samples)
		case "user_data":
			r.hasData = true
			if err = r.userData(how, fn); err != nil {
				return fail(err)
			}
		default:
			err = r.dec.Decode(&skipValue{})
		}
		if err != nil {
			return fail(fmt.Errorf("%v: %w", tok, err))
		}
	}
	if err := r.delim('}'); err != nil {
		return fail(err)
	}
	if err := r.check(); err != nil {
		return fail(err)
	}
	switch tok, err := r.dec.Token(); {
	case errors.Is(err, io.EOF):
		return nil
	case ctx.Err() != nil:
		return fail(ctx.Err())
	case err != nil:
		return fail(fmt.Errorf("data after the JSON object: %w", err))
	default:
		return fail(fmt.Errorf("data after the JSON object (found %v; a LEAF file holds one object)", tok))
	}
}

// leafReader is the state of reading one LEAF JSON file.
type leafReader struct {
	ctx     context.Context
	dec     *json.Decoder
	listed  []string
	samples []int
	seen    map[string]int // user -> examples (-1: skipped)
	order   []string
	hasData bool
}

// delim reads the delimiter want.
func (r *leafReader) delim(want json.Delim) error {
	tok, err := r.dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, found %v", want, tok)
	}
	return nil
}

// userData reads the user_data object, user by user, calling fn with each
// kept user's examples.
func (r *leafReader) userData(how leafRead, fn func(user string, data leafUser) error) error {
	if err := r.delim('{'); err != nil {
		return fmt.Errorf("user_data: %w", err)
	}
	for r.dec.More() {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		tok, err := r.dec.Token()
		if err != nil {
			return err
		}
		user, _ := tok.(string)
		if _, dup := r.seen[user]; dup {
			return fmt.Errorf("user %q appears twice in user_data", user)
		}
		r.order = append(r.order, user)
		if how.keep != nil && !how.keep([]byte(user)) {
			r.seen[user] = -1
			if err := r.dec.Decode(&skipValue{}); err != nil {
				return fmt.Errorf("user %q: %w", user, err)
			}
			continue
		}
		var data leafUser
		if how.labelsOnly {
			var l leafLabels
			err = r.dec.Decode(&l)
			data.Y = l.Y
		} else {
			err = r.dec.Decode(&data)
			if err == nil && len(data.X) != len(data.Y) {
				err = fmt.Errorf("%d x but %d y", len(data.X), len(data.Y))
			}
		}
		if err != nil {
			return fmt.Errorf("user %q: %w", user, err)
		}
		r.seen[user] = len(data.Y)
		if err := fn(user, data); err != nil {
			return fmt.Errorf("user %q: %w", user, err)
		}
	}
	if err := r.delim('}'); err != nil {
		return fmt.Errorf("user_data: %w", err)
	}
	return nil
}

// check compares users and num_samples, when given, with user_data.
func (r *leafReader) check() error {
	if !r.hasData {
		return errors.New("no user_data")
	}
	if r.listed == nil {
		return nil
	}
	if len(r.listed) != len(r.order) {
		return fmt.Errorf("users lists %d users, user_data has %d", len(r.listed), len(r.order))
	}
	for i, u := range r.listed {
		n, ok := r.seen[u]
		if !ok {
			return fmt.Errorf("user %q is listed in users but has no user_data", u)
		}
		if r.samples != nil && (len(r.samples) != len(r.listed) || n >= 0 && r.samples[i] != n) {
			return fmt.Errorf("num_samples does not match user_data for user %q (%d examples)", u, n)
		}
	}
	return nil
}

// leafSource streams a LEAF dataset folder's examples, stopping with ctx's
// error once ctx is done.
type leafSource struct {
	ctx context.Context
	dir string
}

// users streams the users of the given split folders (train, test).
func (l leafSource) users(splits []string, how leafRead, fn func(split int, user string, data leafUser) error) error {
	for s, split := range splits {
		files, err := leafSplitFiles(l.dir, split)
		if err != nil {
			return err
		}
		for _, file := range files {
			if err := leafFile(l.ctx, file, how, func(user string, data leafUser) error { return fn(s, user, data) }); err != nil {
				return err
			}
		}
	}
	return nil
}

func (l leafSource) labels(split string, fn func(client string, y int64) error) error {
	return l.users([]string{split}, leafRead{labelsOnly: true}, func(_ int, user string, data leafUser) error {
		for i := range data.Y {
			var y int64
			if err := json.Unmarshal(data.Y[i], &y); err != nil {
				return fmt.Errorf("example %d: y: %w", i, err)
			}
			if err := fn(user, y); err != nil {
				return fmt.Errorf("example %d: %w", i, err)
			}
		}
		return nil
	})
}

func (l leafSource) images(splits []string, keep keepFunc, fn func(split int, client string, x []float32, y int64) error) error {
	px := make([]float32, 0, emnistPixels)
	return l.users(splits, leafRead{keep: keep}, func(split int, user string, data leafUser) error {
		for i := range data.X {
			var err error
			if px, err = parseFloats(px[:0], data.X[i]); err != nil {
				return fmt.Errorf("example %d: x: %w", i, err)
			}
			if len(px) != emnistPixels {
				return fmt.Errorf("example %d: x has %d values, want 28×28 = %d", i, len(px), emnistPixels)
			}
			if err := finitePixels(px); err != nil {
				return fmt.Errorf("example %d: x: %w", i, err)
			}
			var y int64
			if err := json.Unmarshal(data.Y[i], &y); err != nil {
				return fmt.Errorf("example %d: y: %w", i, err)
			}
			if err := fn(split, user, px, y); err != nil {
				return fmt.Errorf("example %d: %w", i, err)
			}
		}
		return nil
	})
}

// parseFloats appends the numbers of a JSON array of numbers (already
// checked to be valid JSON by the decoder) to dst, as float32.
func parseFloats(dst []float32, b []byte) ([]float32, error) {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return dst, errors.New("not a list of numbers")
	}
	b = b[1 : len(b)-1]
	if len(bytes.TrimSpace(b)) == 0 {
		return dst, nil
	}
	for len(b) > 0 {
		end := bytes.IndexByte(b, ',')
		if end < 0 {
			end = len(b)
		}
		num := bytes.TrimSpace(b[:end])
		for _, c := range num {
			if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
				return dst, fmt.Errorf("%q is not a number", num)
			}
		}
		v, err := strconv.ParseFloat(string(num), 32)
		if err != nil {
			return dst, fmt.Errorf("%q is not a number", num)
		}
		dst = append(dst, float32(v))
		if end == len(b) {
			break
		}
		b = b[end+1:]
	}
	return dst, nil
}

func (l leafSource) windows(splits []string, keep keepFunc, fn func(split int, client, x, y string) error) error {
	return l.users(splits, leafRead{keep: keep}, func(split int, user string, data leafUser) error {
		for i := range data.X {
			var x, y string
			if err := json.Unmarshal(data.X[i], &x); err != nil {
				return fmt.Errorf("example %d: x: %w", i, err)
			}
			if err := json.Unmarshal(data.Y[i], &y); err != nil {
				return fmt.Errorf("example %d: y: %w", i, err)
			}
			if err := fn(split, user, x, y); err != nil {
				return fmt.Errorf("example %d: %w", i, err)
			}
		}
		return nil
	})
}

// LoadLEAF reads the LEAF dataset folder dir (train/ and test/ of JSON
// files): FEMNIST as 28×28 images of 62 classes (10 with opt.DigitsOnly),
// one client per writer; Shakespeare as next-character prediction, one
// client per speaking role, with LEAF's examples as the windows (see
// buildWindows; opt.Text.Vocab caps the characters, SeqLen and MinTokens
// are unused). Each client's held-out part is its test/ examples. The files
// are streamed twice: a census of train/, then the chosen clients'
// examples.
func LoadLEAF(dir string, opt FileOptions) (*Federated, error) {
	return LoadLEAFContext(context.Background(), dir, opt)
}

// LoadLEAFContext is LoadLEAF stopping with ctx's error once ctx is done.
func LoadLEAFContext(ctx context.Context, dir string, opt FileOptions) (*Federated, error) {
	opt = opt.withDefaults()
	opt.TrainSplit, opt.TestSplit = "train", "test"
	kind, err := LEAFKindContext(ctx, dir)
	if err != nil {
		return nil, err
	}
	src := leafSource{ctx, dir}
	name := "leaf-" + kind
	if kind == LEAFFEMNIST {
		c, err := countImages(src.labels, opt)
		if err != nil {
			return nil, leafWrap(dir, err)
		}
		f, err := buildImages(ctx, name, src.images, c, opt)
		return f, leafWrap(dir, err)
	}
	if opt.DigitsOnly {
		return nil, fmt.Errorf("datasets: %s holds LEAF Shakespeare: only FEMNIST has digits", dir)
	}
	w, err := countWindows(src.windows, opt)
	if err != nil {
		return nil, leafWrap(dir, err)
	}
	f, err := buildWindows(name, src.windows, w, opt)
	return f, leafWrap(dir, err)
}

// CountLEAF returns the number of clients LoadLEAF(dir, opt) gives, from a
// census of train/.
func CountLEAF(dir string, opt FileOptions) (int, error) {
	return CountLEAFContext(context.Background(), dir, opt)
}

// CountLEAFContext is CountLEAF stopping with ctx's error once ctx is done.
func CountLEAFContext(ctx context.Context, dir string, opt FileOptions) (int, error) {
	opt = opt.withDefaults()
	opt.TrainSplit, opt.TestSplit = "train", "test"
	kind, err := LEAFKindContext(ctx, dir)
	if err != nil {
		return 0, err
	}
	src := leafSource{ctx, dir}
	var c *census
	if kind == LEAFFEMNIST {
		c, err = countImages(src.labels, opt)
	} else {
		var w *windowCensus
		if w, err = countWindows(src.windows, opt); err == nil {
			c = w.census
		}
	}
	if err != nil {
		return 0, leafWrap(dir, err)
	}
	_, kept, err := c.choose(1, opt)
	if err != nil {
		return 0, leafWrap(dir, err)
	}
	return len(kept), nil
}

// leafWrap names the folder in an error from a reader (the builders'
// errors name neither the package nor the folder).
func leafWrap(dir string, err error) error {
	if err == nil || strings.HasPrefix(err.Error(), "datasets: ") && strings.Contains(err.Error(), dir) {
		return err
	}
	return fmt.Errorf("datasets: LEAF %s: %w", dir, err)
}

// leafKind is a LEAF folder (see fileKindOf), whose files tell whether they
// hold images or text.
var leafKind = fileKindOf("leaf", "a LEAF FEMNIST or Shakespeare folder at path (train/ and test/ JSON files; the data tells which)",
	false, true, nil, LoadLEAFContext, CountLEAFContext,
	func(c *Config, textModel bool) (float64, float64, float64) {
		if textModel {
			// LEAF Shakespeare: 80-character windows; at most 1000
			// characters.
			return 80, 1000 + NumSpecial, 0
		}
		return 784, imageClasses(c), 0
	})

func init() {
	leafKind.DataTells, leafKind.Order = true, 70
	Register(&leafKind)
}
