package datasets

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// execSQL runs a statement on a SQLite file.
func execSQL(t testing.TB, path, q string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatal(err)
	}
}

// TestTFFMetadataCountBounded: a num_examples in client_metadata beyond what
// the file can hold is refused by the census (dpfl account) and the load
// (dpfl run) with one line naming the file, the table, the client and the
// field, before anything is sized from it; one client's count, or the sum
// of several, both count.
func TestTFFMetadataCountBounded(t *testing.T) {
	good := func(add func(split, client string, proto []byte)) {
		for k := 0; k < 3; k++ {
			add("train", "a", emnistProto(0, k, 1))
			add("train", "b", emnistProto(1, k, 2))
		}
		add("test", "a", emnistProto(0, 9, 2))
		add("test", "b", emnistProto(1, 9, 2))
	}
	for _, c := range []struct {
		name, update, client string
	}{
		{"one huge count", "UPDATE client_metadata SET num_examples = 10000000000 WHERE client_id = 'b' AND split_name = 'train'", `client "b" has num_examples 10000000000`},
		{"int64 max", "UPDATE client_metadata SET num_examples = 9223372036854775807 WHERE client_id = 'a' AND split_name = 'train'", `client "a" has num_examples 9223372036854775807`},
		{"sum too large", "UPDATE client_metadata SET num_examples = (SELECT page_count * page_size / 3136 FROM pragma_page_count(), pragma_page_size()) WHERE split_name = 'train'", `client "b" has num_examples`},
	} {
		path := writeTFF(t, good)
		execSQL(t, path, c.update)
		n, err := CountTFF(path, TFFEMNIST, FileOptions{})
		for _, e := range []error{err, func() error { _, err := LoadTFF(path, TFFEMNIST, FileOptions{}); return err }()} {
			if e == nil || !strings.Contains(e.Error(), path) || !strings.Contains(e.Error(), "client_metadata") ||
				!strings.Contains(e.Error(), c.client) || !strings.Contains(e.Error(), "more than the file") || strings.Contains(e.Error(), "\n") {
				t.Errorf("%s: count %d, error %v; want one line naming %s, client_metadata and %s", c.name, n, e, path, c.client)
			}
		}
	}
	// The counts of a real file pass.
	path := writeTFF(t, good)
	if n, err := CountTFF(path, TFFEMNIST, FileOptions{}); err != nil || n != 2 {
		t.Fatalf("good file: %d clients, %v", n, err)
	}
}

// nonFiniteProto is an EMNIST example whose pixel i is v.
func nonFiniteProto(i int, v float32) []byte {
	px := make([]float32, 784)
	px[i] = v
	return appendExample(nil, []string{"label", "pixels"}, []any{[]int64{3}, px})
}

// TestTFFNonFinitePixels: a NaN or infinite pixel, in the training or the
// test split, is refused at load with one line naming the file, the client
// and the example's row.
func TestTFFNonFinitePixels(t *testing.T) {
	for _, c := range []struct {
		split string
		v     float32
		want  string
	}{
		{"train", float32(math.NaN()), "value 17 is NaN"},
		{"train", float32(math.Inf(1)), "value 17 is +Inf"},
		{"test", float32(math.NaN()), "value 17 is NaN"},
		{"test", float32(math.Inf(-1)), "value 17 is -Inf"},
	} {
		path := writeTFF(t, func(add func(split, client string, proto []byte)) {
			add("train", "a", emnistProto(0, 0, 1))
			add("test", "a", emnistProto(0, 1, 1))
			add(c.split, "bad", nonFiniteProto(17, c.v))
			add("train", "bad", emnistProto(1, 0, 1))
			add("test", "bad", emnistProto(1, 1, 1))
		})
		_, err := LoadTFF(path, TFFEMNIST, FileOptions{})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "examples row 3 (split "+c.split+", client bad)") ||
			!strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v; want an error naming %s, row 3 of client bad and %q", c.split, c.v, err, path, c.want)
		}
	}
}

// withTimeout runs fn and fails the test if it does not return within d
// (a reader blocked on a FIFO never would).
func withTimeout(t *testing.T, what string, d time.Duration, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
		return nil
	}
}

