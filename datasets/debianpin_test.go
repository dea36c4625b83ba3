package datasets

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dpfl/sim/rng"
)

var writeManifest = flag.String("write-debian-manifest", "",
	"regenerate debian-manifest.tsv from this package list of a fresh machine (lines: apt, package, version), checked against this machine's dpkg status")

// TestWriteDebianManifest regenerates the pinned manifest (only when asked:
// go test ./datasets -run TestWriteDebianManifest -write-debian-manifest=LIST).
// The list names the packages (apt name and version) of a fresh machine of
// dpfl's kind; a package is pinned when this machine has that version
// installed and it ships /usr/share/doc/PKG/changelog.Debian.gz. Each file is
// listed once, under its real path (doc folders that are symbolic links to
// another package's share its changelog).
func TestWriteDebianManifest(t *testing.T) {
	if *writeManifest == "" {
		t.Skip("regenerates debian-manifest.tsv only with -write-debian-manifest=LIST")
	}
	installed, err := dpkgInstalled("/var/lib/dpkg/status")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(*writeManifest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type pkg struct{ name, version string }
	var fresh []pkg
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 3 && fs[0] == "apt" {
			fresh = append(fresh, pkg{fs[1], fs[2]})
		}
	}
	slices.SortFunc(fresh, func(a, b pkg) int { return strings.Compare(a.name, b.name) })
	byPath := map[string]pkg{}
	pinned := map[string]string{} // doc folder -> version
	versionDiffers := 0
	for _, p := range fresh {
		if installed[p.name] != p.version {
			versionDiffers++
			continue
		}
		doc := strings.SplitN(p.name, ":", 2)[0]
		real, err := filepath.EvalSymlinks(filepath.Join("/usr/share/doc", doc, "changelog.Debian.gz"))
		if err != nil {
			continue
		}
		pinned[doc] = p.version
		if _, ok := byPath[real]; !ok {
			byPath[real] = pkg{doc, p.version}
		}
	}
	// A shared changelog is listed under the package owning its folder when
	// that package is pinned, else under the first that links to it.
	for real := range byPath {
		owner := filepath.Base(filepath.Dir(real))
		if v, ok := pinned[owner]; ok {
			byPath[real] = pkg{owner, v}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var b strings.Builder
	fmt.Fprintf(&b, "# Pinned Debian changelog corpus of data.dataset: debian (data.changelogs: pinned).\n")
	fmt.Fprintf(&b, "# The changelog.Debian.gz files of the %d packages of a fresh Debian 12 machine of dpfl's kind\n", len(fresh))
	fmt.Fprintf(&b, "# (%d files: packages without one, and doc folders linked to another package's, add none).\n", len(paths))
	fmt.Fprintf(&b, "# Regenerate: go test ./datasets -run TestWriteDebianManifest -write-debian-manifest=LIST\n")
	fmt.Fprintf(&b, "# on a machine with those package versions installed. Columns: package, version, sha256 (of the\n")
	fmt.Fprintf(&b, "# changelog.Debian.gz file), text_sha256 (of the changelog it holds, uncompressed), path.\n")
	for _, p := range paths {
		sum, err := fileSHA256(p)
		if err != nil {
			t.Fatal(err)
		}
		text, err := readGzipped(p)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\n", byPath[p].name, byPath[p].version, sum, hexSHA(text), strings.TrimPrefix(p, "/"))
	}
	if err := os.WriteFile("debian-manifest.tsv", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d fresh packages, %d at another version here, %d changelogs pinned", len(fresh), versionDiffers, len(paths))
}

// dpkgInstalled maps each installed package (by name, and by name:arch) to
// its version, from dpkg's status file.
func dpkgInstalled(status string) (map[string]string, error) {
	b, err := os.ReadFile(status)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, stanza := range strings.Split(string(b), "\n\n") {
		fields := map[string]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if k, v, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, " ") {
				fields[k] = v
			}
		}
		if !strings.HasSuffix(fields["Status"], " installed") || fields["Package"] == "" {
			continue
		}
		out[fields["Package"]] = fields["Version"]
		out[fields["Package"]+":"+fields["Architecture"]] = fields["Version"]
	}
	return out, nil
}

// TestDebianManifestEmbedded: the committed manifest parses, lists each file
// once under usr/share/doc, and is not trivially small.
func TestDebianManifestEmbedded(t *testing.T) {
	m, err := DebianManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m) < 500 {
		t.Fatalf("%d pinned changelogs, expected about 600", len(m))
	}
	for i, e := range m {
		if !strings.HasPrefix(e.Path, "usr/share/doc/") || !strings.HasSuffix(e.Path, "/changelog.Debian.gz") {
			t.Fatalf("entry %d: path %s", i, e.Path)
		}
		if i > 0 && m[i-1].Path >= e.Path {
			t.Fatalf("entries not sorted by path at %d", i)
		}
	}
}

