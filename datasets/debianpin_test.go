package datasets

import (
	"bufio"
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
	fmt.Fprintf(&b, "# on a machine with those package versions installed. Columns: package, version, sha256, path.\n")
	for _, p := range paths {
		sum, err := fileSHA256(p)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", byPath[p].name, byPath[p].version, sum, strings.TrimPrefix(p, "/"))
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

// changelogGz returns a gzipped changelog of n entries by maintainer.
func changelogGz(t testing.TB, pkg, maintainer string, n int) []byte {
	var b strings.Builder
	for i := n; i > 0; i-- {
		fmt.Fprintf(&b, "%s (1.%d) unstable; urgency=medium\n\n  * Release %d of %s: fix the widget frobnication.\n\n -- M <%s>  Mon, 01 Jan 2024 00:00:00 +0000\n\n", pkg, i, i, pkg, maintainer)
	}
	var out strings.Builder
	w := gzip.NewWriter(&out)
	w.Write([]byte(b.String()))
	w.Close()
	return []byte(out.String())
}

// TestCheckDebianManifest: matching, missing and differing changelogs are
// counted, only the matching ones are read, and nothing matching is an
// error.
func TestCheckDebianManifest(t *testing.T) {
	root := t.TempDir()
	var m []ManifestEntry
	for i, p := range []string{"alpha", "beta", "gamma", "delta", "epsilon"} {
		rel := "usr/share/doc/" + p + "/changelog.Debian.gz"
		gz := changelogGz(t, p, fmt.Sprintf("m%d@example.org", i%2), 3)
		sum := sha256.Sum256(gz)
		m = append(m, ManifestEntry{Package: p, Version: "1.3", SHA256: hex.EncodeToString(sum[:]), Path: rel})
		switch p {
		case "gamma": // missing
			continue
		case "delta": // a newer version installed
			gz = changelogGz(t, p, "m1@example.org", 4)
		}
		os.MkdirAll(filepath.Join(root, filepath.Dir(rel)), 0o755)
		os.WriteFile(filepath.Join(root, rel), gz, 0o644)
	}
	p, err := CheckDebianManifest(root, m)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, m[0].Path), filepath.Join(root, m[1].Path), filepath.Join(root, m[4].Path)}
	if p.Pinned != 5 || !slices.Equal(p.Files, want) || len(p.Missing) != 1 || p.Missing[0].Package != "gamma" ||
		len(p.Differ) != 1 || p.Differ[0].Package != "delta" || p.Complete() {
		t.Fatalf("corpus %+v", p)
	}
	if r := p.Report(); !strings.Contains(r, "3 of 5 changelogs match the manifest; 1 missing (gamma 1.3); 1 differ (delta 1.3)") {
		t.Fatalf("report %q", r)
	}
	docs, err := readChangelogFiles(p.Files)
	if err != nil || len(docs) != 9 {
		t.Fatalf("%d documents, %v", len(docs), err)
	}
	if _, err := CheckDebianManifest(t.TempDir(), m); err == nil || !strings.Contains(err.Error(), "none of the 5 pinned Debian changelogs") {
		t.Fatalf("empty root: %v", err)
	}
	for _, bad := range []string{"a\t1\tnothex\tusr/x", "a\t1", "a\t1\t" + strings.Repeat("0", 64) + "\t/abs", "# only comments"} {
		if _, err := ParseDebianManifest(strings.NewReader(bad)); err == nil {
			t.Errorf("manifest %q accepted", bad)
		}
	}
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