// mkfifo makes a named pipe at path, or skips the test where there are
// none.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := makeFIFO(path); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
}

// TestReadersRefuseFIFO: every reader refuses a named pipe (or a device)
// where it wants a file, at once and naming it, instead of blocking in the
// open (no writer ever comes) or reading for ever.
func TestReadersRefuseFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.sqlite")
	mkfifo(t, fifo)
	leaf, _ := femnistData(t, 2)
	leafFIFO := filepath.Join(leaf, "train", "zz_pipe.json")
	mkfifo(t, leafFIFO)
	jsonl := filepath.Join(dir, "pipe.jsonl")
	mkfifo(t, jsonl)
	gz := filepath.Join(dir, "changelog.Debian.gz")
	mkfifo(t, gz)
	mnist := t.TempDir()
	for _, name := range mnistFiles {
		mkfifo(t, filepath.Join(mnist, name))
	}
	cases := []struct {
		name, path string
		load       func() error
	}{
		{"TFF load", fifo, func() error { _, err := LoadTFF(fifo, TFFEMNIST, FileOptions{}); return err }},
		{"TFF census", fifo, func() error { _, err := CountTFF(fifo, TFFShakespeare, FileOptions{}); return err }},
		{"LEAF load", leafFIFO, func() error { _, err := LoadLEAF(leaf, FileOptions{}); return err }},
		{"LEAF census", leafFIFO, func() error { _, err := CountLEAF(leaf, FileOptions{}); return err }},
		{"JSONL", jsonl, func() error { _, err := ReadTextByUser(jsonl); return err }},
		{"changelogs", gz, func() error { _, err := ReadDebianChangelogs(gz); return err }},
		{"MNIST", mnist, func() error { _, _, err := LoadMNIST(mnist); return err }},
		{"device", "/dev/zero", func() error { _, err := ReadTextByUser("/dev/zero"); return err }},
	}
	for _, c := range cases {
		err := withTimeout(t, c.name, 5*time.Second, c.load)
		if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), "is not a regular file") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line saying %s is not a regular file", c.name, err, c.path)
		}
	}
}

// TestLEAFTrailingData: a LEAF file holds one JSON object: trailing
// garbage or a second object is refused, naming the file; white space after
// the object is not.
func TestLEAFTrailingData(t *testing.T) {
	px := "[" + strings.Repeat("1.0,", 783) + "0.5]"
	obj := `{"users": ["a"], "num_samples": [1], "user_data": {"a": {"x": [` + px + `], "y": [3]}}}`
	for _, c := range []struct {
		tail string
		ok   bool
	}{
		{"\n\t \n", true},
		{"garbage", false},
		{"\n" + obj, false},
		{"}", false},
		{" 1", false},
		{`"s"`, false},
	} {
		dir, _ := femnistData(t, 2)
		p := filepath.Join(dir, "train", "all_data_1_niid_0_keep_0_train_9.json")
		if err := os.WriteFile(p, []byte(obj+c.tail), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadLEAF(dir, FileOptions{})
		_, cerr := CountLEAF(dir, FileOptions{})
		for _, e := range []error{err, cerr} {
			if c.ok && e != nil {
				t.Errorf("tail %q: %v", c.tail, e)
			}
			if !c.ok && (e == nil || !strings.Contains(e.Error(), p) || !strings.Contains(e.Error(), "data after the JSON object")) {
				t.Errorf("tail %q: %v; want an error naming %s and the data after the object", c.tail, e, p)
			}
		}
	}
}

// TestReadIDXClaimedSize: an IDX header claiming more bytes than the stream
// holds is refused as truncated without first allocating the size claimed.
func TestReadIDXClaimedSize(t *testing.T) {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 8, 3})
	binary.Write(&b, binary.BigEndian, []uint32{1 << 21, 32, 32}) // 2 GiB
	b.Write(make([]byte, 1000))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, _, err := ReadIDX(&b, 3)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "IDX body truncated") {
		t.Fatalf("%v, want a truncated body", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
		t.Errorf("allocated %d MB for a 1 kB body", grew>>20)
	}
}
