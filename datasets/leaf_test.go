package datasets

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// leafJSON is one LEAF JSON file's content.
type leafJSON struct {
	Users       []string                  `json:"users"`
	NumSamples  []int                     `json:"num_samples"`
	Hierarchies []string                  `json:"hierarchies,omitempty"`
	UserData    map[string]map[string]any `json:"user_data"`
}

// writeLEAF writes dir/split/name.json with the users' x and y.
func writeLEAF(t testing.TB, dir, split, name string, users []string, xs, ys [][]any) {
	t.Helper()
	f := leafJSON{Users: users, UserData: map[string]map[string]any{}}
	for i, u := range users {
		f.NumSamples = append(f.NumSamples, len(xs[i]))
		f.Hierarchies = append(f.Hierarchies, "h"+u)
		f.UserData[u] = map[string]any{"x": xs[i], "y": ys[i]}
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, split), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, split, name+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// femnistData writes a FEMNIST-shaped folder: writer w (of n) has 3+w
// training images, pixel 0 = w, pixel 1 = example number, label
// (5w+k) mod 62, and 1 test image; writers are spread over two train files.
func femnistData(t testing.TB, n int) (dir string, label func(w, k int) int) {
	dir = t.TempDir()
	label = func(w, k int) int { return (5*w + k) % 62 }
	img := func(w, k int) []float32 {
		px := make([]float32, 784)
		for i := range px {
			px[i] = 1
		}
		px[0], px[1] = float32(w), float32(k)
		return px
	}
	var users [2][]string
	var xs, ys [2][][]any
	var tu []string
	var tx, ty [][]any
	for w := n - 1; w >= 0; w-- {
		u := fmt.Sprintf("f%04d_%02d", w, w%7)
		var x, y []any
		for k := 0; k < 3+w; k++ {
			x, y = append(x, img(w, k)), append(y, label(w, k))
		}
		users[w%2] = append(users[w%2], u)
		xs[w%2], ys[w%2] = append(xs[w%2], x), append(ys[w%2], y)
		tu, tx, ty = append(tu, u), append(tx, []any{img(w, 100)}), append(ty, []any{label(w, 0)})
	}
	writeLEAF(t, dir, "train", "all_data_0_niid_0_keep_0_train_9", users[0], xs[0], ys[0])
	writeLEAF(t, dir, "train", "all_data_1_niid_0_keep_0_train_9", users[1], xs[1], ys[1])
	writeLEAF(t, dir, "test", "all_data_0_niid_0_keep_0_test_9", tu, tx, ty)
	return dir, label
}

// TestLEAFFEMNIST: clients, shapes, labels and splits; digits only; a
// subset.
func TestLEAFFEMNIST(t *testing.T) {
	dir, label := femnistData(t, 5)
	if k, err := LEAFKind(dir); err != nil || k != LEAFFEMNIST {
		t.Fatalf("kind %q, %v", k, err)
	}
	f, err := LoadLEAF(dir, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.NumClients() != 5 || f.Train.Len() != 3+4+5+6+7 || f.Test.Len() != 5 || f.Train.Dim != 784 || f.Train.Classes != 62 || f.Name != "leaf-femnist" {
		t.Fatalf("%s: %d clients, %d/%d examples, dim %d, %d classes", f.Name, f.NumClients(), f.Train.Len(), f.Test.Len(), f.Train.Dim, f.Train.Classes)
	}
	for c, u := range f.Users {
		if want := fmt.Sprintf("f%04d_%02d", c, c%7); u != want {
			t.Fatalf("client %d is %s, want %s", c, u, want)
		}
		if len(f.Clients[c]) != 3+c || len(f.ClientTest[c]) != 1 {
			t.Fatalf("client %d: %d train, %d test", c, len(f.Clients[c]), len(f.ClientTest[c]))
		}
		for k, i := range f.Clients[c] {
			row := f.Train.Row(i)
			if row[0] != float32(c) || row[1] != float32(k) || row[2] != 1 || f.Train.Y[i] != int32(label(c, k)) {
				t.Fatalf("client %d example %d: %v label %d", c, k, row[:3], f.Train.Y[i])
			}
		}
		if i := f.ClientTest[c][0]; f.Test.Row(i)[0] != float32(c) || f.Test.Row(i)[1] != 100 || f.Test.Y[i] != int32(label(c, 0)) {
			t.Fatalf("client %d test example %v", c, f.Test.Row(i)[:2])
		}
	}
	if n, err := CountLEAF(dir, FileOptions{}); err != nil || n != 5 {
		t.Fatalf("CountLEAF %d, %v", n, err)
	}
	d, err := LoadLEAF(dir, FileOptions{DigitsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	digits := 0
	for w := 0; w < 5; w++ {
		for k := 0; k < 3+w; k++ {
			if label(w, k) < 10 {
				digits++
			}
		}
	}
	// Writers 0 and 1 have digits (labels 0-2, 5-8); 2-4 (10-18) none.
	if d.Train.Classes != 10 || d.NumClients() != 2 || d.Train.Len() != digits {
		t.Fatalf("digits only: %d classes, %d clients, %d examples (want %d)", d.Train.Classes, d.NumClients(), d.Train.Len(), digits)
	}
	s, err := LoadLEAF(dir, FileOptions{Clients: 3, Subset: rand.New(rand.NewPCG(3, 4))})
	if err != nil {
		t.Fatal(err)
	}
	if s.NumClients() != 3 || !slices.IsSorted(s.Users) || s.Test.Len() != 3 {
		t.Fatalf("subset: %v, %d test", s.Users, s.Test.Len())
	}
	for c, u := range s.Users {
		var w int
		fmt.Sscanf(u, "f%04d", &w)
		if len(s.Clients[c]) != 3+w {
			t.Fatalf("subset client %s has %d examples", u, len(s.Clients[c]))
		}
	}
}

// TestLEAFShakespeare: LEAF's 80-character windows become sequences whose
// targets are the next character at every position (x[1:] then y).
func TestLEAFShakespeare(t *testing.T) {
	dir := t.TempDir()
	text := "To be, or not to be, that is the question: Whether 'tis nobler in the mind to suffer The slings and arrows"
	win := func(s string, i int) (string, string) { return s[i : i+80], s[i+80 : i+81] }
	var xs, ys []any
	for i := 0; i+81 <= len(text); i += 7 {
		x, y := win(text, i)
		xs, ys = append(xs, x), append(ys, y)
	}
	other := strings.Repeat("Now is the winter of our discontent. ", 4)
	ox, oy := win(other, 0)
	writeLEAF(t, dir, "train", "train", []string{"HAMLET_HAMLET", "RICHARD_III_GLOUCESTER"}, [][]any{xs, {ox}}, [][]any{ys, {oy}})
	tx, ty := win(other, 3)
	writeLEAF(t, dir, "test", "test", []string{"RICHARD_III_GLOUCESTER", "HAMLET_HAMLET"}, [][]any{{tx}, {xs[0]}}, [][]any{{ty}, {ys[0]}})
	f, err := LoadLEAF(dir, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "leaf-shakespeare" || f.NumClients() != 2 || f.Train.Dim != 80 || f.Train.Len() != len(xs)+1 || f.Test.Len() != 2 {
		t.Fatalf("%s: %d clients, dim %d, %d/%d examples", f.Name, f.NumClients(), f.Train.Dim, f.Train.Len(), f.Test.Len())
	}
	for k, i := range f.Clients[0] { // HAMLET_HAMLET
		x, y := xs[k].(string), ys[k].(string)
		for p := 0; p < 80; p++ {
			want := y
			if p < 79 {
				want = x[p+1 : p+2]
			}
			if f.Vocab.Token(int32(f.Train.X[i*80+p])) != x[p:p+1] || f.Vocab.Token(f.Train.Next[i*80+p]) != want {
				t.Fatalf("example %d position %d: %q -> %q, want %q -> %q", k, p,
					f.Vocab.Token(int32(f.Train.X[i*80+p])), f.Vocab.Token(f.Train.Next[i*80+p]), x[p:p+1], want)
			}
		}
	}
	if f.Vocab.ID("T") == f.Vocab.ID("t") || f.Vocab.ID(":") == OOVID {
		t.Fatalf("characters: T %d t %d", f.Vocab.ID("T"), f.Vocab.ID("t"))
	}
	if _, err := LoadLEAF(dir, FileOptions{DigitsOnly: true}); err == nil || !strings.Contains(err.Error(), "only FEMNIST has digits") {
		t.Fatalf("digits only on Shakespeare: %v", err)
	}
}

// TestLEAFErrors: a missing folder, a malformed or inconsistent file: an
// error naming the file and what is wrong.
func TestLEAFErrors(t *testing.T) {
	dir, _ := femnistData(t, 2)
	os.RemoveAll(filepath.Join(dir, "test"))
	if _, err := LoadLEAF(dir, FileOptions{}); err == nil || !strings.Contains(err.Error(), "no test/ folder") {
		t.Errorf("no test folder: %v", err)
	}
	write := func(content string) (string, string) {
		dir, _ := femnistData(t, 2)
		p := filepath.Join(dir, "train", "all_data_1_niid_0_keep_0_train_9.json")
		os.WriteFile(p, []byte(content), 0o644)
		return dir, p
	}
	px := "[" + strings.Repeat("1.0,", 783) + "0.5]"
	for _, c := range []struct{ content, want string }{
		{`{"users": ["a"], "num_samples": [1], "user_data": {"a": {"x": [` + px + `], "y": [3]}`, "the file ends early"},
		{`{"users": ["a"], "num_samples": [2], "user_data": {"a": {"x": [` + px + `], "y": [3]}}}`, `num_samples does not match user_data for user "a"`},
		{`{"users": ["a", "b"], "num_samples": [1, 1], "user_data": {"a": {"x": [` + px + `], "y": [3]}}}`, "users lists 2 users, user_data has 1"},
		{`{"users": ["a"], "user_data": {"a": {"x": [` + px + `], "y": [3, 4]}}}`, `user "a": 1 x but 2 y`},
		{`{"users": ["a"], "user_data": {"a": {"x": [[0.5, 1.0]], "y": [3]}}}`, "x has 2 values, want 28×28 = 784"},
		{`{"users": ["a"], "user_data": {"a": {"x": [` + px + `], "y": [62]}}}`, "label 62 outside EMNIST's [0, 62)"},
		{`{"users": ["a"], "user_data": {"a": {"x": [` + px + `], "y": ["A"]}}}`, "y: json: cannot unmarshal string"},
		{`{"users": []}`, "no user_data"},
	} {
		dir, p := write(c.content)
		_, err := LoadLEAF(dir, FileOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%.40s...: %v, want an error naming %s and %q", c.content, err, p, c.want)
		}
	}
}

// TestParseFloats: the fast parser of LEAF's pixel lists agrees with
// encoding/json, and refuses what is not a list of numbers.
func TestParseFloats(t *testing.T) {
	for _, in := range []string{"[]", "[ ]", "[1.0]", "[0, 1.0, 0.5372549019607843, 1e-05, -2.5E+3, 3]", " [ 1 ,2 , 3 ] ", "[0.1, 0.30000000000000004, 1.0000001]"} {
		var want []float32
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		got, err := parseFloats(nil, []byte(in))
		if err != nil || !slices.Equal(got, want) || len(got) != len(want) {
			t.Errorf("parseFloats(%q) = %v, %v; encoding/json gives %v", in, got, err, want)
		}
	}
	for _, in := range []string{`["a"]`, "[1, null]", "[[1]]", "{}", "1", "[1,,2]", "[inf]", "[0x10]"} {
		if got, err := parseFloats(nil, []byte(in)); err == nil {
			t.Errorf("parseFloats(%q) = %v, want an error", in, got)
		}
	}
}
