package datasets

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// sameCohorts checks that the streamed population str serves every
// client of the cohorts the training windows the in-memory mem holds, in
// the same order, fetching each cohort with the next one as prefetch.
func sameCohorts(t *testing.T, mem, str *Federated, cohorts [][]int) {
	t.Helper()
	src := str.Cohorts()
	defer src.Close()
	for r, ids := range cohorts {
		var next []int
		if r+1 < len(cohorts) {
			next = cohorts[r+1]
		}
		if err := src.Fetch(context.Background(), ids, next); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if id >= mem.NumClients() {
				continue // beyond the population (an audit's canaries): skipped
			}
			d, rows := src.Examples(id)
			if src.Len(id) != len(mem.Clients[id]) || len(rows) != len(mem.Clients[id]) {
				t.Fatalf("client %d: %d rows (Len %d), in memory %d", id, len(rows), src.Len(id), len(mem.Clients[id]))
			}
			for k, i := range rows {
				j := mem.Clients[id][k]
				if !slices.Equal(d.Row(i), mem.Train.Row(j)) || d.Y[i] != mem.Train.Y[j] ||
					!slices.Equal(d.Next[i*d.Dim:(i+1)*d.Dim], mem.Train.Next[j*d.Dim:(j+1)*d.Dim]) {
					t.Fatalf("client %d window %d differs: %v -> %v, in memory %v", id, k, d.Row(i), d.Next[i*d.Dim:(i+1)*d.Dim], mem.Train.Row(j))
				}
			}
		}
	}
}

// sameFixed checks what a streamed population holds as the in-memory one
// does: clients, vocabulary, test set, shape, majority baseline.
func sameFixed(t *testing.T, mem, str *Federated) {
	t.Helper()
	if !str.Streamed() || mem.Streamed() || str.Train.Len() != 0 || str.Clients != nil {
		t.Fatalf("streamed %v (%d training rows held), in memory %v", str.Streamed(), str.Train.Len(), mem.Streamed())
	}
	if str.NumClients() != mem.NumClients() || !slices.Equal(str.Users, mem.Users) || !reflect.DeepEqual(str.Vocab, mem.Vocab) ||
		!reflect.DeepEqual(str.Test, mem.Test) || !reflect.DeepEqual(str.ClientTest, mem.ClientTest) ||
		str.Train.Dim != mem.Train.Dim || str.Train.Classes != mem.Train.Classes || str.Name != mem.Name {
		t.Fatalf("streamed population differs: %d clients %v, in memory %d %v", str.NumClients(), str.Users, mem.NumClients(), mem.Users)
	}
	ma, mok := mem.MajorityAccuracy()
	sa, sok := str.MajorityAccuracy()
	if ma != sa || mok != sok {
		t.Fatalf("majority accuracy %v %v streamed, %v %v in memory", sa, sok, ma, mok)
	}
}

