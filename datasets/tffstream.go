package datasets

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	"dpfl/results/regular"
)

// Streaming a TensorFlow Federated text file (StackOverflow, Shakespeare):
// the census and the vocabulary are taken as LoadTFF takes them (two passes
// over the file), and the central test set is read into memory, but the
// clients' training examples stay in the file. Each cohort's clients are
// read by client id through the file's index on examples(client_id), which
// TFF's files have, in the file's row order (ORDER BY rowid, the order of
// the full scan LoadTFF makes), and encoded as LoadTFF encodes them: a
// client gets the same windows in the same order either way. What is held
// is the census (a name and a count per client), the vocabulary, the test
// set, the current cohort's examples and, while it trains, the next
// cohort's (read in the background). The file is opened read-only and
// never written (no index is created).

// Stream choices (FileOptions.Stream; a TFF file's data.stream key).
const (
	StreamAuto   = "auto"   // stream a text file of at least StreamAutoBytes that has the index (also "")
	StreamAlways = "always" // stream (text files with the index only)
	StreamNever  = "never"  // read the chosen clients' examples into memory
)

// StreamChoices lists the values of FileOptions.Stream.
var StreamChoices = []string{StreamAuto, StreamAlways, StreamNever}

// StreamAutoBytes is the size from which StreamAuto streams a file.
const StreamAutoBytes = 1 << 30

// fetchQuery reads one client's examples of a split in the file's row
// order.
const fetchQuery = "SELECT serialized_example_proto FROM examples WHERE client_id = ? AND split_name = ? ORDER BY rowid"

