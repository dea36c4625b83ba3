package datasets

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"

	"dpfl/sim/rng"
)

// Special token ids of every text dataset; vocabulary words follow them.
// Padding is 0 so zero-filled padding rows of a Batch are padding tokens.
const (
	PadID      = 0
	OOVID      = 1 // a word outside the vocabulary
	BOSID      = 2 // beginning of a document
	EOSID      = 3 // end of a document
	NumSpecial = 4
)

// Document is one text (a changelog entry, a post) written by one user.
type Document struct {
	User string
	Text string
}

// Tokenize lower-cases s and returns its word tokens: maximal runs of Unicode
// letters and digits, where an apostrophe between two letters stays inside
// the word ("don't"). Everything else separates tokens and is dropped.
func Tokenize(s string) []string {
	rs := []rune(strings.ToLower(s))
	var out []string
	word := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	for i := 0; i < len(rs); {
		if !word(rs[i]) {
			i++
			continue
		}
		j := i
		for j < len(rs) && (word(rs[j]) || (rs[j] == '\'' || rs[j] == '’') && j+1 < len(rs) && j > i &&
			unicode.IsLetter(rs[j-1]) && unicode.IsLetter(rs[j+1])) {
			j++
		}
		out = append(out, strings.ReplaceAll(string(rs[i:j]), "’", "'"))
		i = j
	}
	return out
}

// Vocab maps the top words of a corpus to ids NumSpecial, NumSpecial+1, ...
type Vocab struct {
	Words []string // Words[k] has id NumSpecial+k, most frequent first
	index map[string]int32
}

// BuildVocab keeps the size most frequent tokens of docs (token lists); ties
// are broken by the word's byte order, so the result is deterministic.
func BuildVocab(docs [][]string, size int) *Vocab {
	count := map[string]int{}
	for _, d := range docs {
		for _, w := range d {
			count[w]++
		}
	}
	return vocabFromCounts(count, size)
}