// TestStreamMatchesMemory: a file whose rows interleave clients and splits
// (and hold a document without a token, a heldout split and an ineligible
// client) gives, streamed, the population read into memory: the same
// clients, vocabulary and test set, and each cohort's clients the same
// training windows in the same order; also for a random subset of clients
// and for character-level text.
func TestStreamMatchesMemory(t *testing.T) {
	so := func(s string) []byte {
		return appendExample(nil, []string{"title", "tokens"}, []any{[]string{"t"}, []string{s}})
	}
	r := rand.New(rand.NewPCG(5, 9))
	path := writeTFF(t, func(add func(split, client string, proto []byte)) {
		for row := range 600 {
			u := fmt.Sprintf("u%03d", r.IntN(40))
			split := []string{"train", "train", "train", "test", "heldout"}[r.IntN(5)]
			words := make([]string, r.IntN(14))
			for i := range words {
				words[i] = fmt.Sprintf("w%d", min(r.IntN(30), r.IntN(30)))
			}
			if row%97 == 0 {
				words = []string{"!!", "--"} // no token
			}
			add(split, u, so(strings.Join(words, " ")))
		}
		add("train", "lonely", so("few words"))
	})
	for _, opt := range []FileOptions{
		{Text: TextOptions{Vocab: 12, SeqLen: 5, MinTokens: 20}},
		{Text: TextOptions{Vocab: 50, SeqLen: 3, MinTokens: 1}, Clients: 17},
	} {
		opt.Subset = rand.New(rand.NewPCG(1, 2))
		mem, err := LoadTFF(path, TFFStackOverflow, opt)
		if err != nil {
			t.Fatal(err)
		}
		opt.Subset, opt.Stream = rand.New(rand.NewPCG(1, 2)), StreamAlways
		str, err := LoadTFF(path, TFFStackOverflow, opt)
		if err != nil {
			t.Fatal(err)
		}
		sameFixed(t, mem, str)
		n := mem.NumClients()
		cohorts := [][]int{{0, 1, 2}, {n - 1, 3, 0, 3}, {n - 1, 3}, {n + 2, 5}, {}, {2, 4}}
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		sameCohorts(t, mem, str, append(cohorts, all, []int{1}))
	}

	sh := writeTFF(t, func(add func(split, client string, proto []byte)) {
		sn := func(s string) []byte { return appendExample(nil, []string{"snippets"}, []any{[]string{s}}) }
		for k := range 30 {
			role := fmt.Sprintf("ROLE_%d", k%4)
			split := "train"
			if k%5 == 0 {
				split = "test"
			}
			add(split, role, sn(fmt.Sprintf("Speak line %d, %s; O, were that all!", k, role)))
		}
	})
	opt := FileOptions{Text: TextOptions{SeqLen: 8, MinTokens: 5}}
	mem, err := LoadTFF(sh, TFFShakespeare, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Stream = StreamAlways
	str, err := LoadTFF(sh, TFFShakespeare, opt)
	if err != nil {
		t.Fatal(err)
	}
	sameFixed(t, mem, str)
	sameCohorts(t, mem, str, [][]int{{3, 1}, {0, 2}, {1}})
}

// synthetic writes a small generated file.
func synthetic(t *testing.T, s SyntheticText) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "synth.sqlite")
	if _, err := WriteSyntheticTFF(context.Background(), path, s); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStreamBoundedMemory: a population of 3,000 clients streamed holds no
