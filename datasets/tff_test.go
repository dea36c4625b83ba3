package datasets

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestExampleDecoderHandWritten decodes a tf.train.Example whose bytes were
// worked out by hand from the .proto definitions (not by our encoder):
// {features {feature {key: "label" value {int64_list {value: 7}}}}}.
func TestExampleDecoderHandWritten(t *testing.T) {
	b := []byte{
		0x0a, 0x10, // Example.features, 16 bytes
		0x0a, 0x0e, // Features.feature map entry, 14 bytes
		0x0a, 0x05, 'l', 'a', 'b', 'e', 'l', // key
		0x12, 0x05, // value: Feature, 5 bytes
		0x1a, 0x03, // Feature.int64_list, 3 bytes
		0x0a, 0x01, 0x07, // Int64List.value, packed: [7]
	}
	d := newExampleDecoder("label")
	if err := d.decode(b); err != nil {
		t.Fatal(err)
	}
	f, err := d.feature("label", featureInt64)
	if err != nil || !slices.Equal(f.ints, []int64{7}) {
		t.Fatalf("label %v, %v", f, err)
	}
	// The same list unpacked (a varint field per value: 08 07 08 09), and a
	// float list unpacked (fixed32 1.0 = 0x3f800000), next to an unknown
	// field (number 9, varint) that is skipped.
	b = []byte{
		0x48, 0x01, // unknown field 9 of Example
		0x0a, 0x24,
		0x0a, 0x0f, 0x0a, 0x05, 'l', 'a', 'b', 'e', 'l', 0x12, 0x06, 0x1a, 0x04, 0x08, 0x07, 0x08, 0x09,
		0x0a, 0x11, 0x0a, 0x01, 'x', 0x12, 0x0c, 0x12, 0x0a, 0x0d, 0x00, 0x00, 0x80, 0x3f, 0x0d, 0x00, 0x00, 0x00, 0x40,
	}
	d = newExampleDecoder("label", "x")
	if err := d.decode(b); err != nil {
		t.Fatal(err)
	}
	f, _ = d.feature("label", featureInt64)
	x, err := d.feature("x", featureFloat)
	if err != nil || !slices.Equal(f.ints, []int64{7, 9}) || !slices.Equal(x.floats, []float32{1, 2}) {
		t.Fatalf("label %v x %v %v", f.ints, x, err)
	}
	if _, err := d.feature("x", featureBytes); err == nil || !strings.Contains(err.Error(), `"x" is a float_list, want a bytes_list`) {
		t.Fatalf("kind mismatch: %v", err)
	}
	// Truncated anywhere: an error, never a panic.
	for n := 1; n < len(b); n++ {
		if err := d.decode(b[:n]); err == nil && n != 2 {
			t.Errorf("prefix of %d bytes decoded without error", n)
		}
	}
}

// TestExampleRoundTrip: what the test encoder writes, the decoder reads.
func TestExampleRoundTrip(t *testing.T) {
	px := make([]float32, 784)
	for i := range px {
		px[i] = float32(i) / 784
	}
	b := appendExample(nil, []string{"pixels", "label", "tokens"}, []any{px, []int64{61}, []string{"how do i"}})
	d := newExampleDecoder("tokens", "pixels", "label", "absent")
	if err := d.decode(b); err != nil {
		t.Fatal(err)
	}
	p, _ := d.feature("pixels", featureFloat)
	l, _ := d.feature("label", featureInt64)
	s, _ := d.feature("tokens", featureBytes)
	if !slices.Equal(p.floats, px) || !slices.Equal(l.ints, []int64{61}) || len(s.bytes) != 1 || string(s.bytes[0]) != "how do i" {
		t.Fatalf("decoded %v %v %q", len(p.floats), l.ints, s.bytes)
	}
	if _, err := d.feature("absent", featureBytes); err == nil || !strings.Contains(err.Error(), `feature "absent" missing`) {
		t.Fatalf("absent feature: %v", err)
	}
}

// emnistRow is one generated EMNIST example: the writer's number and the
// label are written into the pixels so a test can tell examples apart.
func emnistProto(writer, k int, label int64) []byte {
	px := make([]float32, 784)
	px[0], px[1], px[2] = float32(writer), float32(k), float32(label)
	return appendExample(nil, []string{"label", "pixels"}, []any{[]int64{label}, px})
}

