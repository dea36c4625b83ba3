package datasets

import (
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// appendExample appends a serialized tf.train.Example holding the given
// features (test data and generated files; values are []float32, []int64,
// or []string / [][]byte), with the map entries in the order of names.
func appendExample(dst []byte, names []string, values []any) []byte {
	var feats []byte
	for i, name := range names {
		var list []byte
		var kind protowire.Number
		switch v := values[i].(type) {
		case []float32:
			kind = featureFloat
			packed := make([]byte, 0, 4*len(v))
			for _, x := range v {
				packed = protowire.AppendFixed32(packed, math.Float32bits(x))
			}
			list = protowire.AppendTag(list, 1, protowire.BytesType)
			list = protowire.AppendBytes(list, packed)
		case []int64:
			kind = featureInt64
			var packed []byte
			for _, x := range v {
				packed = protowire.AppendVarint(packed, uint64(x))
			}
			list = protowire.AppendTag(list, 1, protowire.BytesType)
			list = protowire.AppendBytes(list, packed)
		case []string:
			kind = featureBytes
			for _, s := range v {
				list = protowire.AppendTag(list, 1, protowire.BytesType)
				list = protowire.AppendString(list, s)
			}
		default:
			panic(fmt.Sprintf("datasets: appendExample: %T", v))
		}
		var feature []byte
		feature = protowire.AppendTag(feature, kind, protowire.BytesType)
		feature = protowire.AppendBytes(feature, list)
		var entry []byte
		entry = protowire.AppendTag(entry, 1, protowire.BytesType)
		entry = protowire.AppendString(entry, name)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendBytes(entry, feature)
		feats = protowire.AppendTag(feats, 1, protowire.BytesType)
		feats = protowire.AppendBytes(feats, entry)
	}
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
