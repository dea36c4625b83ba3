package datasets

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
)

// The Debian changelog corpus depends on which packages a machine has
// installed (three machines of one kind gave 269, 271 and 358 maintainers),
// so a text result could not be regenerated elsewhere. The pinned corpus is
// fixed by a manifest committed here: the changelogs of the packages of a
// fresh Debian 12 machine of dpfl's kind, each with its package version, the
// SHA-256 of its changelog.Debian.gz and the SHA-256 of the changelog text it
// holds. Every machine that has those files builds the same clients.
//
// A security or point-release update adds entries at the top of a changelog
// and leaves the older ones as they were. Such a newer changelog still holds
// the pinned one: its text from one entry header on has the pinned text's
// SHA-256. The pinned corpus reads it from that header on, so the machine
// still builds the pinned clients, and its runs keep the pinned corpus's
// fingerprint (PinnedFingerprint).

//go:embed debian-manifest.tsv
var debianManifestTSV string

// PinnedFingerprint is the data.changelogs fingerprint of a complete pinned
// corpus: the hash the run-input fingerprint gives the 618 changelog.Debian.gz
// files of the manifest (their paths, sizes and bytes), as measured on the
// machine that pinned them and recorded in every committed run that read the
// pinned corpus. A run whose pinned corpus is complete records it whether or
// not some changelogs were newer (their pinned text is what it read).
const PinnedFingerprint = "sha256:ed550b50569d2291c5c3d69c8669550928e630ed37c05bd8ab1d6cad37b61baa"

// DebianPinned is the value of data.changelogs (dpfl data -changelogs) that
// reads the pinned corpus instead of a glob.
const DebianPinned = "pinned"

// ManifestEntry is one pinned changelog.
type ManifestEntry struct {
	Package string // the binary package that ships it
	Version string // its version on the pinned machine
	SHA256  string // hex SHA-256 of the changelog.Debian.gz file
	TextSHA string // hex SHA-256 of the changelog it holds, uncompressed
	Path    string // the file, relative to the root (usr/share/doc/PKG/changelog.Debian.gz)
}

// DebianManifest returns the pinned corpus's manifest (debian-manifest.tsv).
func DebianManifest() ([]ManifestEntry, error) {
	return ParseDebianManifest(strings.NewReader(debianManifestTSV))
}

// ParseDebianManifest reads a manifest: lines of package, version, sha256,
// text_sha256 and path separated by tabs; blank lines and lines starting
// with # are skipped.
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
		if len(f) != 5 || f[0] == "" || f[1] == "" || f[4] == "" {
			return nil, fmt.Errorf("datasets: manifest line %d: want package, version, sha256, text_sha256 and path separated by tabs", line)
		}
		for _, h := range f[2:4] {
			if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("datasets: manifest line %d: %q is not a hex SHA-256", line, h)
			}
		}
		if filepath.IsAbs(f[4]) || strings.Contains(f[4], "..") {
			return nil, fmt.Errorf("datasets: manifest line %d: path %q must be relative, without ..", line, f[4])
		}
		if seen[f[4]] {
			return nil, fmt.Errorf("datasets: manifest line %d: %s listed twice", line, f[4])
		}
		seen[f[4]] = true
		out = append(out, ManifestEntry{Package: f[0], Version: f[1], SHA256: f[2], TextSHA: f[3], Path: f[4]})
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
	Pinned  int              // entries in the manifest
	Files   []string         // the matching files (under the root), in manifest order
	Newer   []NewerChangelog // matching files that are newer versions of the pinned ones
	Missing []ManifestEntry  // entries whose file is absent or unreadable
	Differ  []ManifestEntry  // entries whose file neither is nor holds the pinned changelog
}

// NewerChangelog is a changelog.Debian.gz whose bytes differ from the
// pinned file's but whose text, from one entry header on, is the pinned
// text: the pinned corpus reads it from there.
type NewerChangelog struct {
	ManifestEntry
	File      string // the file, under the root
	Installed string // the version of its first entry
	Skipped   int    // entries above the pinned text, left out
	offset    int    // where the pinned text starts in the uncompressed file
}

// Complete reports whether every pinned changelog matched.
func (p *PinnedCorpus) Complete() bool { return len(p.Files) == p.Pinned }

// Fingerprint is the corpus's data.changelogs fingerprint when it is the
// pinned one (PinnedFingerprint when Complete), else "" (the matching files
// are hashed as they are).
func (p *PinnedCorpus) Fingerprint() string {
	if p.Complete() {
		return PinnedFingerprint
	}
	return ""
}

