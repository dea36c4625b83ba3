package datasets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"dpfl/sim/rng"
)

// SyntheticText is the shape of a generated next-word TFF file in
// StackOverflow's schema (WriteSyntheticTFF): StackOverflow's training
// split has 342,477 users of about 400 sentences each.
type SyntheticText struct {
	Users int // clients of the training split
	// Sentences is the mean number of training sentences per user: user
	// u has a number drawn uniformly from 1..2·Sentences−1.
	Sentences int
	// Words is the mean number of words per sentence (uniform over
	// 1..2·Words−1), drawn from Vocab distinct words by a Zipf law of
	// exponent 1.1 (the most frequent first).
	Words, Vocab int
	// TestEvery gives every TestEvery-th user (0, TestEvery, ...) one
	// test-split sentence (0: every user).
	TestEvery int
	Seed      uint64 // the sentences come from the stream ("synth") of this seed
}

// WriteSyntheticTFF writes a new TFF SQLite file of the shape s at path
// (which must not exist): the tables examples and client_metadata, rows
// client by client (a user's training sentences, then its test sentence),
// and the indices of TFF's files. It returns the number of example rows.
func WriteSyntheticTFF(ctx context.Context, path string, s SyntheticText) (int64, error) {
	if s.Users < 1 || s.Sentences < 1 || s.Words < 1 || s.Vocab < 1 || s.TestEvery < 0 {
		return 0, fmt.Errorf("datasets: synthetic text %+v: users, sentences, words and vocab must be positive", s)
	}
	if _, err := os.Lstat(path); err == nil {
		return 0, fmt.Errorf("datasets: %s exists: a synthetic file is written only where there is none", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("datasets: %w", err)
	}
	w, err := newTFFWriter(path)
	if err != nil {
		return 0, fmt.Errorf("datasets: %s: %w", path, err)
	}
	r := rng.New(s.Seed).Stream("synth")
	zipf := rand.NewZipf(r, 1.1, 1, uint64(s.Vocab-1))
	every := max(s.TestEvery, 1)
	var sentence strings.Builder
	var proto []byte
	write := func(split, user string) error {
		sentence.Reset()
		for k := range 1 + r.IntN(2*s.Words-1) {
			if k > 0 {
				sentence.WriteByte(' ')
			}
			sentence.WriteString("w" + strconv.FormatUint(zipf.Uint64(), 36))
		}
		proto = tokensExample(proto[:0], sentence.String())
		return w.add(split, user, proto)
	}
	var rows int64
	for u := range s.Users {
		if err := ctx.Err(); err != nil {
			w.db.Close()
			return rows, err
		}
		user := fmt.Sprintf("%08d", u)
		n := 1 + r.IntN(2*s.Sentences-1)
		for range n {
			if err := write("train", user); err != nil {
				w.db.Close()
				return rows, fmt.Errorf("datasets: %s: %w", path, err)
			}
		}
		rows += int64(n)
		if u%every == 0 {
			if err := write("test", user); err != nil {
				w.db.Close()
				return rows, fmt.Errorf("datasets: %s: %w", path, err)
			}
			rows++
		}
	}
	if err := w.close(); err != nil {
		return rows, fmt.Errorf("datasets: %s: %w", path, err)
	}
	return rows, nil
}

// tokensExample appends a tf.train.Example holding one bytes feature,
// tokens, as StackOverflow's examples hold each sentence.
func tokensExample(dst []byte, text string) []byte {
	var list, feature, entry, feats []byte
	list = protowire.AppendTag(list, 1, protowire.BytesType)
	list = protowire.AppendString(list, text)
	feature = protowire.AppendTag(feature, featureBytes, protowire.BytesType)
	feature = protowire.AppendBytes(feature, list)
	entry = protowire.AppendTag(entry, 1, protowire.BytesType)
	entry = protowire.AppendString(entry, "tokens")
	entry = protowire.AppendTag(entry, 2, protowire.BytesType)
	entry = protowire.AppendBytes(entry, feature)
	feats = protowire.AppendTag(feats, 1, protowire.BytesType)
	feats = protowire.AppendBytes(feats, entry)
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	return protowire.AppendBytes(dst, feats)
}

// tffWriter writes a file in the schema of TFF's SQLite datasets (tables
// examples and client_metadata and TFF's indices), for tests and the
// generated files of the load figures.
type tffWriter struct {
	db   *sql.DB
	tx   *sql.Tx
	ins  *sql.Stmt
	meta map[[2]string]int
	rows int
}

func newTFFWriter(path string) (*tffWriter, error) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return nil, err
	}
	for _, q := range []string{
		"PRAGMA journal_mode = OFF",
		"PRAGMA synchronous = OFF",
		"CREATE TABLE examples (split_name TEXT NOT NULL, client_id TEXT NOT NULL, serialized_example_proto BLOB NOT NULL)",
		"CREATE TABLE client_metadata (client_id TEXT NOT NULL, split_name TEXT NOT NULL, num_examples INTEGER NOT NULL)",
	} {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			return nil, err
		}
	}
	w := &tffWriter{db: db, meta: map[[2]string]int{}}
	return w, w.begin()
}

func (w *tffWriter) begin() (err error) {
	if w.tx, err = w.db.Begin(); err != nil {
		return err
	}
	w.ins, err = w.tx.Prepare("INSERT INTO examples VALUES (?, ?, ?)")
	return err
}

// add appends one example row.
func (w *tffWriter) add(split, client string, proto []byte) error {
	if _, err := w.ins.Exec(split, client, proto); err != nil {
		return err
	}
	w.meta[[2]string{split, client}]++
	if w.rows++; w.rows%100000 == 0 {
		if err := w.tx.Commit(); err != nil {
			return err
		}
		return w.begin()
	}
	return nil
}

// close writes client_metadata and TFF's indices.
func (w *tffWriter) close() error {
	defer w.db.Close()
	keys := make([][2]string, 0, len(w.meta))
	for k := range w.meta {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int {
		if c := strings.Compare(a[1], b[1]); c != 0 {
			return c
		}
		return strings.Compare(a[0], b[0])
	})
	meta, err := w.tx.Prepare("INSERT INTO client_metadata VALUES (?, ?, ?)")
	if err != nil {
		return err
	}
	for _, k := range keys {
		if _, err := meta.Exec(k[1], k[0], w.meta[k]); err != nil {
			return err
		}
	}
	if err := w.tx.Commit(); err != nil {
		return err
	}
	for _, q := range []string{
		"CREATE INDEX idx_examples_client_id ON examples (client_id)",
		"CREATE INDEX idx_examples_client_id_split ON examples (split_name, client_id)",
		"CREATE INDEX idx_metadata_client_id ON client_metadata (client_id)",
	} {
		if _, err := w.db.Exec(q); err != nil {
			return err
		}
	}
	return nil
}
