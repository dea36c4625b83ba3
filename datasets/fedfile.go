package datasets

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"unicode/utf8"
)

// This file builds populations from federated files that already name each
// example's client and split (TensorFlow Federated's SQLite files, LEAF's
// JSON): the readers (tff.go, leaf.go) stream records, and the builders here
// keep only what the run needs. A builder first takes a census of the
// training split (examples or tokens per client) without keeping any
// example, picks the clients (the eligible ones, or a random subset of them),
// then streams the file again and keeps only the chosen clients' examples. So
// a file of 342,477 clients loads in the memory of the clients chosen, plus
// one small record per client of the census.

// FileOptions configures the readers of federated files (LoadTFF, LoadLEAF).
// Zero fields take the defaults in brackets.
type FileOptions struct {
	// TrainSplit and TestSplit are the split names of a TFF file [train,
	// test]; LEAF's are its train/ and test/ folders. Each client's
	// held-out examples are its examples of the test split; the central
	// test set is their union (test-split examples of clients not chosen
	// are not read).
	TrainSplit, TestSplit string
	// DigitsOnly keeps the digits (labels 0-9, 10 classes) of a 62-class
	// EMNIST/FEMNIST file; clients left without a training digit are
	// dropped.
	DigitsOnly bool
	// Text configures word- and character-level text (Vocab, SeqLen,
	// MinTokens; TestFraction is unused: the file's split is the held-out
	// one). See TextOptions for the defaults.
	Text TextOptions
	// Clients keeps a random subset of that many eligible clients, drawn
	// with Subset, in their order [0: every eligible client].
	Clients int
	Subset  *rand.Rand
	// Stream (TFF text files) leaves the clients' training examples in the
	// file, read cohort by cohort (Federated.Cohorts): StreamAuto (or "")
	// for a file of at least StreamAutoBytes with an index on
	// examples(client_id), StreamAlways, StreamNever.
	Stream string
}

func (o FileOptions) withDefaults() FileOptions {
	if o.TrainSplit == "" {
		o.TrainSplit = "train"
	}
	if o.TestSplit == "" {
		o.TestSplit = "test"
	}
	o.Text = o.Text.withDefaults()
	return o
}

// ErrTooFewClients is returned (wrapped) when FileOptions.Clients asks for
// more clients than the data has.
var ErrTooFewClients = errors.New("more clients asked for than the data has")

type tooFewClients struct{ asked, have int }

func (e tooFewClients) Error() string {
	return fmt.Sprintf("%d clients asked for, but the data has %d eligible clients", e.asked, e.have)
}

func (e tooFewClients) Is(target error) bool { return target == ErrTooFewClients }

// EMNIST's 62 classes: digits 0-9, upper-case A-Z, lower-case a-z.
const (
	emnistClasses = 62
	emnistDigits  = 10
	emnistPixels  = 28 * 28
)

// pick returns the indices (in order) of the clients kept out of n eligible.
func (o FileOptions) pick(n int) ([]int, error) {
	if o.Clients > n {
		return nil, tooFewClients{o.Clients, n}
	}
	if o.Clients <= 0 || o.Clients == n {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	}
	if o.Subset == nil {
		return nil, errors.New("a client subset needs a random source (FileOptions.Subset)")
	}
	keep := o.Subset.Perm(n)[:o.Clients]
	slices.Sort(keep)
	return keep, nil
}

// census counts something per client (examples, tokens) in first-seen order.
type census struct {
	index map[string]int
	names []string
	count []int
}

func newCensus() *census { return &census{index: map[string]int{}} }

func (c *census) add(client string, n int) {
	i, ok := c.index[client]
	if !ok {
		i = len(c.names)
		c.index[client] = i
		c.names, c.count = append(c.names, client), append(c.count, 0)
	}
	c.count[i] += n
}