// writeTFF writes a TFF-schema file of the rows emit gives.
func writeTFF(t testing.TB, emit func(add func(split, client string, proto []byte))) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.sqlite")
	w, err := newTFFWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	emit(func(split, client string, proto []byte) {
		if err := w.add(split, client, proto); err != nil {
			t.Fatal(err)
		}
	})
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTFFEMNIST: clients, shapes, labels and splits of a generated EMNIST
// file (62 classes; digits only as a subset), and a random subset of
// writers holding only their own examples.
func TestTFFEMNIST(t *testing.T) {
	// Writer w has 2+w training images with labels (w*7+k) mod 62 and one
	// test image; writer 3's are all letters; rows are interleaved.
	labels := func(w, k int) int64 {
		if w == 3 {
			return int64(10 + k)
		}
		return int64((w*3 + k) % 62)
	}
	path := writeTFF(t, func(add func(split, client string, proto []byte)) {
		for k := 0; k < 6; k++ {
			for w := 4; w >= 0; w-- {
				if k < 2+w {
					add("train", fmt.Sprintf("f%04d_%02d", w, w), emnistProto(w, k, labels(w, k)))
				}
				if k == 0 {
					add("test", fmt.Sprintf("f%04d_%02d", w, w), emnistProto(w, 100, labels(w, 0)))
				}
			}
		}
	})
	f, err := LoadTFF(path, TFFEMNIST, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.NumClients() != 5 || f.Train.Len() != 2+3+4+5+6 || f.Test.Len() != 5 || f.Train.Dim != 784 || f.Train.Classes != 62 {
		t.Fatalf("%d clients, %d/%d examples, dim %d, %d classes", f.NumClients(), f.Train.Len(), f.Test.Len(), f.Train.Dim, f.Train.Classes)
	}
	for c, u := range f.Users {
		if want := fmt.Sprintf("f%04d_%02d", c, c); u != want {
			t.Fatalf("client %d is %s, want %s (sorted by id)", c, u, want)
		}
		if len(f.Clients[c]) != 2+c || len(f.ClientTest[c]) != 1 {
			t.Fatalf("client %d: %d train, %d test", c, len(f.Clients[c]), len(f.ClientTest[c]))
		}
		for k, i := range f.Clients[c] {
			row := f.Train.Row(i)
			if row[0] != float32(c) || row[1] != float32(k) || f.Train.Y[i] != int32(labels(c, k)) || row[2] != float32(f.Train.Y[i]) {
				t.Fatalf("client %d example %d: pixels %v label %d", c, k, row[:3], f.Train.Y[i])
			}
		}
		if i := f.ClientTest[c][0]; f.Test.Row(i)[0] != float32(c) || f.Test.Row(i)[1] != 100 {
			t.Fatalf("client %d's test example is %v", c, f.Test.Row(i)[:3])
		}
	}
	if n, err := CountTFF(path, TFFEMNIST, FileOptions{}); err != nil || n != 5 {
		t.Fatalf("CountTFF %d, %v", n, err)
	}

	// Digits only: 10 classes, letters dropped, writers without a digit
	// (3: letters only; 4: labels 12-17) gone.
	d, err := LoadTFF(path, TFFEMNIST, FileOptions{DigitsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	digits := 0
	var withDigits []string
	for w := 0; w < 5; w++ {
		n := 0
		for k := 0; k < 2+w; k++ {
			if labels(w, k) < 10 {
				n++
			}
		}
		if n > 0 {
			withDigits = append(withDigits, fmt.Sprintf("f%04d_%02d", w, w))
		}
		digits += n
	}
	if d.Train.Classes != 10 || !slices.Equal(d.Users, withDigits) || len(withDigits) != 3 {
		t.Fatalf("digits only: %d classes, users %v, want %v", d.Train.Classes, d.Users, withDigits)
	}
	for _, y := range slices.Concat(d.Train.Y, d.Test.Y) {
		if y >= 10 {
			t.Fatalf("digits only: label %d", y)
		}
	}
	if d.Train.Len() != digits {
		t.Fatalf("digits only: %d training examples, want %d", d.Train.Len(), digits)
	}
	if n, err := CountTFF(path, TFFEMNIST, FileOptions{DigitsOnly: true}); err != nil || n != 3 {
		t.Fatalf("CountTFF digits %d, %v", n, err)
	}

	// A subset of 2 writers holds their examples and nothing else.
	s, err := LoadTFF(path, TFFEMNIST, FileOptions{Clients: 2, Subset: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for c, u := range s.Users {
		var w int
		fmt.Sscanf(u, "f%04d", &w)
		want += 2 + w
		for _, i := range s.Clients[c] {
			if s.Train.Row(i)[0] != float32(w) {
				t.Fatalf("subset client %s holds writer %v's image", u, s.Train.Row(i)[0])
			}
		}
	}
	if s.NumClients() != 2 || s.Train.Len() != want || s.Test.Len() != 2 || !slices.IsSorted(s.Users) {
		t.Fatalf("subset: users %v, %d train, %d test", s.Users, s.Train.Len(), s.Test.Len())
	}
	if _, err := LoadTFF(path, TFFEMNIST, FileOptions{Clients: 6, Subset: rand.New(rand.NewPCG(1, 2))}); err == nil ||
		!strings.Contains(err.Error(), "6 clients asked for, but the data has 5") {
		t.Fatalf("too many clients: %v", err)
	}
}

// TestTFFStackOverflow: word-level text from the train split (vocabulary
// from it alone), windows as NewTextFederated's, test split as held-out
// part, min_tokens, and heldout refused as a held-out split (other users).
func TestTFFStackOverflow(t *testing.T) {
	train := map[string][]string{
		"00000001": {"how do i parse json in go", "use encoding json", "it works < code > fine"},
		"00000002": {"the answer is json", "json json json go"},
		"00000003": {"tiny"},
	}
	test := map[string][]string{
		"00000001": {"unseenword in go"},
		"00000002": {"json is fine"},
	}
	heldout := map[string][]string{"00000009": {"other users here"}}
	so := func(s string) []byte {
		return appendExample(nil, []string{"creation_date", "title", "score", "tags", "tokens", "type"},
			[]any{[]string{"2010-01-01"}, []string{"t"}, []int64{3}, []string{"go|json"}, []string{s}, []string{"question"}})
	}
	path := writeTFF(t, func(add func(split, client string, proto []byte)) {
		for _, split := range []struct {
			name string
			m    map[string][]string
		}{{"train", train}, {"heldout", heldout}, {"test", test}} {
			for _, u := range []string{"00000003", "00000002", "00000001", "00000009"} {
				for _, s := range split.m[u] {
					add(split.name, u, so(s))
				}
			}
		}
	})
	opt := FileOptions{Text: TextOptions{Vocab: 5, SeqLen: 4, MinTokens: 3}}
	f, err := LoadTFF(path, TFFStackOverflow, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Users, []string{"00000001", "00000002"}) {
		t.Fatalf("users %v (00000003 has 1 token < min_tokens 3)", f.Users)
	}
	// Vocabulary: the 5 most frequent training tokens of the eligible users.
	var docs [][]string
	for _, u := range f.Users {
		for _, s := range train[u] {
			docs = append(docs, Tokenize(s))
		}
	}
	v := BuildVocab(docs, 5)
	if !reflect.DeepEqual(f.Vocab.Words, v.Words) || f.Vocab.ID("unseenword") != OOVID {
		t.Fatalf("vocabulary %q, want %q", f.Vocab.Words, v.Words)
	}
	// Windows: each document encoded as Vocab.Encode does, client by client.
	check := func(d *Dataset, parts [][]int, m map[string][]string) {
		for c, u := range f.Users {
			var x, next []int32
			for _, s := range m[u] {
				x, next = v.Encode(x, next, Tokenize(s), 4)
			}
			var gx, gn []int32
			for _, i := range parts[c] {
				for _, id := range d.Row(i) {
					gx = append(gx, int32(id))
				}
				gn = append(gn, d.Next[i*4:(i+1)*4]...)
			}
			if !slices.Equal(gx, x) || !slices.Equal(gn, next) {
				t.Fatalf("client %s: windows %v / %v, want %v / %v", u, gx, gn, x, next)
			}
		}
	}
	check(f.Train, f.Clients, train)
	check(f.Test, f.ClientTest, test)
	if n, err := CountTFF(path, TFFStackOverflow, opt); err != nil || n != 2 {
		t.Fatalf("CountTFF %d, %v", n, err)
	}
	opt.TestSplit = "heldout"
	if _, err := LoadTFF(path, TFFStackOverflow, opt); err == nil || !strings.Contains(err.Error(), `split "heldout"`) {
		t.Fatalf("heldout as test split: %v", err)
	}
	opt.TestSplit = "validation"
	if _, err := LoadTFF(path, TFFStackOverflow, opt); err == nil || !strings.Contains(err.Error(), `no split "validation" in client_metadata (the file has heldout, test, train)`) {
		t.Fatalf("unknown split: %v", err)
	}
}

// TestTFFShakespeare: character-level text, case and spaces kept.
func TestTFFShakespeare(t *testing.T) {
	path := writeTFF(t, func(add func(split, client string, proto []byte)) {
		sn := func(s string) []byte { return appendExample(nil, []string{"snippets"}, []any{[]string{s}}) }
		add("train", "THE_TRAGEDY_OF_KING_LEAR_KING", sn("Attend the lords of France"))
		add("train", "ALLS_WELL_THAT_ENDS_WELL_HELENA", sn("O, were that all!"))
		add("test", "ALLS_WELL_THAT_ENDS_WELL_HELENA", sn("Oo!"))
		add("test", "THE_TRAGEDY_OF_KING_LEAR_KING", sn("Q"))
	})
	f, err := LoadTFF(path, TFFShakespeare, FileOptions{Text: TextOptions{SeqLen: 8, MinTokens: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if f.NumClients() != 2 || f.Users[0] != "ALLS_WELL_THAT_ENDS_WELL_HELENA" {
		t.Fatalf("users %v", f.Users)
	}
	// 'O' and 'o' are different characters; 'Q' never occurs in training.
	if f.Vocab.ID("O") == f.Vocab.ID("o") || f.Vocab.ID(" ") == OOVID || f.Vocab.ID("Q") != OOVID {
		t.Fatalf("character ids O %d o %d space %d Q %d", f.Vocab.ID("O"), f.Vocab.ID("o"), f.Vocab.ID(" "), f.Vocab.ID("Q"))
	}
	// Client 0's training text "O, were that all!" is 17 characters: the
	// stream BOS + 17 + EOS gives 18 targets in 3 windows of 8.
	if len(f.Clients[0]) != 3 || f.Train.X[0] != BOSID || f.Train.Next[0] != f.Vocab.ID("O") || f.Train.Next[1] != f.Vocab.ID(",") {
		t.Fatalf("client 0: %d windows, first %v -> %v", len(f.Clients[0]), f.Train.X[:8], f.Train.Next[:8])
	}
	if f.Test.Len() != 2 || f.Test.Next[1] != f.Vocab.ID("o") {
		t.Fatalf("test %d windows, %v", f.Test.Len(), f.Test.Next)
	}
}

// TestTFFErrors: a missing table or column, a malformed proto, a missing or
// mistyped feature, a file that is not SQLite: errors that name what is
// wrong, never a panic.
func TestTFFErrors(t *testing.T) {
	good := func(add func(split, client string, proto []byte)) {
		add("train", "a", emnistProto(0, 0, 1))
		add("test", "a", emnistProto(0, 1, 2))
	}
	exec := func(path, q string) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, sql, kind, want string
	}{
		{"no metadata", "DROP TABLE client_metadata", TFFEMNIST, "table client_metadata missing"},
		{"no examples", "DROP TABLE examples", TFFEMNIST, "table examples missing"},
		{"no column", "ALTER TABLE examples RENAME COLUMN serialized_example_proto TO proto", TFFEMNIST, "table examples has no column serialized_example_proto"},
		{"malformed proto", "INSERT INTO examples VALUES ('train', 'a', x'0a05ffff')", TFFEMNIST, "client a): malformed tf.train.Example"},
		{"short pixels", fmt.Sprintf("INSERT INTO examples VALUES ('train', 'a', x'%x')",
			appendExample(nil, []string{"pixels", "label"}, []any{make([]float32, 700), []int64{1}})), TFFEMNIST, `feature "pixels" has 700 values, want 28×28 = 784`},
		{"bad label", fmt.Sprintf("INSERT INTO examples VALUES ('train', 'a', x'%x')", emnistProto(1, 1, 62)), TFFEMNIST, "label 62 outside EMNIST's [0, 62)"},
		{"wrong dataset", "", TFFStackOverflow, `feature "tokens" missing`},
	}
	for _, c := range cases {
		path := writeTFF(t, good)
		if c.sql != "" {
			exec(path, c.sql)
		}
		_, err := LoadTFF(path, c.kind, FileOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming %s and %q", c.name, err, path, c.want)
		}
	}
	junk := filepath.Join(t.TempDir(), "junk.sqlite")
	os.WriteFile(junk, []byte(strings.Repeat("not a database ", 100)), 0o644)
	if _, err := LoadTFF(junk, TFFEMNIST, FileOptions{}); err == nil || !strings.Contains(err.Error(), "is not a SQLite file") {
		t.Errorf("junk file: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "absent.sqlite")
	if _, err := LoadTFF(missing, TFFEMNIST, FileOptions{}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("reading a missing file created it")
	}
}