// training example after loading, and a cohort of 10 holds only those 10
// clients' windows (the current cohort, and the next one read meanwhile);
// its heap is a fraction of the population read into memory.
func TestStreamBoundedMemory(t *testing.T) {
	path := synthetic(t, SyntheticText{Users: 3000, Sentences: 12, Words: 10, Vocab: 500, TestEvery: 50, Seed: 1})
	opt := FileOptions{Text: TextOptions{Vocab: 100, SeqLen: 10, MinTokens: 1}}
	heap := func(load func() *Federated) (*Federated, uint64) {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f := load()
		runtime.GC()
		runtime.ReadMemStats(&after)
		return f, after.HeapAlloc - min(before.HeapAlloc, after.HeapAlloc)
	}
	load := func(o FileOptions) func() *Federated {
		return func() *Federated {
			f, err := LoadTFF(path, TFFStackOverflow, o)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	mem, memHeap := heap(load(opt))
	opt.Stream = StreamAlways
	str, strHeap := heap(load(opt))
	sameFixed(t, mem, str)
	if str.NumClients() != 3000 || mem.Train.Len() < 30000 {
		t.Fatalf("%d clients, %d windows in memory", str.NumClients(), mem.Train.Len())
	}
	if strHeap*4 > memHeap {
		t.Fatalf("streamed population holds %d heap bytes, in memory %d: want under a quarter", strHeap, memHeap)
	}
	runtime.KeepAlive(mem)
	s := str.stream
	cohort, next := []int{7, 2999, 150, 3, 1000, 42, 8, 9, 2500, 11}, []int{12, 13, 14}
	if err := s.Fetch(context.Background(), cohort, next); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, id := range cohort {
		want += len(mem.Clients[id])
	}
	if s.cur.d.Len() != want || len(s.cur.rows) != len(cohort) || s.pre == nil {
		t.Fatalf("cohort of 10 holds %d windows of %d clients (want %d), prefetch %v", s.cur.d.Len(), len(s.cur.rows), want, s.pre != nil)
	}
	if err := s.Fetch(context.Background(), next, nil); err != nil {
		t.Fatal(err)
	}
	if len(s.cur.rows) != len(next) || s.pre != nil {
		t.Fatalf("after the next cohort: %d clients held, prefetch %v", len(s.cur.rows), s.pre != nil)
	}
	sameCohorts(t, mem, str, [][]int{cohort, next})
}

// TestStreamErrors: one-line errors naming the file for a client missing
// from the file since it was loaded, a truncated file, a file without the
// index streaming reads by, and bad stream choices.
func TestStreamErrors(t *testing.T) {
	path := synthetic(t, SyntheticText{Users: 40, Sentences: 30, Words: 8, Vocab: 200, Seed: 2})
	opt := FileOptions{Text: TextOptions{MinTokens: 1}, Stream: StreamAlways}
	load := func(p string) *Federated {
		f, err := LoadTFF(p, TFFStackOverflow, opt)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	exec := func(p string, q ...string) {
		db, err := sql.Open("sqlite", p)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, s := range q {
			if _, err := db.Exec(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	oneLine := func(what string, err error, want ...string) {
		t.Helper()
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: %v, want a one-line error", what, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%s: %v, want it to say %q", what, err, w)
			}
		}
	}
	copyOf := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "copy.sqlite")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	p := copyOf()
	f := load(p)
	exec(p, "DELETE FROM examples WHERE client_id = '00000007'")
	err := f.Cohorts().Fetch(context.Background(), []int{3, 7}, nil)
	oneLine("client deleted", err, p, `client "00000007"`, "no example in split train", "changed since")
	exec(p, "DELETE FROM examples WHERE client_id = '00000005' AND rowid IN (SELECT max(rowid) FROM examples WHERE client_id = '00000005' AND split_name = 'train')")
	err = f.Cohorts().Fetch(context.Background(), []int{5}, nil)
	oneLine("client shortened", err, p, `client "00000005"`, "changed since")
	f.Close()

	p = copyOf()
	f = load(p)
	st, _ := os.Stat(p)
	if err := os.Truncate(p, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	err = f.Cohorts().Fetch(context.Background(), []int{0, 10, 20, 30, 39}, nil)
	oneLine("truncated after loading", err, p)
	f.Close()
	_, err = LoadTFF(p, TFFStackOverflow, opt)
	oneLine("truncated", err, p)

	p = copyOf()
	exec(p, "DROP INDEX idx_examples_client_id", "DROP INDEX idx_examples_client_id_split")
	_, err = LoadTFF(p, TFFStackOverflow, opt)
	oneLine("no index", err, p, "no index on client_id", "stream never")
	o := opt
	o.Stream = ""
	if f, err := LoadTFF(p, TFFStackOverflow, o); err != nil || f.Streamed() {
		t.Fatalf("auto on a small file without the index: streamed %v, %v", f != nil && f.Streamed(), err)
	}
	o.Stream = "sometimes"
	_, err = LoadTFF(path, TFFStackOverflow, o)
	oneLine("bad choice", err, `stream "sometimes": want one of auto, always, never`)
	em := writeTFF(t, func(add func(split, client string, proto []byte)) {
		add("train", "a", emnistProto(0, 0, 1))
		add("test", "a", emnistProto(0, 1, 2))
	})
	_, err = LoadTFF(em, TFFEMNIST, opt)
	oneLine("emnist", err, "only the text files", "not emnist")
}

var (
	synthFile      = flag.String("synth-file", "", "write a StackOverflow-shaped TFF file here (TestWriteSynthetic)")
	synthUsers     = flag.Int("synth-users", 342477, "its users (StackOverflow: 342,477)")
	synthSentences = flag.Int("synth-sentences", 400, "its mean training sentences per user (StackOverflow: about 400)")
)

// TestWriteSynthetic checks the generator on a small file: the users, the
// rows it reports, client_metadata's counts and TFF's indices. With
// -synth-file=PATH it writes a file of -synth-users users of
// -synth-sentences sentences (by default StackOverflow's shape) there,
// sentences of 1-23 words out of 100,000, one test sentence for every 20th
// user.
func TestWriteSynthetic(t *testing.T) {
	s := SyntheticText{Users: 30, Sentences: 10, Words: 12, Vocab: 1000, TestEvery: 3, Seed: 4}
	path := filepath.Join(t.TempDir(), "s.sqlite")
	if *synthFile != "" {
		s.Users, s.Sentences, s.Vocab, s.TestEvery, path = *synthUsers, *synthSentences, 100000, 20, *synthFile
	}
	start := time.Now()
	rows, err := WriteSyntheticTFF(context.Background(), path, s)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	t.Logf("%s: %d users, %d rows, %d bytes in %s", path, s.Users, rows, st.Size(), time.Since(start).Round(time.Second))
	if _, err := WriteSyntheticTFF(context.Background(), path, s); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("overwrote %s: %v", path, err)
	}
	if *synthFile != "" {
		return
	}
	n, err := CountTFF(path, TFFStackOverflow, FileOptions{Text: TextOptions{MinTokens: 1}})
	if err != nil || n != s.Users {
		t.Fatalf("%d users, %v", n, err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var meta, examples, tests, indices int64
	db.QueryRow("SELECT sum(num_examples) FROM client_metadata").Scan(&meta)
	db.QueryRow("SELECT count(*) FROM examples").Scan(&examples)
	db.QueryRow("SELECT count(*) FROM examples WHERE split_name = 'test'").Scan(&tests)
	db.QueryRow("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'examples'").Scan(&indices)
	if meta != rows || examples != rows || tests != 10 || indices != 2 || rows < 10+int64(s.Users) {
		t.Fatalf("rows %d: metadata %d, examples %d, test %d (want 10), indices %d", rows, meta, examples, tests, indices)
	}
}

var synthRead = flag.String("synth-read", "", "stream this StackOverflow-shaped TFF file and time reading cohorts (TestStreamSynthetic)")

// TestStreamSynthetic loads a file given by -synth-read streamed (every
// user with 100 tokens, a vocabulary of 10,000) and reads 3 cohorts of
// 1,000 random clients as a run does (each with the next prefetched),
// logging the wall and CPU time of each step and the heap held.
func TestStreamSynthetic(t *testing.T) {
	if *synthRead == "" {
		t.Skip("reads a file only with -synth-read=PATH")
	}
	heap := func() float64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc) / 1e9
	}
	start, c0 := time.Now(), cpu()
	f, err := LoadTFF(*synthRead, TFFStackOverflow, FileOptions{Text: TextOptions{Vocab: 10000}, Stream: StreamAlways})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Logf("load: %d clients, %d test windows, %s wall, %s CPU, heap %.2f GB", f.NumClients(), f.Test.Len(),
		time.Since(start).Round(time.Millisecond), (cpu() - c0).Round(time.Millisecond), heap())
	r := rand.New(rand.NewPCG(1, 1))
	cohorts := make([][]int, 4)
	for i := range cohorts {
		cohorts[i] = r.Perm(f.NumClients())[:1000]
	}
	src := f.Cohorts()
	for i := range 3 {
		start, c0 := time.Now(), cpu()
		if err := src.Fetch(context.Background(), cohorts[i], cohorts[i+1]); err != nil {
			t.Fatal(err)
		}
		wait := time.Since(start)
		windows := 0
		for _, id := range cohorts[i] {
			_, rows := src.Examples(id)
			windows += len(rows)
		}
		f.stream.mu.Lock()
		<-f.stream.pre.done // the prefetch: what a round's reading costs
		f.stream.mu.Unlock()
		t.Logf("round %d: %d windows; waited %s, read of the next cohort done after %s wall, %s CPU; heap %.2f GB", i+1, windows,
			wait.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), (cpu() - c0).Round(time.Millisecond), heap())
	}
}