// vocabFromCounts keeps the size most frequent tokens of count, ties broken
// by byte order.
func vocabFromCounts(count map[string]int, size int) *Vocab {
	words := make([]string, 0, len(count))
	for w := range count {
		words = append(words, w)
	}
	slices.SortFunc(words, func(a, b string) int {
		if c := cmp.Compare(count[b], count[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	if len(words) > size {
		words = words[:size]
	}
	v := &Vocab{Words: words, index: make(map[string]int32, len(words))}
	for k, w := range words {
		v.index[w] = int32(NumSpecial + k)
	}
	return v
}

// Size reports the number of token ids, special tokens included.
func (v *Vocab) Size() int { return NumSpecial + len(v.Words) }

// ID returns the id of word w, OOVID if it is not in the vocabulary.
func (v *Vocab) ID(w string) int32 {
	if id, ok := v.index[w]; ok {
		return id
	}
	return OOVID
}

// Token returns the text of id (special tokens in angle brackets).
func (v *Vocab) Token(id int32) string {
	switch {
	case id == PadID:
		return "<pad>"
	case id == OOVID:
		return "<oov>"
	case id == BOSID:
		return "<bos>"
	case id == EOSID:
		return "<eos>"
	case int(id) < v.Size() && id > 0:
		return v.Words[id-NumSpecial]
	}
	return fmt.Sprintf("<bad %d>", id)
}

// Encode turns one document's tokens into next-token examples of seqLen
// positions: the id stream BOS, tokens..., EOS is cut into consecutive windows;
// window k has inputs stream[k·seqLen : (k+1)·seqLen] and targets shifted by
// one, the last window padded with PadID. Every token after BOS is a target
// exactly once. (TFF's StackOverflow task truncates each sentence to one
// window instead; dpfl keeps all of a document.) It appends to x and next.
func (v *Vocab) Encode(x, next []int32, tokens []string, seqLen int) (xs, nexts []int32) {
	stream := make([]int32, 0, len(tokens)+2)
	stream = append(stream, BOSID)
	for _, w := range tokens {
		stream = append(stream, v.ID(w))
	}
	stream = append(stream, EOSID)
	for lo := 0; lo+1 < len(stream); lo += seqLen {
		for k := 0; k < seqLen; k++ {
			in, tg := int32(PadID), int32(PadID)
			if lo+k+1 < len(stream) {
				in, tg = stream[lo+k], stream[lo+k+1]
			}
			x, next = append(x, in), append(next, tg)
		}
	}
	return x, next
}

// TextOptions configures NewTextFederated. Zero fields take the defaults in
// brackets.
type TextOptions struct {
	Vocab        int     // vocabulary words, special tokens excluded [1000]
	SeqLen       int     // tokens per example [20]
	MinTokens    int     // drop users with fewer training tokens [100]
	TestFraction float64 // share of each user's documents held out [0.2]
}

func (o TextOptions) withDefaults() TextOptions {
	if o.Vocab == 0 {
		o.Vocab = 1000
	}
	if o.SeqLen == 0 {
		o.SeqLen = 20
	}
	if o.MinTokens == 0 {
		o.MinTokens = 100
	}
	if o.TestFraction == 0 {
		o.TestFraction = 0.2
	}
	return o
}

// NewTextFederated builds a next-word-prediction population: one client per
// user, as in the StackOverflow task. Steps:
//  1. documents whose whitespace-normalized text was seen before (SHA-256
//     content hash) are dropped, keeping the first in input order;
//  2. each user's documents are shuffled with r and floor(TestFraction·n) of
//     them held out (a user keeps at least one training document);
//  3. users with fewer than MinTokens training tokens are dropped;
//  4. the vocabulary is the Vocab most frequent training tokens of the kept
//     users (held-out text never shapes it);
//  5. documents become windows of SeqLen tokens (Vocab.Encode).
//
// Clients are ordered by user name. Train holds the clients' training windows
// and Clients index it; Test holds their held-out windows (the central test
// set) and ClientTest indexes it. Classes is the vocabulary size with the
// special tokens.
func NewTextFederated(name string, docs []Document, opt TextOptions, r *rand.Rand) (*Federated, error) {
	return newTextFederated(context.Background(), name, docs, opt, r)
}

// newTextFederated is NewTextFederated stopping with ctx's error once ctx is
// done.
func newTextFederated(ctx context.Context, name string, docs []Document, opt TextOptions, r *rand.Rand) (*Federated, error) {
	opt = opt.withDefaults()
	if opt.Vocab < 1 || opt.SeqLen < 1 || opt.MinTokens < 0 || !(opt.TestFraction > 0 && opt.TestFraction < 1) {
		return nil, fmt.Errorf("datasets: bad text options %+v", opt)
	}
	seen := map[[32]byte]bool{}
	byUser := map[string][][]string{}
	for i, d := range docs {
		if err := ctxEvery(ctx, i+1); err != nil {
			return nil, err
		}
		norm := strings.Join(strings.Fields(d.Text), " ")
		h := sha256.Sum256([]byte(norm))
		if norm == "" || seen[h] {
			continue
		}
		seen[h] = true
		if toks := Tokenize(norm); len(toks) > 0 {
			byUser[d.User] = append(byUser[d.User], toks)
		}
	}
	users := make([]string, 0, len(byUser))
	for u := range byUser {
		users = append(users, u)
	}
	slices.Sort(users)
	type split struct{ train, test [][]string }
	var kept []split
	var keptUsers []string
	var trainDocs [][]string
	for i, u := range users {
		if err := ctxEvery(ctx, i+1); err != nil {
			return nil, err
		}
		ds := byUser[u]
		r.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
		k := min(int(opt.TestFraction*float64(len(ds))), len(ds)-1)
		s := split{train: ds[k:], test: ds[:k]}
		n := 0
		for _, d := range s.train {
			n += len(d)
		}
		if n < opt.MinTokens {
			continue
		}
		kept, keptUsers = append(kept, s), append(keptUsers, u)
		trainDocs = append(trainDocs, s.train...)
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("datasets: no user has %d training tokens (of %d users after de-duplication)", opt.MinTokens, len(users))
	}
	vocab := BuildVocab(trainDocs, opt.Vocab)
	mk := func() *Dataset { return &Dataset{Dim: opt.SeqLen, Classes: vocab.Size(), Next: []int32{}} }
	train, test := mk(), mk()
	var xs []int32
	add := func(d *Dataset, part [][]string) []int {
		var idx []int
		for _, toks := range part {
			before := len(d.Next)
			xs, d.Next = vocab.Encode(xs[:0], d.Next, toks, opt.SeqLen)
			for _, id := range xs {
				d.X = append(d.X, float32(id))
			}
			for i := before / opt.SeqLen; i < len(d.Next)/opt.SeqLen; i++ {
				idx = append(idx, i)
				d.Y = append(d.Y, 0)
			}
		}
		return idx
	}
	f := &Federated{Name: name, Train: train, Test: test, Users: keptUsers, Vocab: vocab}
	for i, s := range kept {
		if err := ctxEvery(ctx, i+1); err != nil {
			return nil, err
		}
		f.Clients = append(f.Clients, add(train, s.train))
		f.ClientTest = append(f.ClientTest, add(test, s.test))
	}
	if test.Len() == 0 {
		return nil, errors.New("datasets: no held-out documents: users need at least 2 documents for a test part")
	}
	return f, f.Validate()
}

// TokenCoverage reports the share of word targets (not PAD, BOS or EOS) of a
// sequence dataset that are in the vocabulary (not OOV).
func TokenCoverage(d *Dataset) float64 {
	words, in := 0, 0
	for _, t := range d.Next {
		if t == PadID || t == BOSID || t == EOSID {
			continue
		}
		words++
		if t != OOVID {
			in++
		}
	}
	if words == 0 {
		return 0
	}
	return float64(in) / float64(words)
}

// DebianConfig is the debian dataset's own key.
type DebianConfig struct {
	// Changelogs chooses the Debian changelogs read: DebianPinned
	// ("pinned", the default) reads the changelogs of the manifest
	// committed in debian-manifest.tsv (618 files of a fresh Debian 12
	// machine, each checked against its SHA-256), so every machine that has
	// them builds the same clients; those missing or different are left out
	// and counted in a notice (Federated.Notes), and the run's fingerprint
	// names the corpus used. Any other value is a glob of gzipped changelogs
	// (e.g. DebianChangelogGlob: whatever this machine has installed),
	// relative to the config file. Each entry is one document of the
	// maintainer who signed it (lower-cased e-mail address).
	Changelogs string `yaml:"changelogs"`
}

// TextConfig is the key of the datasets read from a path (text and the
// federated files).
type TextConfig struct {
	// Path is the data (required): for text, the corpus: a .jsonl file with
	// one {"user": ..., "text": ...} object per line, or a directory (each
	// file directly inside is one document of the user named by the file
	// name without extension; each subdirectory USER holds USER's
	// documents); for tff-*, the SQLite file that
	// tff.simulation.datasets.*.load_data caches (tables examples and
	// client_metadata); for leaf, a LEAF dataset folder holding train/ and
	// test/ folders of JSON files. Relative to the config file.
	Path string `yaml:"path"`
}

// TokenConfig is the keys of the next-word datasets (debian, text); see
// TextOptions.
type TokenConfig struct {
	// Vocab is the number of words in the vocabulary (default 1000): the
	// most frequent training tokens; NumSpecial special ids (padding,
	// out-of-vocabulary, begin and end of document) come on top, so the
	// model predicts Vocab+NumSpecial classes.
	Vocab int `yaml:"vocab"`
	// SeqLen is the number of tokens per training sequence (default 20):
	// each document becomes consecutive windows of SeqLen next-token
	// predictions, the last one padded.
	SeqLen int `yaml:"seq_len"`
	// MinTokens drops users with fewer training tokens (default 100).
	MinTokens int `yaml:"min_tokens"`
}

// defaults fills the unset token keys: a vocabulary of 1000, seqLen
// tokens per sequence (when SeqLen is unset and seqLen > 0), at least 100
// training tokens per user.
func (t *TokenConfig) defaults(seqLen int) {
	if t.Vocab == 0 {
		t.Vocab = 1000
	}
	if t.SeqLen == 0 {
		t.SeqLen = seqLen
	}
	if t.MinTokens == 0 {
		t.MinTokens = 100
	}
}

// validate reports negative keys and a vocabulary beyond maxVocab (unit
// names what the vocabulary holds: words or tokens).
func (t TokenConfig) validate(add Problems, unit string) {
	for _, key := range []struct {
		name string
		v    int
	}{{"vocab", t.Vocab}, {"seq_len", t.SeqLen}, {"min_tokens", t.MinTokens}} {
		if key.v < 0 {
			add(key.name, "%d must be positive", key.v)
		}
	}
	if t.Vocab > maxVocab {
		add("vocab", "%d %s is beyond the supported %d", t.Vocab, unit, maxVocab)
	}
}

// maxVocab is the largest vocabulary: token ids are stored as float32
// (exact below 2^24) and every id has an embedding row and an output logit.
const maxVocab = 1 << 20

var debianKind = textKindOf("debian", "next-word text, one client per Debian maintainer, from the pinned changelogs of a fresh Debian 12 machine (changelogs: pinned, the default) or a glob",
	func(c *Config) any { return &c.DebianConfig },
	func(c *Config) {
		if c.Changelogs == "" {
			c.Changelogs = DebianPinned
		}
	},
	nil,
	func(c *Config) []*string {
		if c.Changelogs == DebianPinned {
			return nil
		}
		return []*string{&c.Changelogs}
	},
	func(_ context.Context, c *Config) ([]Document, []string, error) {
		if c.Changelogs != DebianPinned {
			docs, err := ReadDebianChangelogs(c.Changelogs)
			return docs, nil, keyErr("changelogs", err)
		}
		docs, pc, err := ReadDebianPinned()
		if err != nil {
			return nil, nil, keyErr("changelogs", err)
		}
		var notes []string
		if !pc.Complete() {
			notes = append(notes, "data.changelogs: "+pc.Report())
		}
		return docs, notes, nil
	},
	func(c *Config) ([]Input, error) {
		var files []string
		var fp string
		var err error
		if c.Changelogs == DebianPinned {
			// The changelogs of the manifest that match on this machine:
			// the pinned corpus's fingerprint on every machine that holds
			// them all (some may be newer, read up to their pinned text).
			var pc *PinnedCorpus
			if pc, err = DebianPinnedFiles(); err == nil {
				files, fp = pc.Files, pc.Fingerprint()
			}
		} else {
			files, err = DebianChangelogFiles(c.Changelogs)
		}
		return []Input{{Key: "changelogs", Root: "/", Files: files, Fingerprint: fp}}, keyErr("changelogs", err)
	})

var textKind = textKindOf("text", "next-word text by user from path (a directory, or JSONL of {\"user\": ..., \"text\": ...})",
	func(c *Config) any { return &c.TextConfig },
	nil,
	func(c *Config, add Problems) {
		if c.Path == "" {
			add("path", `required for dataset text: a .jsonl file of {"user": ..., "text": ...} lines, or a directory of text files by user`)
		}
	},
	func(c *Config) []*string { return []*string{&c.Path} },
	func(ctx context.Context, c *Config) ([]Document, []string, error) {
		docs, err := ReadTextByUserContext(ctx, c.Path)
		return docs, nil, keyErr("path", err)
	},
	func(c *Config) ([]Input, error) {
		files, err := TextFiles(c.Path)
		return []Input{{Key: "path", Root: c.Path, Files: files}}, keyErr("path", err)
	})

func init() {
	debianKind.Order, textKind.Order = 20, 30
	Register(&debianKind)
	Register(&textKind)
}

// textKindOf is a next-word dataset: one client per user (partition user),
// its own key struct own, and TokenConfig.
func textKindOf(name, doc string, own func(*Config) any, defaults func(*Config), validate func(*Config, Problems),
	paths func(*Config) []*string, read func(context.Context, *Config) ([]Document, []string, error), inputs func(*Config) ([]Input, error)) Kind {
	k := Kind{
		Name: name, Doc: doc, Text: true,
		Partitions: []Partition{{Name: "user", FromData: true, DefaultTestFraction: 0.2}},
		params:     []func(c *Config) any{own, func(c *Config) any { return &c.TokenConfig }},
		Paths:      paths,
	}
	k.Defaults = func(c *Config) {
		c.TokenConfig.defaults(20)
		if defaults != nil {
			defaults(c)
		}
	}
	k.Validate = func(c *Config, add Problems, _ func(string) bool) {
		if c.Partition != "user" && slices.Contains(PartitionNames(), c.Partition) {
			add("partition", "%s text is split by user (one client per user): partition must be user (or unset), not %s", name, c.Partition)
		}
		c.TokenConfig.validate(add, "words")
		if validate != nil {
			validate(c, add)
		}
	}
	k.Load = func(ctx context.Context, c *Config, _ *Loader, root rng.Root) (*Federated, error) {
		docs, notes, err := read(ctx, c)
		if err != nil {
			return nil, err
		}
		f, err := newTextFederated(ctx, c.Dataset, docs,
			TextOptions{Vocab: c.Vocab, SeqLen: c.SeqLen, MinTokens: c.MinTokens, TestFraction: c.TestFraction}, root.Stream("partition"))
		if err != nil {
			return nil, &KeyError{What: fmt.Sprintf("%s, min_tokens %d", c.Dataset, c.MinTokens), Err: err}
		}
		f.Notes = notes
		if c.Clients > 0 {
			f, err = SubsetClients(f, c.Clients, root.Stream("data/subset"))
			return f, keyErr("clients", err)
		}
		return f, nil
	}
	k.Population = func(ctx context.Context, c *Config, l *Loader, root rng.Root) (int, error) {
		f, err := k.Load(ctx, c, l, root)
		if err != nil {
			return 0, err
		}
		return f.NumClients(), nil
	}
	k.Inputs = func(c *Config, _ *Loader) ([]Input, error) { return inputs(c) }
	k.Shape = tokenShape
	return k
}

// SubsetClients keeps n of f's clients, drawn with r, in their order; the
// central test set becomes the union of their held-out parts. The training
// pool and the vocabulary are kept whole.
func SubsetClients(f *Federated, n int, r *rand.Rand) (*Federated, error) {
	if n > f.NumClients() {
		return nil, fmt.Errorf("%d clients asked for, but %s has %d users (with enough training tokens)", n, f.Name, f.NumClients())
	}
	keep := r.Perm(f.NumClients())[:n]
	slices.Sort(keep)
	g := *f
	g.Clients, g.ClientTest, g.Users = make([][]int, n), make([][]int, n), make([]string, n)
	var held []int
	for k, c := range keep {
		g.Clients[k], g.Users[k] = f.Clients[c], f.Users[c]
		for _, i := range f.ClientTest[c] {
			g.ClientTest[k] = append(g.ClientTest[k], len(held))
			held = append(held, i)
		}
	}
	if len(held) == 0 {
		return nil, fmt.Errorf("the %d users drawn hold no test documents; draw more, or raise test_fraction", n)
	}
	g.Test = f.Test.Subset(held)
	return &g, g.Validate()
}
