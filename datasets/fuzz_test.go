package datasets

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fuzz targets of the federated-file readers: TFF SQLite files, LEAF
// JSON folders and JSONL corpora. go test runs their seed corpus (small
// valid and invalid inputs generated here); .ci/run fuzzes each for a
// bounded number of executions, longer runs by hand:
//
//	go test ./datasets -run '^$' -fuzz '^FuzzTFF$' -fuzztime 5m -fuzzminimizetime 200x
//	go test ./datasets -run '^$' -fuzz '^FuzzLEAF$' -fuzztime 5m -fuzzminimizetime 200x
//	go test ./datasets -run '^$' -fuzz '^FuzzJSONL$' -fuzztime 5m -fuzzminimizetime 200x
//
// (minimizing a new input by the default minute stalls the search, and a
// time limit restarts the fuzzing process when it runs out: a count limit
// keeps it going).
//
// Properties: no panic; every input is either refused with an error or
// gives a population that validates, whose features are finite, whose
// examples are no more than the file holds, and whose client count is the
// census's (what dpfl account counts is what dpfl run loads).

// checkPopulation fails t unless f is a sane population of at most
// maxExamples training examples whose client count is census's.
func checkPopulation(t *testing.T, f *Federated, maxExamples, census int, censusErr error) {
	t.Helper()
	if err := f.Validate(); err != nil {
		t.Fatalf("accepted a population that does not validate: %v", err)
	}
	for _, d := range []*Dataset{f.Train, f.Test} {
		for i, v := range d.X {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("accepted feature %d = %v", i, v)
			}
		}
	}
	if f.Train.Next == nil && f.Train.Len() > maxExamples {
		t.Fatalf("%d training images from %d stored examples", f.Train.Len(), maxExamples)
	}
	if f.NumClients() == 0 || f.Test.Len() == 0 {
		t.Fatalf("accepted %d clients, %d test examples", f.NumClients(), f.Test.Len())
	}
	if censusErr != nil || census != f.NumClients() {
		t.Fatalf("the census gives %d clients (%v), the load %d", census, censusErr, f.NumClients())
	}
}

// tffRecords encodes TFF rows for FuzzTFF: per row a split byte (0 train,
// 1 test, else heldout), a client byte, a big-endian uint16 length and the
// serialized proto.
func tffRecords(rows ...[]any) []byte {
	var b []byte
	for _, r := range rows {
		proto := r[2].([]byte)
		b = append(b, r[0].(byte), r[1].(byte))
		b = binary.BigEndian.AppendUint16(b, uint16(len(proto)))
		b = append(b, proto...)
	}
	return b
}

func textProto(feature, s string) []byte {
	return appendExample(nil, []string{feature}, []any{[]string{s}})
}

// FuzzTFF: mode's low two bits choose the kind (EMNIST, EMNIST digits only,
// StackOverflow, Shakespeare); bit 2 writes data as the SQLite file itself,
// else data is rows (see tffRecords) written into a TFF-schema file; bit 3
// sets the first client's num_examples in client_metadata to count.
func FuzzTFF(f *testing.F) {
	nan := make([]float32, 784)
	nan[5] = float32(math.NaN())
	emnist := tffRecords(
		[]any{byte(0), byte(1), emnistProto(1, 0, 3)}, []any{byte(0), byte(1), emnistProto(1, 1, 40)},
		[]any{byte(0), byte(2), emnistProto(2, 0, 7)}, []any{byte(1), byte(1), emnistProto(1, 2, 3)},
		[]any{byte(1), byte(2), emnistProto(2, 2, 9)})
	text := func(feature string) []byte {
		return tffRecords(
			[]any{byte(0), byte(1), textProto(feature, "to be or not to be that is the question")},
			[]any{byte(0), byte(2), textProto(feature, "whether tis nobler in the mind to suffer")},
			[]any{byte(1), byte(1), textProto(feature, "the slings and arrows")},
			[]any{byte(1), byte(2), textProto(feature, "of outrageous fortune")},
			[]any{byte(2), byte(3), textProto(feature, "or to take arms")})
	}
	f.Add(uint8(0), emnist, int64(0))
	f.Add(uint8(1), emnist, int64(0))
	f.Add(uint8(8), emnist, int64(1e10))
	f.Add(uint8(8), emnist, int64(-1))
	f.Add(uint8(8), emnist, int64(math.MaxInt64))
	f.Add(uint8(0), append(emnist, tffRecords([]any{byte(0), byte(3), appendExample(nil, []string{"label", "pixels"}, []any{[]int64{1}, nan})})...), int64(0))
	f.Add(uint8(0), tffRecords([]any{byte(0), byte(1), []byte{0x0a, 0x05, 0xff, 0xff}}), int64(0))
	f.Add(uint8(2), text("tokens"), int64(0))
	f.Add(uint8(3), text("snippets"), int64(0))
	f.Add(uint8(3), text("tokens"), int64(0))
	f.Add(uint8(4), []byte("not a database at all"), int64(0))
	// A small valid file, as bytes.
	dir := f.TempDir()
	path := writeTFFRecords(f, dir, emnist, false, 0)
	if b, err := os.ReadFile(path); err == nil {
		f.Add(uint8(4), b, int64(0))
	}
	f.Fuzz(func(t *testing.T, mode uint8, data []byte, count int64) {
		dir := t.TempDir()
		var path string
		examples := 0
		if mode&4 != 0 {
			path = filepath.Join(dir, "raw.sqlite")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			examples = len(data) / emnistMinProto
		} else {
			path = writeTFFRecords(t, dir, data, mode&8 != 0, count)
			examples = len(data)
		}
		kind := []string{TFFEMNIST, TFFEMNIST, TFFStackOverflow, TFFShakespeare}[mode%4]
		opt := FileOptions{DigitsOnly: mode%4 == 1, Text: TextOptions{Vocab: 20, SeqLen: 4, MinTokens: 1}}
		fed, err := LoadTFF(path, kind, opt)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		n, cerr := CountTFF(path, kind, opt)
		checkPopulation(t, fed, examples, n, cerr)
	})
}