// textClients checks opt's text options and returns the kept clients
// (choose) and the set of eligible ones, those with at least
// Text.MinTokens training tokens (the vocabulary's population).
func (c *census) textClients(opt FileOptions) (kept map[string]int, isEligible map[string]bool, err error) {
	to := opt.Text
	if to.Vocab < 1 || to.SeqLen < 1 || to.MinTokens < 0 {
		return nil, nil, fmt.Errorf("bad text options %+v", to)
	}
	eligible, kept, err := c.choose(to.MinTokens, opt)
	if err != nil {
		return nil, nil, err
	}
	if len(eligible) == 0 {
		return nil, nil, fmt.Errorf("no client has %d training tokens (of %d clients)", to.MinTokens, len(c.names))
	}
	isEligible = make(map[string]bool, len(eligible))
	for _, e := range eligible {
		isEligible[e] = true
	}
	return kept, isEligible, nil
}

// choose returns the sorted names of the clients counting at least min, and
// which of them opt keeps (a map from name to client number).
func (c *census) choose(min int, opt FileOptions) (eligible []string, kept map[string]int, err error) {
	for i, n := range c.names {
		if c.count[i] >= min && c.count[i] > 0 {
			eligible = append(eligible, n)
		}
	}
	slices.Sort(eligible)
	idx, err := opt.pick(len(eligible))
	if err != nil {
		return nil, nil, err
	}
	kept = make(map[string]int, len(idx))
	for k, i := range idx {
		kept[eligible[i]] = k
	}
	return eligible, kept, nil
}

// users lists the kept clients' names by client number.
func users(kept map[string]int) []string {
	out := make([]string, len(kept))
	for name, k := range kept {
		out[k] = name
	}
	return out
}

// Record streams. A split is asked for by position in the splits given; x
// and the strings passed are only valid during the call. keep, when not nil,
// says which clients' records are wanted: the others are skipped without
// being decoded (a census reads every client, a load only the chosen ones).
type (
	keepFunc   func(client []byte) bool
	imageScan  func(splits []string, keep keepFunc, fn func(split int, client string, x []float32, y int64) error) error
	labelScan  func(split string, fn func(client string, y int64) error) error
	docScan    func(splits []string, keep keepFunc, fn func(split int, client, text string) error) error
	windowScan func(splits []string, keep keepFunc, fn func(split int, client, x, y string) error) error
)

// keepOnly returns the keepFunc of the clients in m.
func keepOnly[V any](m map[string]V) keepFunc {
	return func(client []byte) bool { _, ok := m[string(client)]; return ok }
}

// imageLabel maps a stored label to a class of the population: ok false
// drops the example (a letter when only digits are kept).
func imageLabel(y int64, digitsOnly bool) (class int32, ok bool, err error) {
	if y < 0 || y >= emnistClasses {
		return 0, false, fmt.Errorf("label %d outside EMNIST's [0, %d)", y, emnistClasses)
	}
	if digitsOnly && y >= emnistDigits {
		return 0, false, nil
	}
	return int32(y), true, nil
}

// finitePixels returns an error naming the first value of x that is NaN or
// infinite.
func finitePixels(x []float32) error {
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("value %d is %v (pixels must be finite)", i, v)
		}
	}
	return nil
}

// countImages takes the census of the training split from its labels:
// usable examples per client.
func countImages(scan labelScan, opt FileOptions) (*census, error) {
	c := newCensus()
	err := scan(opt.TrainSplit, func(client string, y int64) error {
		_, ok, err := imageLabel(y, opt.DigitsOnly)
		if ok {
			c.add(client, 1)
		}
		return err
	})
	return c, err
}

