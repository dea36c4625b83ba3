package datasets

import (
	"compress/gzip"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestTokenizeGolden(t *testing.T) {
	for in, want := range map[string][]string{
		"Hello, World!": {"hello", "world"},
		"  * New upstream release (Closes: #12345).": {"new", "upstream", "release", "closes", "12345"},
		"don't stop; it's 'quoted' rock'n'roll":      {"don't", "stop", "it's", "quoted", "rock'n'roll"},
		"Fix CVE-2024-1234 in libfoo2.0":             {"fix", "cve", "2024", "1234", "in", "libfoo2", "0"},
		"Ünïcödé ÉCOLE naïve":                        {"ünïcödé", "école", "naïve"},
		"l’été d'":                                   {"l'été", "d"},
		"--- ... ***":                                nil,
	} {
		if got := Tokenize(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Tokenize(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestVocabGolden: most frequent first, ties by byte order, cut at size;
// ids after the four special tokens; unknown words map to OOV.
func TestVocabGolden(t *testing.T) {
	docs := [][]string{{"b", "a", "c", "a"}, {"d", "c", "b", "e"}, {"a"}}
	// counts: a 3, b 2, c 2, d 1, e 1
	v := BuildVocab(docs, 4)
	if want := []string{"a", "b", "c", "d"}; !reflect.DeepEqual(v.Words, want) {
		t.Fatalf("vocabulary %q, want %q", v.Words, want)
	}
	if v.Size() != 8 || v.ID("a") != 4 || v.ID("d") != 7 || v.ID("e") != OOVID || v.ID("zzz") != OOVID {
		t.Fatalf("size %d ids a=%d d=%d e=%d", v.Size(), v.ID("a"), v.ID("d"), v.ID("e"))
	}
	if v.Token(5) != "b" || v.Token(EOSID) != "<eos>" {
		t.Fatalf("tokens %q %q", v.Token(5), v.Token(EOSID))
	}
}

// TestEncodeGolden: BOS + tokens + EOS cut into windows of 3, targets
// shifted by one, padding with 0.
func TestEncodeGolden(t *testing.T) {
	v := BuildVocab([][]string{{"a", "b", "a"}}, 10) // a=4, b=5
	x, next := v.Encode(nil, nil, []string{"a", "b", "zz", "a"}, 3)
	// stream: BOS a b OOV a EOS = 2 4 5 1 4 3
	wantX := []int32{2, 4, 5, 1, 4, 0}
	wantN := []int32{4, 5, 1, 4, 3, 0}
	if !slices.Equal(x, wantX) || !slices.Equal(next, wantN) {
		t.Fatalf("x %v next %v, want %v %v", x, next, wantX, wantN)
	}
	// Exactly fitting stream: BOS a EOS with seqLen 2 is one window.
	x, next = v.Encode(nil, nil, []string{"a"}, 2)
	if !slices.Equal(x, []int32{2, 4}) || !slices.Equal(next, []int32{4, 3}) {
		t.Fatalf("x %v next %v", x, next)
	}
}

const changelogFixture = `foo (1.2-1) unstable; urgency=medium

  * New upstream release.
  * Fix the frobnicator.

 -- Alice Example <Alice@Example.org>  Mon, 01 Jan 2024 10:00:00 +0000

foo (1.1-1) unstable; urgency=low

  * Initial release (Closes: #1).

 -- Bob <bob@example.net>  Sun, 01 Jan 2023 10:00:00 +0000

foo (1.0-1) unstable; urgency=low

  * Entry without signature is dropped.

Local variables:
mode: debian-changelog
End:
`

func TestParseChangelog(t *testing.T) {
	docs, err := ParseChangelog(strings.NewReader(changelogFixture))
	if err != nil {
		t.Fatal(err)
	}
	want := []Document{
		{User: "alice@example.org", Text: "* New upstream release.\n  * Fix the frobnicator."},
		{User: "bob@example.net", Text: "* Initial release (Closes: #1)."},
	}
	if !reflect.DeepEqual(docs, want) {
		t.Fatalf("got %q\nwant %q", docs, want)
	}
}

func writeGz(t *testing.T, path, s string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	zw.Write([]byte(s))
	zw.Close()
	f.Close()
}

// textFixture makes users whose documents are generated word lists (unit
// tests only). User u has 2+u documents of 30 words each; the word "secret"
// appears only in documents listed in secretDocs.
func textFixture(users int) []Document {
	r := rand.New(rand.NewPCG(11, 12))
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
	var out []Document
	for u := 0; u < users; u++ {
		for d := 0; d < 2+u; d++ {
			var b strings.Builder
			for k := 0; k < 30; k++ {
				b.WriteString(words[r.IntN(len(words))] + " ")
			}
			out = append(out, Document{User: string(rune('a' + u)), Text: b.String()})
		}
	}
	return out
}

// TestNewTextFederated: duplicates removed, users below the token threshold
// dropped, each user's held-out documents only in its test part, the
// vocabulary built from training documents only, deterministic for a seed.
func TestNewTextFederated(t *testing.T) {
	docs := textFixture(5)                                                       // users a..e with 2..6 documents of 30 tokens
	docs = append(docs, docs[3], Document{User: "z", Text: docs[0].Text + "  "}) // duplicates (by normalized text)
	docs = append(docs, Document{User: "tiny", Text: "one two three"}, Document{User: "tiny", Text: "four"})
	opt := TextOptions{Vocab: 5, SeqLen: 8, MinTokens: 30, TestFraction: 0.5}
	f, err := NewTextFederated("t", docs, opt, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c", "d", "e"}; !reflect.DeepEqual(f.Users, want) {
		t.Fatalf("users %q, want %q (z only has a duplicate, tiny is below 30 tokens)", f.Users, want)
	}
	// User a keeps one 30-token training document: a threshold of 31 drops it.
	opt31 := opt
	opt31.MinTokens = 31
	if h, err := NewTextFederated("t", docs, opt31, rand.New(rand.NewPCG(1, 1))); err != nil || h.Users[0] != "b" {
		t.Fatalf("threshold 31: %v, %v", h.Users, err)
	}
	if f.Train.Classes != 5+NumSpecial || f.Train.Dim != 8 {
		t.Fatalf("classes %d dim %d", f.Train.Classes, f.Train.Dim)
	}
	// User with n documents holds out floor(n/2); each 30-token document is
	// 32 stream tokens -> 31 targets -> ceil(31/8) = 4 windows.
	for c := range f.Clients {
		n := 2 + c
		if len(f.ClientTest[c]) != 4*(n/2) || len(f.Clients[c]) != 4*(n-n/2) {
			t.Errorf("client %d: %d train / %d test windows, want %d / %d", c, len(f.Clients[c]), len(f.ClientTest[c]), 4*(n-n/2), 4*(n/2))
		}
	}
	// Six words, vocabulary of five: exactly one word is OOV, and only in
	// the counts of the training split.
	if f.Vocab == nil || len(f.Vocab.Words) != 5 {
		t.Fatalf("vocabulary %v", f.Vocab)
	}
	if c := TokenCoverage(f.Train); !(c > 0.7 && c < 1) {
		t.Fatalf("training coverage %v, want in (0.7, 1) with one of six words OOV", c)
	}
	g, err := NewTextFederated("t", docs, opt, rand.New(rand.NewPCG(1, 1)))
	if err != nil || !reflect.DeepEqual(f.Train.Next, g.Train.Next) || !reflect.DeepEqual(f.Vocab.Words, g.Vocab.Words) {
		t.Fatal("same seed, different populations")
	}
}

// TestVocabFromTrainingOnly: a word frequent in held-out documents but absent
// from training documents never enters the vocabulary.
func TestVocabFromTrainingOnly(t *testing.T) {
	var docs []Document
	for u := 0; u < 3; u++ {
		user := string(rune('a' + u))
		docs = append(docs,
			Document{User: user, Text: strings.Repeat("common ", 20) + user},
			Document{User: user, Text: strings.Repeat("heldout ", 50) + user + "x"})
	}
	// TestFraction 0.5 holds out one of each user's two documents; with a
	// seed where it is the "heldout" one for every user, the word must be
	// OOV. Find such a seed rather than assume one.
	for seed := uint64(0); seed < 200; seed++ {
		f, err := NewTextFederated("t", docs, TextOptions{Vocab: 50, MinTokens: 1, TestFraction: 0.5}, rand.New(rand.NewPCG(seed, 0)))
		if err != nil {
			t.Fatal(err)
		}
		inTrain := false
		for c := range f.Clients {
			for _, i := range f.Clients[c] {
				for k := 0; k < f.Train.Dim; k++ {
					if f.Train.Next[i*f.Train.Dim+k] == OOVID {
						t.Fatalf("seed %d: OOV in training data although the vocabulary holds every training word", seed)
					}
				}
			}
		}
		for _, w := range f.Vocab.Words {
			inTrain = inTrain || w == "heldout"
		}
		heldEverywhere := true
		for c := range f.Clients {
			// The "common" document (21 tokens: 22 targets) is 2 windows of
			// 20; the "heldout" one (51 tokens: 52 targets) is 3.
			if len(f.Clients[c]) != 2 {
				heldEverywhere = false
			}
		}
		if heldEverywhere && inTrain {
			t.Fatalf("seed %d: held-out word in the vocabulary %q", seed, f.Vocab.Words)
		}
		if heldEverywhere {
			if TokenCoverage(f.Test) > 0.1 {
				t.Fatalf("held-out coverage %v: held-out word should be OOV", TokenCoverage(f.Test))
			}
			return
		}
	}
	t.Fatal("no seed held out the 'heldout' document of every user")
}

func TestReadTextByUser(t *testing.T) {
	dir := t.TempDir()
	jl := filepath.Join(dir, "c.jsonl")
	os.WriteFile(jl, []byte(`{"user": "u1", "text": "Hello there"}`+"\n\n"+`{"user": "u2", "text": "Bye", "extra": 1}`+"\n"), 0o644)
	docs, err := ReadTextByUser(jl)
	if err != nil || !reflect.DeepEqual(docs, []Document{{"u1", "Hello there"}, {"u2", "Bye"}}) {
		t.Fatalf("jsonl: %q %v", docs, err)
	}
	os.WriteFile(jl, []byte(`{"user": "u1"}`+"\n"), 0o644)
	if _, err := ReadTextByUser(jl); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("record without text: %v", err)
	}
	tree := filepath.Join(dir, "tree")
	os.MkdirAll(filepath.Join(tree, "bob", "sub"), 0o755)
	os.WriteFile(filepath.Join(tree, "alice.txt"), []byte("a1"), 0o644)
	os.WriteFile(filepath.Join(tree, "bob", "x.txt"), []byte("b1"), 0o644)
	os.WriteFile(filepath.Join(tree, "bob", "sub", "y.md"), []byte("b2"), 0o644)
	docs, err = ReadTextByUser(tree)
	want := []Document{{"alice", "a1"}, {"bob", "b2"}, {"bob", "b1"}}
	if err != nil || !reflect.DeepEqual(docs, want) {
		t.Fatalf("tree: %q %v, want %q", docs, err, want)
	}
}

func TestReadDebianChangelogsFixture(t *testing.T) {
	dir := t.TempDir()
	writeGz(t, filepath.Join(dir, "foo", "changelog.Debian.gz"), changelogFixture)
	writeGz(t, filepath.Join(dir, "bar", "changelog.Debian.gz"), changelogFixture)
	docs, err := ReadDebianChangelogs(filepath.Join(dir, "*", "changelog.Debian.gz"))
	if err != nil || len(docs) != 4 {
		t.Fatalf("%d documents, %v", len(docs), err)
	}
	if _, err := ReadDebianChangelogs(filepath.Join(dir, "none", "*.gz")); err == nil {
		t.Fatal("empty glob accepted")
	}
}

// TestDebianChangelogsReal builds the population from this machine's
// changelogs (skipped where there are none) and checks it is deterministic
// and that de-duplication removed the shared entries.
func TestDebianChangelogsReal(t *testing.T) {
	docs, err := ReadDebianChangelogs("")
	if err != nil {
		t.Skipf("no Debian changelogs here: %v", err)
	}
	f, err := NewTextFederated("debian", docs, TextOptions{}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	g, _ := NewTextFederated("debian", docs, TextOptions{}, rand.New(rand.NewPCG(1, 2)))
	if !reflect.DeepEqual(f.Users, g.Users) || !slices.Equal(f.Train.Next, g.Train.Next) {
		t.Fatal("not deterministic")
	}
	t.Logf("%d entries -> %d clients, %d train / %d test windows, vocabulary %d, coverage train %.3f test %.3f",
		len(docs), f.NumClients(), f.Train.Len(), f.Test.Len(), f.Vocab.Size(), TokenCoverage(f.Train), TokenCoverage(f.Test))
}

// TestSequenceBatch: Fill and Subset carry next-token targets; padding rows
// get PadID targets.
func TestSequenceBatch(t *testing.T) {
	d := &Dataset{X: []float32{2, 4, 2, 5}, Next: []int32{4, 3, 5, 3}, Y: []int32{0, 0}, Dim: 2, Classes: 6}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	b := NewBatch(3, 2)
	b.Fill(d, []int{1})
	if !slices.Equal(b.Next, []int32{5, 3, 0, 0, 0, 0}) || !slices.Equal(b.X, []float32{2, 5, 0, 0, 0, 0}) {
		t.Fatalf("batch %v %v", b.X, b.Next)
	}
	s := d.Subset([]int{1, 0})
	if !slices.Equal(s.Next, []int32{5, 3, 4, 3}) {
		t.Fatalf("subset %v", s.Next)
	}
	d.Next[0] = 6
	if d.Validate() == nil {
		t.Fatal("target outside the vocabulary accepted")
	}
	d.Next[0], d.X[1] = 4, 2.5
	if d.Validate() == nil {
		t.Fatal("non-integer token accepted")
	}
}