// writeTFFRecords writes the rows of data (see tffRecords) into a
// TFF-schema file; setCount overrides the first client's train
// num_examples.
func writeTFFRecords(t testing.TB, dir string, data []byte, setCount bool, count int64) string {
	path := filepath.Join(dir, "data.sqlite")
	w, err := newTFFWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	splits := []string{"train", "test", "heldout"}
	for len(data) >= 4 {
		split, client := splits[min(int(data[0]), 2)], fmt.Sprintf("c%d", data[1]%8)
		n := min(int(binary.BigEndian.Uint16(data[2:])), len(data)-4)
		if err := w.add(split, client, data[4:4+n]); err != nil {
			t.Fatal(err)
		}
		data = data[4+n:]
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	if setCount {
		execSQL(t, path, "UPDATE client_metadata SET num_examples = ? WHERE rowid = (SELECT min(rowid) FROM client_metadata WHERE split_name = 'train')", count)
	}
	return path
}

// leafSeed is a LEAF file of users with n examples each: FEMNIST images
// (x lists of 784 pixels, y classes) or Shakespeare windows.
func leafSeed(users []string, n int, shakespeare bool) []byte {
	data := map[string]any{}
	var counts []int
	for u, name := range users {
		var xs, ys []any
		for k := 0; k < n; k++ {
			if shakespeare {
				xs, ys = append(xs, fmt.Sprintf("to be or not %d%d", u, k)), append(ys, "!")
				continue
			}
			px := make([]float32, 784)
			px[u], px[k] = 0.5, 1
			xs, ys = append(xs, px), append(ys, (u+k)%62)
		}
		counts = append(counts, n)
		data[name] = map[string]any{"x": xs, "y": ys}
	}
	b, _ := json.Marshal(map[string]any{"users": users, "num_samples": counts, "user_data": data})
	return b
}

// FuzzLEAF: train and test are the JSON files of a LEAF folder's train/
// and test/; digits keeps FEMNIST's digits only.
func FuzzLEAF(f *testing.F) {
	users := []string{"f0", "f1"}
	fem, femTest := leafSeed(users, 2, false), leafSeed(users, 1, false)
	sh, shTest := leafSeed(users, 2, true), leafSeed(users, 1, true)
	f.Add(fem, femTest, false)
	f.Add(fem, femTest, true)
	f.Add(sh, shTest, false)
	f.Add(append(append([]byte{}, fem...), "garbage"...), femTest, false)
	f.Add(append(append([]byte{}, fem...), fem...), femTest, false)
	f.Add(fem[:len(fem)/2], femTest, false)
	f.Add([]byte(`{"users": ["a"], "num_samples": [1e10], "user_data": {"a": {"x": [[1e39]], "y": [1]}}}`), femTest, false)
	f.Add([]byte(`{"users": [], "user_data": {}}`), []byte(`{}`), false)
	f.Add(sh, femTest, false)
	f.Fuzz(func(t *testing.T, train, test []byte, digits bool) {
		dir := t.TempDir()
		for split, b := range map[string][]byte{"train": train, "test": test} {
			os.MkdirAll(filepath.Join(dir, split), 0o755)
			if err := os.WriteFile(filepath.Join(dir, split, "a.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		opt := FileOptions{DigitsOnly: digits, Text: TextOptions{Vocab: 30}}
		fed, err := LoadLEAF(dir, opt)
		if err != nil {
			if !strings.Contains(err.Error(), dir) {
				t.Fatalf("error does not name the folder: %v", err)
			}
			return
		}
		n, cerr := CountLEAF(dir, opt)
		checkPopulation(t, fed, (len(train)+len(test))/2, n, cerr)
	})
}

// FuzzJSONL: a JSONL corpus read and split into a next-word population.
func FuzzJSONL(f *testing.F) {
	var b bytes.Buffer
	for u := 0; u < 3; u++ {
		for d := 0; d < 3; d++ {
			fmt.Fprintf(&b, `{"user": "u%d", "text": "doc %d of user %d says hello world"}`+"\n", u, d, u)
		}
	}
	f.Add(b.Bytes())
	f.Add([]byte(`{"user": "a", "text": "x"} garbage` + "\n"))
	f.Add([]byte(`{"user": "a", "text": "x"}{"user": "b", "text": "y"}` + "\n"))
	f.Add([]byte(`{"user": "a"}` + "\n"))
	f.Add([]byte(`{"user": 1, "text": "x"}` + "\n"))
	f.Add([]byte("\n\n  \n"))
	f.Add([]byte(`{"user": "a", "text": "\u0000\ud800 é ü 中文"}` + "\n" + `{"user": "a", "text": "b c d"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "c.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		docs, err := ReadTextByUser(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(docs) > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("%d documents from %d lines", len(docs), bytes.Count(data, []byte("\n"))+1)
		}
		opt := TextOptions{Vocab: 20, SeqLen: 4, MinTokens: 1, TestFraction: 0.5}
		fed, err := NewTextFederated("text", docs, opt, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			return
		}
		checkPopulation(t, fed, 0, fed.NumClients(), nil)
	})
}