// Report is one line on what matched, naming up to five packages of each
// kind of mismatch.
func (p *PinnedCorpus) Report() string {
	list := func(n int, name func(i int) string) string {
		var s []string
		for i := 0; i < n; i++ {
			if i == 5 {
				s = append(s, fmt.Sprintf("and %d more", n-5))
				break
			}
			s = append(s, name(i))
		}
		return strings.Join(s, ", ")
	}
	names := func(es []ManifestEntry) string {
		return list(len(es), func(i int) string { return es[i].Package + " " + es[i].Version })
	}
	newer := ""
	if len(p.Newer) > 0 {
		newer = fmt.Sprintf("%d newer than pinned, read without their newer entries (%s)", len(p.Newer), list(len(p.Newer), func(i int) string {
			n := p.Newer[i]
			entries := "entries"
			if n.Skipped == 1 {
				entries = "entry"
			}
			return fmt.Sprintf("%s %s: %d %s above %s", n.Package, n.Installed, n.Skipped, entries, n.Version)
		}))
	}
	if p.Complete() {
		msg := fmt.Sprintf("pinned Debian corpus: all %d changelogs match the manifest", p.Pinned)
		if newer != "" {
			msg += "; " + newer + "; the clients are the pinned corpus's"
		}
		return msg
	}
	msg := fmt.Sprintf("pinned Debian corpus: %d of %d changelogs match the manifest", len(p.Files), p.Pinned)
	if newer != "" {
		msg += " (" + newer + ")"
	}
	if len(p.Missing) > 0 {
		msg += fmt.Sprintf("; %d missing (%s)", len(p.Missing), names(p.Missing))
	}
	if len(p.Differ) > 0 {
		msg += fmt.Sprintf("; %d differ (%s)", len(p.Differ), names(p.Differ))
	}
	return msg + "; the corpus is the matching changelogs, so its clients differ from the pinned corpus's (the run's data.changelogs fingerprint says which corpus it used)"
}

// CheckDebianManifest looks for each entry's file under root ("/" for this
// machine) and compares its SHA-256, and when that differs, looks for the
// pinned text in it (a newer changelog). It is an error when none matches.
func CheckDebianManifest(root string, entries []ManifestEntry) (*PinnedCorpus, error) {
	p := &PinnedCorpus{Pinned: len(entries)}
	for _, e := range entries {
		path := filepath.Join(root, filepath.FromSlash(e.Path))
		sum, err := fileSHA256(path)
		switch {
		case err != nil:
			p.Missing = append(p.Missing, e)
		case sum == e.SHA256:
			p.Files = append(p.Files, path)
		default:
			n, ok, err := findPinnedText(path, e)
			switch {
			case err != nil:
				p.Missing = append(p.Missing, e)
			case ok:
				p.Files = append(p.Files, path)
				p.Newer = append(p.Newer, n)
			default:
				p.Differ = append(p.Differ, e)
			}
		}
	}
	if len(p.Files) == 0 {
		return p, fmt.Errorf("datasets: none of the %d pinned Debian changelogs is under %s (%d missing, %d differ): the pinned corpus needs a Debian 12 machine; or set a glob of changelogs", p.Pinned, root, len(p.Missing), len(p.Differ))
	}
	return p, nil
}

// changelogHeader matches an entry's first line, "source (version) dist;
// urgency=...", capturing the version.
var changelogHeader = regexp.MustCompile(`^\S+ \(([^)\s]+)\) [^\n]*;`)

// maxNewerEntries bounds the entries searched above a pinned text: updates
// add one or a few.
const maxNewerEntries = 64

// findPinnedText reports whether the changelog at path holds e's pinned text
// from one of its first entry headers to its end.
func findPinnedText(path string, e ManifestEntry) (NewerChangelog, bool, error) {
	text, err := readGzipped(path)
	if err != nil {
		return NewerChangelog{}, false, err
	}
	n := NewerChangelog{ManifestEntry: e, File: path}
	headers := 0
	for off := 0; off < len(text) && headers <= maxNewerEntries; {
		end := bytes.IndexByte(text[off:], '\n')
		if end < 0 {
			end = len(text) - off
		}
		if m := changelogHeader.FindSubmatch(text[off : off+end]); m != nil {
			if headers == 0 {
				n.Installed = string(m[1])
			}
			sum := sha256.Sum256(text[off:])
			if hex.EncodeToString(sum[:]) == e.TextSHA {
				n.Skipped, n.offset = headers, off
				return n, true, nil
			}
			headers++
		}
		off += end + 1
	}
	return NewerChangelog{}, false, nil
}

// readGzipped returns the uncompressed content of a gzipped regular file.
func readGzipped(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("datasets: %s: %w", path, err)
	}
	defer zr.Close()
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("datasets: %s: %w", path, err)
	}
	return b, nil
}

// read reads the corpus's entries, in manifest order: each newer changelog
// from its pinned text on, checked again against the manifest.
func (p *PinnedCorpus) read() ([]Document, error) {
	newer := map[string]NewerChangelog{}
	for _, n := range p.Newer {
		newer[n.File] = n
	}
	var out []Document
	for _, path := range p.Files {
		n, ok := newer[path]
		if !ok {
			docs, err := readChangelogFile(path)
			if err != nil {
				return nil, err
			}
			out = append(out, docs...)
			continue
		}
		text, err := readGzipped(path)
		if err != nil {
			return nil, err
		}
		if n.offset > len(text) {
			return nil, fmt.Errorf("datasets: %s changed while the pinned corpus was read", path)
		}
		sum := sha256.Sum256(text[n.offset:])
		if hex.EncodeToString(sum[:]) != n.TextSHA {
			return nil, fmt.Errorf("datasets: %s changed while the pinned corpus was read", path)
		}
		docs, err := ParseChangelog(bytes.NewReader(text[n.offset:]))
		if err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, path)
		}
		out = append(out, docs...)
	}
	return out, nil
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
// that match on this machine, in manifest order (a newer changelog from its
// pinned text on); the PinnedCorpus says what did not match.
func ReadDebianPinned() ([]Document, *PinnedCorpus, error) {
	p, err := DebianPinnedFiles()
	if err != nil {
		return nil, p, err
	}
	docs, err := p.read()
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