// changelogText returns a changelog of n entries by maintainer, newest
// first (versions 1.n down to 1.1).
func changelogText(pkg, maintainer string, n int) string {
	var b strings.Builder
	for i := n; i > 0; i-- {
		fmt.Fprintf(&b, "%s (1.%d) unstable; urgency=medium\n\n  * Release %d of %s: fix the widget frobnication.\n\n -- M <%s>  Mon, 01 Jan 2024 00:00:00 +0000\n\n", pkg, i, i, pkg, maintainer)
	}
	return b.String()
}

// gzipped compresses s at level.
func gzipped(s string, level int) []byte {
	var out bytes.Buffer
	w, _ := gzip.NewWriterLevel(&out, level)
	w.Write([]byte(s))
	w.Close()
	return out.Bytes()
}

func hexSHA(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestCheckDebianManifest: matching, newer, missing and differing changelogs
// are counted, only the matching ones are read (a newer one without its
// newer entries), and nothing matching is an error.
func TestCheckDebianManifest(t *testing.T) {
	root := t.TempDir()
	var m []ManifestEntry
	pkgs := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"}
	for i, p := range pkgs {
		rel := "usr/share/doc/" + p + "/changelog.Debian.gz"
		text := changelogText(p, fmt.Sprintf("m%d@example.org", i%2), 3)
		gz := gzipped(text, gzip.BestCompression)
		m = append(m, ManifestEntry{Package: p, Version: "1.3", SHA256: hexSHA(gz), TextSHA: hexSHA([]byte(text)), Path: rel})
		switch p {
		case "gamma": // missing
			continue
		case "delta": // two newer versions installed, by another maintainer
			gz = gzipped(newerEntries(p, 2)+text, gzip.BestCompression)
		case "epsilon": // the same text, compressed otherwise
			gz = gzipped(text, gzip.BestSpeed)
		case "zeta": // newer, but an old entry was edited: not the pinned text
			gz = gzipped(newerEntries(p, 1)+strings.Replace(text, "Release 1", "Release one", 1), gzip.BestCompression)
		case "eta": // not gzip
			gz = []byte(text)
		}
		os.MkdirAll(filepath.Join(root, filepath.Dir(rel)), 0o755)
		os.WriteFile(filepath.Join(root, rel), gz, 0o644)
	}
	p, err := CheckDebianManifest(root, m)
	if err != nil {
		t.Fatal(err)
	}
	file := func(i int) string { return filepath.Join(root, m[i].Path) }
	want := []string{file(0), file(1), file(3), file(4)}
	if p.Pinned != 7 || !slices.Equal(p.Files, want) || len(p.Missing) != 2 || p.Missing[0].Package != "gamma" || p.Missing[1].Package != "eta" ||
		len(p.Differ) != 1 || p.Differ[0].Package != "zeta" || len(p.Newer) != 2 || p.Complete() || p.Fingerprint() != "" {
		t.Fatalf("corpus %+v", p)
	}
	if n := p.Newer[0]; n.Package != "delta" || n.Installed != "1.3+u2" || n.Skipped != 2 || n.File != file(3) {
		t.Fatalf("newer %+v", n)
	}
	if n := p.Newer[1]; n.Package != "epsilon" || n.Installed != "1.3" || n.Skipped != 0 {
		t.Fatalf("recompressed %+v", n)
	}
	if r := p.Report(); !strings.Contains(r, "4 of 7 changelogs match the manifest (2 newer than pinned, read without their newer entries (delta 1.3+u2: 2 entries above 1.3, epsilon 1.3: 0 entries above 1.3)); 2 missing (gamma 1.3, eta 1.3); 1 differ (zeta 1.3)") {
		t.Fatalf("report %q", r)
	}
	docs, err := p.read()
	if err != nil || len(docs) != 12 {
		t.Fatalf("%d documents, %v", len(docs), err)
	}
	for _, d := range docs {
		if d.User == "new@example.org" {
			t.Fatalf("a newer entry was read: %+v", d)
		}
	}
	// Negative control: read as plain files, the newer entries are there.
	if all, err := readChangelogFiles(p.Files); err != nil || len(all) != 14 {
		t.Fatalf("plain read: %d documents, %v", len(all), err)
	}
	// Complete once only matching and newer files remain.
	full := []ManifestEntry{m[0], m[1], m[3], m[4]}
	pf, err := CheckDebianManifest(root, full)
	if err != nil || !pf.Complete() || pf.Fingerprint() != PinnedFingerprint ||
		!strings.Contains(pf.Report(), "all 4 changelogs match the manifest; 2 newer than pinned") {
		t.Fatalf("complete corpus: %+v %v %q", pf, err, pf.Report())
	}
	// A newer file edited after the check is refused, not read.
	os.WriteFile(file(3), gzipped(newerEntries("delta", 2)+"changed\n"+changelogText("delta", "m1@example.org", 3), gzip.BestCompression), 0o644)
	if _, err := pf.read(); err == nil || !strings.Contains(err.Error(), "changed while the pinned corpus was read") {
		t.Fatalf("changed file: %v", err)
	}
	if _, err := CheckDebianManifest(t.TempDir(), m); err == nil || !strings.Contains(err.Error(), "none of the 7 pinned Debian changelogs") {
		t.Fatalf("empty root: %v", err)
	}
	hash := strings.Repeat("0", 64)
	for _, bad := range []string{"a\t1\tnothex\t" + hash + "\tusr/x", "a\t1\t" + hash + "\tnothex\tusr/x", "a\t1\t" + hash + "\tusr/x",
		"a\t1", "a\t1\t" + hash + "\t" + hash + "\t/abs", "# only comments"} {
		if _, err := ParseDebianManifest(strings.NewReader(bad)); err == nil {
			t.Errorf("manifest %q accepted", bad)
		}
	}
}

// newerEntries returns n entries newer than changelogText's (1.3+un down to
// 1.3+u1) by new@example.org, as a security update adds them.
func newerEntries(pkg string, n int) string {
	var b strings.Builder
	for i := n; i > 0; i-- {
		fmt.Fprintf(&b, "%s (1.3+u%d) stable-security; urgency=medium\n\n  * Security fix %d.\n\n -- S <new@example.org>  Tue, 02 Jan 2024 00:00:00 +0000\n\n", pkg, i, i)
	}
	return b.String()
}

// TestDebianPinnedCorpus: on a machine holding the pinned changelogs, the
// corpus gives the same clients and tokens as on the machine that pinned it
// (the numbers in experiments/README.md). Elsewhere it says why it cannot
// check.
func TestDebianPinnedCorpus(t *testing.T) {
	docs, p, err := ReadDebianPinned()
	if err != nil || !p.Complete() {
		t.Skipf("this machine lacks the pinned Debian 12 changelogs: %v %s", err, p.Report())
	}
	t.Log(p.Report())
	f, err := NewTextFederated("debian", docs, TextOptions{}, rng.New(1).Stream("partition"))
	if err != nil {
		t.Fatal(err)
	}
	tokens := 0
	for _, t := range f.Train.Next {
		if t != PadID {
			tokens++
		}
	}
	t.Logf("%d changelogs, %d entries, %d clients, %d training windows, %d training targets", len(p.Files), len(docs), f.NumClients(), f.Train.Len(), tokens)
	if len(p.Files) != pinnedFiles || len(docs) != pinnedEntries || f.NumClients() != pinnedClients || tokens != pinnedTokens {
		t.Fatalf("pinned corpus: %d changelogs, %d entries, %d clients, %d tokens; want %d, %d, %d, %d",
			len(p.Files), len(docs), f.NumClients(), tokens, pinnedFiles, pinnedEntries, pinnedClients, pinnedTokens)
	}
}

// Measured on the machine that pinned the corpus (data.changelogs: pinned,
// default text options, seed 1: dpfl data debian prints the same).
const (
	pinnedFiles   = 618
	pinnedEntries = 22409
	pinnedClients = 267
	pinnedTokens  = 713625
)
