package datasets

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var figureDir = flag.String("figure-files", "",
	"write generated federated files of realistic size into this folder (for the load-time and memory figures)")

// TestGenerateFigureFiles writes generated files in the formats and at the
// sizes of the real datasets, to measure load time and peak memory (only
// when asked: go test ./datasets -run TestGenerateFigureFiles
// -figure-files=DIR -timeout 2h; about 10 GB). Sizes:
//
//   - tff-emnist.sqlite: 3,400 writers, 671,585 training and 77,483 test
//     images of 28×28 floats (TFF's emnist_all: the same counts);
//   - tff-stackoverflow.sqlite: 342,477 training users (TFF's count), 8
//     sentences each, 1 test sentence for every second user, 38,758 heldout
//     users with 4 (the real file has about 400 sentences per user: the
//     census pass grows with the sentences, its memory with the users);
//   - tff-shakespeare.sqlite: 715 roles, 16,068 training and 2,356 test
//     snippets (TFF's counts) of 30-600 characters;
//   - leaf-femnist/: 3,550 writers, 805,263 images split 90/10 per writer
//     (LEAF's full FEMNIST), in files of 100 writers, floats written as
//     Python's json writes them;
//   - leaf-shakespeare/: 1,129 roles, 4,226,158 windows of 80 characters
//     split 90/10 (LEAF's full Shakespeare).
func TestGenerateFigureFiles(t *testing.T) {
	if *figureDir == "" {
		t.Skip("writes the figure files only with -figure-files=DIR")
	}
	dir := *figureDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(20, 1))
	for _, gen := range []struct {
		name string
		fn   func(string, *rand.Rand) error
	}{
		{"tff-emnist.sqlite", genTFFEMNIST},
		{"tff-stackoverflow.sqlite", genTFFStackOverflow},
		{"tff-shakespeare.sqlite", genTFFShakespeare},
		{"leaf-femnist", genLEAFFEMNIST},
		{"leaf-shakespeare", genLEAFShakespeare},
	} {
		path := filepath.Join(dir, gen.name)
		if _, err := os.Stat(path); err == nil {
			t.Logf("%s exists: kept", path)
			continue
		}
		tmp := path + ".tmp"
		os.RemoveAll(tmp)
		if err := gen.fn(tmp, r); err != nil {
			t.Fatalf("%s: %v", gen.name, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
	}
}

// spread returns n positive counts summing to total, each near total/n.
func spread(r *rand.Rand, n, total int) []int {
	out := make([]int, n)
	w := make([]float64, n)
	sum := 0.0
	for i := range w {
		w[i] = 0.2 + r.ExpFloat64()
		sum += w[i]
	}
	left := total
	for i := range out {
		out[i] = max(1, int(float64(total)*w[i]/sum))
		left -= out[i]
	}
	for i := 0; left != 0; i = (i + 1) % n {
		if left > 0 {
			out[i]++
			left--
		} else if out[i] > 1 {
			out[i]--
			left++
		}
	}
	return out
}

// image returns 784 pixels as FEMNIST stores them: mostly 1.0 (white),
// a stroke of darker values.
func image(r *rand.Rand, px []float32) []float32 {
	for i := range px {
		px[i] = 1
		if r.IntN(5) == 0 {
			px[i] = float32(r.IntN(255)) / 255
		}
	}
	return px
}

func genTFFEMNIST(path string, r *rand.Rand) error {
	w, err := newTFFWriter(path)
	if err != nil {
		return err
	}
	const writers = 3400
	train, test := spread(r, writers, 671585), spread(r, writers, 77483)
	px := make([]float32, 784)
	var b []byte
	for i := 0; i < writers; i++ {
		client := fmt.Sprintf("f%04d_%02d", i, r.IntN(100))
		for s, n := range [2]int{train[i], test[i]} {
			for k := 0; k < n; k++ {
				b = appendExample(b[:0], []string{"label", "pixels"}, []any{[]int64{int64(r.IntN(62))}, image(r, px)})
				if err := w.add([]string{"train", "test"}[s], client, b); err != nil {
					return err
				}
			}
		}
	}
	return w.close()
}

// words is a Zipf-distributed vocabulary of made-up words plus the
// punctuation tokens of TFF's StackOverflow.
type words struct {
	z     *rand.Zipf
	r     *rand.Rand
	punct []string
}

func newWords(r *rand.Rand) *words {
	return &words{z: rand.NewZipf(r, 1.1, 2, 99999), r: r, punct: []string{".", ",", "?", "(", ")", "<", ">", "code"}}
}

func (w *words) sentence(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w.r.IntN(8) == 0 {
			b.WriteString(w.punct[w.r.IntN(len(w.punct))])
			continue
		}
		b.WriteString("w")
		b.WriteString(strconv.FormatUint(w.z.Uint64(), 36))
	}
	return b.String()
}

