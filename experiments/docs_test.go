package experiments

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// standAlone are the references a reader of the repository cannot follow:
// notes kept outside the repository, by file name or by section, and
// numbered issues of the tracker. What they held belongs in the package
// documentation (or a README beside the package), the papers cited in full.
var standAlone = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a note outside the repository", regexp.MustCompile(`\b(ALGORITHMS|NUMBERS|EXPERIMENTS|DESIGN|GO-NUMERIC[S])(\.md\b|\s+§)|\bGO-NUMERIC[S]\b`)},
	{"an issue number", regexp.MustCompile(`(?i)\bissues?\s+#?[0-9]+|\(issu[e]\b|\bthe issu[e]'s\b`)},
	{"a paper by its file number", regexp.MustCompile(`(?i)\bseeds?\s+00[0-9]\b`)},
}

// TestDocsStandAlone walks the repository's text files (.go, .md, .yaml,
// .sh; run outputs under results/runs are not the repository's) and fails
// on every line that refers to something outside the repository. The
// patterns are spelled so that they do not match themselves.
func TestDocsStandAlone(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" || rel == "results/runs" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".yaml", ".sh":
		default:
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		files++
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for line := 1; sc.Scan(); line++ {
			text := sc.Text()
			for _, r := range standAlone {
				if m := r.re.FindString(text); m != "" {
					t.Errorf("%s:%d refers to %s (%q): %s", rel, line, r.what, m, strings.TrimSpace(text))
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("walked only %d text files under %s", files, root)
	}
}

// repoRoot is the repository's root folder (this package's parent, which
// holds go.mod).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root: %v", err)
	}
	return root
}