// indexed reports whether fetchQuery finds a client's rows through an index
// on client_id rather than by scanning the table.
func (t *tffFile) indexed() (bool, error) {
	rows, err := t.db.QueryContext(t.ctx, "EXPLAIN QUERY PLAN "+fetchQuery, "", "")
	if err != nil {
		return false, fmt.Errorf("examples: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return false, fmt.Errorf("examples: %w", err)
	}
	ok := false
	for rows.Next() {
		vals := make([]any, len(cols))
		for i := range vals {
			vals[i] = new(any)
		}
		if err := rows.Scan(vals...); err != nil {
			return false, fmt.Errorf("examples: %w", err)
		}
		detail := fmt.Sprint(*vals[len(vals)-1].(*any))
		if strings.Contains(detail, "INDEX") && strings.Contains(detail, "client_id=?") {
			ok = true
		}
	}
	return ok, rows.Err()
}

// streams decides whether LoadTFF streams the file (see the Stream
// choices).
func (t *tffFile) streams(kind string, opt FileOptions) (bool, error) {
	text := kind == TFFStackOverflow || kind == TFFShakespeare
	switch opt.Stream {
	case "", StreamAuto:
		if !text || t.size < StreamAutoBytes {
			return false, nil
		}
		return t.indexed()
	case StreamNever:
		return false, nil
	case StreamAlways:
		if !text {
			return false, fmt.Errorf("stream %s: only the text files (%s, %s) are streamed, not %s", StreamAlways, TFFStackOverflow, TFFShakespeare, kind)
		}
		ok, err := t.indexed()
		if err == nil && !ok {
			err = fmt.Errorf("stream %s: table examples has no index on client_id to read a client's rows by (TFF's files have one); stream %s reads the file into memory", StreamAlways, StreamNever)
		}
		return ok, err
	}
	return false, fmt.Errorf("stream %q: want one of %s", opt.Stream, strings.Join(StreamChoices, ", "))
}

// appendDocs appends the windows of docs (Vocab.Encode of their tokens;
// documents without a token are skipped) to d and returns their rows, and
// xs, a buffer for the next call.
func appendDocs(d *Dataset, vocab *Vocab, tok tokenizer, seqLen int, docs []string, xs []int32) ([]int, []int32) {
	var idx []int
	for _, text := range docs {
		toks := tok.tokens(text)
		if len(toks) == 0 {
			continue
		}
		before := len(d.Next)
		xs, d.Next = vocab.Encode(xs[:0], d.Next, toks, seqLen)
		for _, id := range xs {
			d.X = append(d.X, float32(id))
		}
		for i := before / seqLen; i < len(d.Next)/seqLen; i++ {
			idx = append(idx, i)
			d.Y = append(d.Y, 0)
		}
	}
	return idx, xs
}

// docCounts is what streamDocs learns from a pass over the eligible
// clients: the vocabulary's counts, the kept clients' windows and training
// token counts (their targets), and their held-out documents.
type docCounts struct {
	vocab, kept map[string]int
	lens        []int
	testDocs    [][]string
}

// streamDocs is buildDocs leaving the training examples in the file: the
// population's clients, vocabulary and test set are buildDocs's, and
// Cohorts reads a cohort's training windows from the file.
func streamDocs(ctx context.Context, t *tffFile, name, kind string, tok tokenizer, c *census, opt FileOptions) (*Federated, error) {
	opt = opt.withDefaults()
	to := opt.Text
	kept, isEligible, err := c.textClients(opt)
	if err != nil {
		return nil, err
	}
	dc := docCounts{vocab: map[string]int{}, kept: map[string]int{}, lens: make([]int, len(kept)), testDocs: make([][]string, len(kept))}
	err = t.docs(kind)([]string{opt.TrainSplit, opt.TestSplit}, keepOnly(isEligible), func(split int, client, text string) error {
		k, isKept := kept[client]
		if split == 1 {
			if isKept {
				dc.testDocs[k] = append(dc.testDocs[k], text)
			}
			return nil
		}
		toks := tok.tokens(text)
		for _, w := range toks {
			dc.vocab[w]++
		}
		if isKept && len(toks) > 0 {
			dc.lens[k] += (len(toks) + to.SeqLen) / to.SeqLen // ⌈(tokens+1)/SeqLen⌉ windows (Encode)
			for _, w := range toks {
				dc.kept[w]++
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	vocab := vocabFromCounts(dc.vocab, to.Vocab)
	mk := func() *Dataset { return &Dataset{Dim: to.SeqLen, Classes: vocab.Size(), Next: []int32{}} }
	f := &Federated{Name: name, Train: mk(), Test: mk(), Users: users(kept), Vocab: vocab, ClientTest: make([][]int, len(kept))}
	var xs []int32
	for k := range f.ClientTest {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f.ClientTest[k], xs = appendDocs(f.Test, vocab, tok, to.SeqLen, dc.testDocs[k], xs)
		dc.testDocs[k] = nil
	}
	if f.Test.Len() == 0 {
		return nil, fmt.Errorf("none of the %d clients has a document in split %q (the held-out split must hold the same clients' documents)", len(kept), opt.TestSplit)
	}
	f.targets = make([]int, vocab.Size())
	for w, n := range dc.kept {
		if id := vocab.ID(w); id >= NumSpecial {
			f.targets[id] += n
		}
	}
	feature := "tokens"
	if kind == TFFShakespeare {
		feature = "snippets"
	}
	f.stream = &tffStream{path: t.path, split: opt.TrainSplit, feature: feature, tok: tok, vocab: vocab, seqLen: to.SeqLen, users: f.Users, lens: dc.lens}
	return f, f.Validate()
}

// tffStream is the ClientData of a streamed TFF text file.
type tffStream struct {
	path, split, feature string
	tok                  tokenizer
	vocab                *Vocab
	seqLen               int
	users                []string // client names by id
	lens                 []int    // training windows by client id

	mu  sync.Mutex
	db  *sql.DB
	cur *cohortRows // the clients fetched
	pre *prefetch   // the next cohort, being read
}

// cohortRows is a cohort's training windows and each client's rows.
type cohortRows struct {
	d    *Dataset
	rows map[int][]int
}

// holds reports whether every client of ids was read.
func (c *cohortRows) holds(ids []int) bool {
	if c == nil {
		return false
	}
	for _, id := range ids {
		if _, ok := c.rows[id]; !ok {
			return false
		}
	}
	return true
}

// prefetch is a cohort read in the background.
type prefetch struct {
	ids  []int
	done chan struct{}
	got  *cohortRows
	err  error
}

var _ ClientData = (*tffStream)(nil)

// Len implements ClientData.
func (s *tffStream) Len(id int) int { return s.lens[id] }

// population keeps the ids of the population's clients.
func (s *tffStream) population(ids []int) []int {
	out := make([]int, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && id < len(s.lens) {
			out = append(out, id)
		}
	}
	return out
}

// Fetch implements ClientData: the clients come from the prefetch when it
// read them, else from the file; at most the current and the next cohort
// are held.
func (s *tffStream) Fetch(ctx context.Context, ids, next []int) error {
	ids, next = s.population(ids), s.population(next)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cur.holds(ids) {
		p := s.pre
		s.dropPrefetch()
		if p != nil && p.got.holds(ids) {
			s.cur = p.got
		} else {
			s.cur = nil // freed before the next is read
			if err := s.open(); err != nil {
				return err
			}
			got, err := s.read(ctx, ids)
			if err != nil {
				return err
			}
			s.cur = got
		}
	}
	if len(next) == 0 || s.cur.holds(next) || s.pre != nil && covers(s.pre.ids, next) {
		return nil
	}
	s.dropPrefetch()
	if err := s.open(); err != nil {
		return err
	}
	p := &prefetch{ids: next, done: make(chan struct{})}
	s.pre = p
	go func() {
		defer close(p.done)
		p.got, p.err = s.read(ctx, next)
	}()
	return nil
}

// covers reports whether every id of want is in have.
func covers(have, want []int) bool {
	set := make(map[int]bool, len(have))
	for _, id := range have {
		set[id] = true
	}
	for _, id := range want {
		if !set[id] {
			return false
		}
	}
	return true
}

// dropPrefetch waits for the prefetch, if any, and forgets it (its cohort
// stays in p.got for the caller that kept p).
func (s *tffStream) dropPrefetch() {
	if s.pre != nil {
		<-s.pre.done
		if s.pre.err != nil {
			s.pre.got = nil
		}
		s.pre = nil
	}
}

// Examples implements ClientData.
func (s *tffStream) Examples(id int) (*Dataset, []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, ok := s.cur.rowsOf(id)
	if !ok {
		panic(fmt.Sprintf("%v: client %d", errNotFetched, id))
	}
	return s.cur.d, rows
}

func (c *cohortRows) rowsOf(id int) ([]int, bool) {
	if c == nil {
		return nil, false
	}
	r, ok := c.rows[id]
	return r, ok
}

// Close implements ClientData.
func (s *tffStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropPrefetch()
	s.cur = nil
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

// open opens the file read-only, once.
func (s *tffStream) open() error {
	if s.db != nil {
		return nil
	}
	if err := regular.Check(s.path); err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	abs, err := filepath.Abs(s.path)
	if err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: abs}).EscapedPath()+"?mode=ro")
	if err != nil {
		return fmt.Errorf("datasets: %s: %w", s.path, err)
	}
	db.SetMaxOpenConns(1)
	s.db = db
	return nil
}

// read reads and encodes the training windows of the clients ids.
func (s *tffStream) read(ctx context.Context, ids []int) (*cohortRows, error) {
	n := 0
	for _, id := range ids {
		n += s.lens[id]
	}
	d := &Dataset{Dim: s.seqLen, Classes: s.vocab.Size(),
		X: make([]float32, 0, n*s.seqLen), Y: make([]int32, 0, n), Next: make([]int32, 0, n*s.seqLen)}
	got := &cohortRows{d: d, rows: make(map[int][]int, len(ids))}
	stmt, err := s.db.PrepareContext(ctx, fetchQuery)
	if err != nil {
		return nil, fmt.Errorf("datasets: %s: examples: %w", s.path, err)
	}
	defer stmt.Close()
	dec := newExampleDecoder(s.feature)
	var xs []int32
	for _, id := range ids {
		if _, ok := got.rows[id]; ok {
			continue
		}
		docs, err := s.docsOf(ctx, stmt, dec, s.users[id])
		if err != nil {
			return nil, fmt.Errorf("datasets: %s: client %q: %w", s.path, s.users[id], err)
		}
		var idx []int
		idx, xs = appendDocs(d, s.vocab, s.tok, s.seqLen, docs, xs)
		if len(idx) != s.lens[id] {
			return nil, fmt.Errorf("datasets: %s: client %q has %d training windows in split %s, %d when the file was loaded: the file changed since", s.path, s.users[id], len(idx), s.split, s.lens[id])
		}
		got.rows[id] = idx
	}
	return got, nil
}

// docsOf reads one client's training documents in the file's row order.
func (s *tffStream) docsOf(ctx context.Context, stmt *sql.Stmt, dec *exampleDecoder, client string) ([]string, error) {
	rows, err := stmt.QueryContext(ctx, client, s.split)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var docs []string
	var proto sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&proto); err != nil {
			return nil, err
		}
		if err := dec.decode(proto); err != nil {
			return nil, fmt.Errorf("malformed tf.train.Example: %w", err)
		}
		f, err := dec.feature(s.feature, featureBytes)
		if err != nil {
			return nil, err
		}
		if len(f.bytes) != 1 {
			return nil, fmt.Errorf("feature %q has %d values, want 1", s.feature, len(f.bytes))
		}
		docs = append(docs, string(f.bytes[0]))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no example in split %s, but it had when the file was loaded: the file changed since", s.split)
	}
	return docs, nil
}
