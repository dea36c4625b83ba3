package datasets

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// The Debian changelog corpus depends on which packages a machine has
// installed (three machines of one kind gave 269, 271 and 358 maintainers),
// so a text result could not be regenerated elsewhere. The pinned corpus is
// fixed by a manifest committed here: the changelogs of the packages of a
// fresh Debian 12 machine of dpfl's kind, each with its package version and
// the SHA-256 of its changelog.Debian.gz. Every machine that has those files
// builds the same clients.

//go:embed debian-manifest.tsv
var debianManifestTSV string

// DebianPinned is the value of data.changelogs (dpfl data -changelogs) that
// reads the pinned corpus instead of a glob.
const DebianPinned = "pinned"

// ManifestEntry is one pinned changelog.
type ManifestEntry struct {
	Package string // the binary package that ships it
	Version string // its version on the pinned machine
	SHA256  string // hex SHA-256 of the changelog.Debian.gz file
	Path    string // the file, relative to the root (usr/share/doc/PKG/changelog.Debian.gz)
}

// DebianManifest returns the pinned corpus's manifest (debian-manifest.tsv).
func DebianManifest() ([]ManifestEntry, error) {
	return ParseDebianManifest(strings.NewReader(debianManifestTSV))
}

// ParseDebianManifest reads a manifest: lines of package, version, sha256
// and path separated by tabs; blank lines and lines starting with # are
// skipped.
func ParseDebianManifest(r io.Reader) ([]ManifestEntry, error) {
	sc := bufio.NewScanner(r)
	var out []ManifestEntry
	seen := map[string]bool{}
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "#") {
			continue
		}
		f := strings.Split(s, "\t")
		if len(f) != 4 || f[0] == "" || f[1] == "" || f[3] == "" {
			return nil, fmt.Errorf("datasets: manifest line %d: want package, version, sha256 and path separated by tabs", line)
		}
		if b, err := hex.DecodeString(f[2]); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("datasets: manifest line %d: %q is not a hex SHA-256", line, f[2])
		}
		if filepath.IsAbs(f[3]) || strings.Contains(f[3], "..") {
			return nil, fmt.Errorf("datasets: manifest line %d: path %q must be relative, without ..", line, f[3])
		}
		if seen[f[3]] {
			return nil, fmt.Errorf("datasets: manifest line %d: %s listed twice", line, f[3])
		}
		seen[f[3]] = true
		out = append(out, ManifestEntry{Package: f[0], Version: f[1], SHA256: f[2], Path: f[3]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("datasets: manifest: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("datasets: empty manifest")
	}
	return out, nil
}

// PinnedCorpus is the result of checking a manifest against a machine.
type PinnedCorpus struct {
	Pinned  int             // entries in the manifest
	Files   []string        // the matching files (under the root), in manifest order
	Missing []ManifestEntry // entries whose file is absent or unreadable
	Differ  []ManifestEntry // entries whose file has another SHA-256
}

// Complete reports whether every pinned changelog matched.
func (p *PinnedCorpus) Complete() bool { return len(p.Files) == p.Pinned }

// Report is one line on what matched, naming up to five packages of each
// kind of mismatch.
func (p *PinnedCorpus) Report() string {
	if p.Complete() {
		return fmt.Sprintf("pinned Debian corpus: all %d changelogs match the manifest", p.Pinned)
	}
	names := func(es []ManifestEntry) string {
		var s []string
		for i, e := range es {
			if i == 5 {
				s = append(s, fmt.Sprintf("and %d more", len(es)-5))
				break
			}
			s = append(s, e.Package+" "+e.Version)
		}
		return strings.Join(s, ", ")
	}
	msg := fmt.Sprintf("pinned Debian corpus: %d of %d changelogs match the manifest", len(p.Files), p.Pinned)
	if len(p.Missing) > 0 {
		msg += fmt.Sprintf("; %d missing (%s)", len(p.Missing), names(p.Missing))
	}
	if len(p.Differ) > 0 {
		msg += fmt.Sprintf("; %d differ (%s)", len(p.Differ), names(p.Differ))
	}
	return msg + "; the corpus is the matching changelogs, so its clients differ from the pinned corpus's (the run's data.changelogs fingerprint says which corpus it used)"
}

// CheckDebianManifest looks for each entry's file under root ("/" for this
// machine) and compares its SHA-256. It is an error when none matches.
func CheckDebianManifest(root string, entries []ManifestEntry) (*PinnedCorpus, error) {
	p := &PinnedCorpus{Pinned: len(entries)}
	for _, e := range entries {
		path := filepath.Join(root, filepath.FromSlash(e.Path))
		sum, err := fileSHA256(path)
		switch {
		case err != nil:
			p.Missing = append(p.Missing, e)
		case sum != e.SHA256:
			p.Differ = append(p.Differ, e)
		default:
			p.Files = append(p.Files, path)
		}
	}
	if len(p.Files) == 0 {
		return p, fmt.Errorf("datasets: none of the %d pinned Debian changelogs is under %s (%d missing, %d differ): the pinned corpus needs a Debian 12 machine; or set a glob of changelogs", p.Pinned, root, len(p.Missing), len(p.Differ))
	}
	return p, nil
}

// DebianPinnedFiles checks the pinned manifest against this machine.
func DebianPinnedFiles() (*PinnedCorpus, error) {
	m, err := DebianManifest()
	if err != nil {
		return nil, err
	}
	return CheckDebianManifest("/", m)
}

// ReadDebianPinned reads the pinned corpus: the changelogs of the manifest
// that match on this machine, in manifest order; the PinnedCorpus says what
// did not match.
func ReadDebianPinned() ([]Document, *PinnedCorpus, error) {
	p, err := DebianPinnedFiles()
	if err != nil {
		return nil, p, err
	}
	docs, err := readChangelogFiles(p.Files)
	return docs, p, err
}

// readChangelogFiles reads the entries of gzipped changelogs, in order.
func readChangelogFiles(paths []string) ([]Document, error) {
	var out []Document
	for _, p := range paths {
		docs, err := readChangelogFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
	}
	return out, nil
}

func fileSHA256(path string) (string, error) {
	f, err := openRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