func genTFFStackOverflow(path string, r *rand.Rand) error {
	w, err := newTFFWriter(path)
	if err != nil {
		return err
	}
	ws := newWords(r)
	var b []byte
	add := func(split, client string) error {
		b = appendExample(b[:0], []string{"creation_date", "score", "tags", "title", "tokens", "type"}, []any{
			[]string{"2010-08-10 14:40:12.203 UTC"}, []int64{int64(r.IntN(20))}, []string{"go|sql"},
			[]string{ws.sentence(6)}, []string{ws.sentence(5 + r.IntN(25))}, []string{"answer"}})
		return w.add(split, client, b)
	}
	for i := 0; i < 342477+38758; i++ {
		client := fmt.Sprintf("%08d", 2*i+1)
		if i >= 342477 {
			for k := 0; k < 4; k++ {
				if err := add("heldout", client); err != nil {
					return err
				}
			}
			continue
		}
		for k := 0; k < 8; k++ {
			if err := add("train", client); err != nil {
				return err
			}
		}
		if i%2 == 0 {
			if err := add("test", client); err != nil {
				return err
			}
		}
	}
	return w.close()
}

// play returns n characters of made-up verse.
func play(r *rand.Rand, n int) string {
	const letters = "etaoinshrdlucmfwypvbgkjqxzETAOINSHRDLUCMFWYPVBGKJQXZ     ,.;:!?'-\n"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[min(r.IntN(len(letters)), r.IntN(len(letters)))]
	}
	return string(b)
}

func genTFFShakespeare(path string, r *rand.Rand) error {
	w, err := newTFFWriter(path)
	if err != nil {
		return err
	}
	const roles = 715
	train, test := spread(r, roles, 16068), spread(r, roles, 2356)
	var b []byte
	for i := 0; i < roles; i++ {
		client := fmt.Sprintf("THE_PLAY_%03d_ROLE_%d", i/20, i)
		for s, n := range [2]int{train[i], test[i]} {
			for k := 0; k < n; k++ {
				b = appendExample(b[:0], []string{"snippets"}, []any{[]string{play(r, 30+r.IntN(570))}})
				if err := w.add([]string{"train", "test"}[s], client, b); err != nil {
					return err
				}
			}
		}
	}
	return w.close()
}

// leafFiles writes a LEAF folder: users in files of perFile, each user's
// examples (written by example(w, user, k)) split 90/10.
func writeLEAFFolder(dir string, counts []int, perFile int, user func(i int) string, example func(w *bufio.Writer) (y string)) error {
	for _, split := range []string{"train", "test"} {
		if err := os.MkdirAll(filepath.Join(dir, split), 0o755); err != nil {
			return err
		}
	}
	split := func(n int) int { return max(1, n/10) } // test examples of a user of n
	for lo, file := 0, 0; lo < len(counts); lo, file = lo+perFile, file+1 {
		hi := min(lo+perFile, len(counts))
		for s, name := range []string{"train", "test"} {
			f, err := os.Create(filepath.Join(dir, name, fmt.Sprintf("all_data_%d_niid_0_keep_0_%s_9.json", file, name)))
			if err != nil {
				return err
			}
			w := bufio.NewWriterSize(f, 1<<20)
			part := func(i int) (int, int) { // examples [a, b) of user i in this split
				if s == 0 {
					return 0, counts[i] - split(counts[i])
				}
				return counts[i] - split(counts[i]), counts[i]
			}
			w.WriteString(`{"users": [`)
			for i := lo; i < hi; i++ {
				if i > lo {
					w.WriteString(", ")
				}
				fmt.Fprintf(w, "%q", user(i))
			}
			w.WriteString(`], "num_samples": [`)
			for i := lo; i < hi; i++ {
				if i > lo {
					w.WriteString(", ")
				}
				a, b := part(i)
				fmt.Fprint(w, b-a)
			}
			w.WriteString(`], "user_data": {`)
			for i := lo; i < hi; i++ {
				if i > lo {
					w.WriteString(", ")
				}
				fmt.Fprintf(w, `%q: {"x": [`, user(i))
				a, b := part(i)
				var ys []string
				for k := a; k < b; k++ {
					if k > a {
						w.WriteString(", ")
					}
					ys = append(ys, example(w))
				}
				fmt.Fprintf(w, `], "y": [%s]}`, strings.Join(ys, ", "))
			}
			w.WriteString("}}")
			if err := w.Flush(); err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
	}
	return nil
}

func genLEAFFEMNIST(dir string, r *rand.Rand) error {
	counts := spread(r, 3550, 805263)
	px := make([]float32, 784)
	var buf []byte
	return writeLEAFFolder(dir, counts, 100, func(i int) string { return fmt.Sprintf("f%04d_%02d", i, i%100) },
		func(w *bufio.Writer) string {
			w.WriteByte('[')
			for j, v := range image(r, px) {
				if j > 0 {
					w.WriteString(", ")
				}
				if v == 1 {
					w.WriteString("1.0")
					continue
				}
				buf = strconv.AppendFloat(buf[:0], float64(v), 'g', 16, 64)
				w.Write(buf)
			}
			w.WriteByte(']')
			return strconv.Itoa(r.IntN(62))
		})
}

func genLEAFShakespeare(dir string, r *rand.Rand) error {
	counts := spread(r, 1129, 4226158)
	return writeLEAFFolder(dir, counts, 100, func(i int) string { return fmt.Sprintf("THE_PLAY_%02d_ROLE_%d", i/30, i) },
		func(w *bufio.Writer) string {
			s := play(r, 81)
			fmt.Fprintf(w, "%q", s[:80])
			return strconv.Quote(s[80:])
		})
}