// buildImages builds a 28×28-image population from the clients of c (the
// census of the training split) that opt keeps.
func buildImages(ctx context.Context, name string, scan imageScan, c *census, opt FileOptions) (*Federated, error) {
	_, kept, err := c.choose(1, opt)
	if err != nil {
		return nil, err
	}
	classes := emnistClasses
	if opt.DigitsOnly {
		classes = emnistDigits
	}
	train := &Dataset{Dim: emnistPixels, Classes: classes}
	n := 0
	for u := range kept {
		n += c.count[c.index[u]]
	}
	train.X, train.Y = make([]float32, 0, n*emnistPixels), make([]int32, 0, n)
	test := &Dataset{Dim: emnistPixels, Classes: classes}
	f := &Federated{Name: name, Train: train, Test: test, Users: users(kept),
		Clients: make([][]int, len(kept)), ClientTest: make([][]int, len(kept))}
	err = scan([]string{opt.TrainSplit, opt.TestSplit}, keepOnly(kept), func(split int, client string, x []float32, y int64) error {
		k, ok := kept[client]
		if !ok {
			return nil
		}
		class, ok, err := imageLabel(y, opt.DigitsOnly)
		if !ok || err != nil {
			return err
		}
		d, part := train, &f.Clients[k]
		if split == 1 {
			d, part = test, &f.ClientTest[k]
		}
		*part = append(*part, d.Len())
		d.X = append(d.X, x...)
		d.Y = append(d.Y, class)
		return nil
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	if test.Len() == 0 {
		return nil, fmt.Errorf("none of the %d clients has an example in split %q (the held-out split must hold the same clients' examples)", len(kept), opt.TestSplit)
	}
	return f, f.Validate()
}

// A tokenizer splits a text into the tokens of a vocabulary: words
// (Tokenize) or characters (Unicode code points, case and white space kept;
// invalid UTF-8 bytes become U+FFFD).
type tokenizer struct{ chars bool }

func (t tokenizer) tokens(s string) []string {
	if !t.chars {
		return Tokenize(s)
	}
	out := make([]string, 0, len(s))
	for _, r := range s {
		out = append(out, string(r))
	}
	return out
}

// count returns the number of tokens of s.
func (t tokenizer) count(s string) int {
	if t.chars {
		return utf8.RuneCountInString(s)
	}
	return len(Tokenize(s))
}

// countDocs takes the census of the training split: tokens per client.
func countDocs(scan docScan, tok tokenizer, opt FileOptions) (*census, error) {
	c := newCensus()
	err := scan([]string{opt.TrainSplit}, nil, func(_ int, client, text string) error {
		c.add(client, tok.count(text))
		return nil
	})
	return c, err
}

// buildDocs builds a next-token population as NewTextFederated does, from
// documents already split into training and held-out parts by the file:
// clients with at least Text.MinTokens training tokens are eligible (and
// opt keeps all or a subset of them); the vocabulary is the Text.Vocab most
// frequent training tokens of every eligible client; each document becomes
// windows of Text.SeqLen tokens (Vocab.Encode); documents without a token are
// skipped. Only the kept clients' documents are held in memory, as text,
// until they are encoded.
func buildDocs(ctx context.Context, name string, scan docScan, tok tokenizer, c *census, opt FileOptions) (*Federated, error) {
	opt = opt.withDefaults()
	to := opt.Text
	kept, isEligible, err := c.textClients(opt)
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	trainDocs := make([][]string, len(kept))
	testDocs := make([][]string, len(kept))
	err = scan([]string{opt.TrainSplit, opt.TestSplit}, keepOnly(isEligible), func(split int, client, text string) error {
		if split == 0 && isEligible[client] {
			for _, w := range tok.tokens(text) {
				count[w]++
			}
		}
		if k, ok := kept[client]; ok {
			if split == 0 {
				trainDocs[k] = append(trainDocs[k], text)
			} else {
				testDocs[k] = append(testDocs[k], text)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	vocab := vocabFromCounts(count, to.Vocab)
	mk := func() *Dataset { return &Dataset{Dim: to.SeqLen, Classes: vocab.Size(), Next: []int32{}} }
	f := &Federated{Name: name, Train: mk(), Test: mk(), Users: users(kept), Vocab: vocab,
		Clients: make([][]int, len(kept)), ClientTest: make([][]int, len(kept))}
	var xs []int32
	for k := range f.Clients {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f.Clients[k], xs = appendDocs(f.Train, vocab, tok, to.SeqLen, trainDocs[k], xs)
		f.ClientTest[k], xs = appendDocs(f.Test, vocab, tok, to.SeqLen, testDocs[k], xs)
		trainDocs[k], testDocs[k] = nil, nil
	}
	if f.Test.Len() == 0 {
		return nil, fmt.Errorf("none of the %d clients has a document in split %q (the held-out split must hold the same clients' documents)", len(kept), opt.TestSplit)
	}
	return f, f.Validate()
}

// windowCensus is the census of LEAF Shakespeare's training split:
// examples per client, and the characters' counts (every client with an
// example is eligible, so these are the vocabulary's counts).
type windowCensus struct {
	*census
	chars  map[string]int
	seqLen int
	buf    []rune
}

// checkWindow checks one example and returns its characters, x's then y's
// (in a buffer reused by the next call).
func (w *windowCensus) checkWindow(client, x, y string) ([]rune, error) {
	w.buf = w.buf[:0]
	for _, r := range x {
		w.buf = append(w.buf, r)
	}
	n := len(w.buf)
	for _, r := range y {
		w.buf = append(w.buf, r)
	}
	if len(w.buf) != n+1 {
		return nil, fmt.Errorf("client %q: y %q is not one character", client, y)
	}
	if w.seqLen == 0 {
		w.seqLen = n
	}
	if n != w.seqLen || n == 0 {
		return nil, fmt.Errorf("client %q: x has %d characters, but the first example's has %d", client, n, w.seqLen)
	}
	return w.buf, nil
}

func countWindows(scan windowScan, opt FileOptions) (*windowCensus, error) {
	w := &windowCensus{census: newCensus(), chars: map[string]int{}}
	err := scan([]string{opt.TrainSplit}, nil, func(_ int, client, x, y string) error {
		rs, err := w.checkWindow(client, x, y)
		if err != nil {
			return err
		}
		w.add(client, 1)
		for _, r := range rs {
			w.chars[string(r)]++
		}
		return nil
	})
	return w, err
}

// buildWindows builds a character-level next-character population from
// LEAF Shakespeare's examples: x is a window of characters, y the character
// after it. Example i becomes a sequence of len(x) inputs x with the targets
// x[1:]+y: the next character at every position, all of them read from the
// data. The vocabulary is the Text.Vocab most frequent characters of the
// training examples (x and y); every x must have the same length.
func buildWindows(name string, scan windowScan, w *windowCensus, opt FileOptions) (*Federated, error) {
	opt = opt.withDefaults()
	_, kept, err := w.choose(1, opt)
	if err != nil {
		return nil, err
	}
	vocab := vocabFromCounts(w.chars, opt.Text.Vocab)
	mk := func() *Dataset { return &Dataset{Dim: w.seqLen, Classes: vocab.Size(), Next: []int32{}} }
	f := &Federated{Name: name, Train: mk(), Test: mk(), Users: users(kept), Vocab: vocab,
		Clients: make([][]int, len(kept)), ClientTest: make([][]int, len(kept))}
	n := 0
	for u := range kept {
		n += w.count[w.index[u]]
	}
	f.Train.X, f.Train.Next, f.Train.Y = make([]float32, 0, n*w.seqLen), make([]int32, 0, n*w.seqLen), make([]int32, 0, n)
	ids := map[rune]int32{}
	id := func(r rune) int32 {
		v, ok := ids[r]
		if !ok {
			v = vocab.ID(string(r))
			ids[r] = v
		}
		return v
	}
	err = scan([]string{opt.TrainSplit, opt.TestSplit}, keepOnly(kept), func(split int, client, x, y string) error {
		k, ok := kept[client]
		if !ok {
			return nil
		}
		rs, err := w.checkWindow(client, x, y)
		if err != nil {
			return err
		}
		d, part := f.Train, &f.Clients[k]
		if split == 1 {
			d, part = f.Test, &f.ClientTest[k]
		}
		*part = append(*part, d.Len())
		for i := 0; i+1 < len(rs); i++ {
			d.X = append(d.X, float32(id(rs[i])))
			d.Next = append(d.Next, id(rs[i+1]))
		}
		d.Y = append(d.Y, 0)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if f.Test.Len() == 0 {
		return nil, fmt.Errorf("none of the %d clients has an example in the held-out split", len(kept))
	}
	return f, f.Validate()
}
