package datasets

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"dpfl/results/regular"
)

// DebianChangelogGlob matches the Debian changelogs installed on Debian and
// Ubuntu machines.
const DebianChangelogGlob = "/usr/share/doc/*/changelog.Debian.gz"

// signature matches a Debian changelog trailer line:
// " -- Name <email>  Mon, 01 Jan 2024 00:00:00 +0000".
var signature = regexp.MustCompile(`^ -- (.*?)\s*<([^>]*)>`)

// ParseChangelog splits a Debian changelog (plain text) into entries: the
// lines between an entry's header ("pkg (version) dist; urgency=...") and its
// signature line form one Document whose User is the maintainer's lowercased
// e-mail address from the signature (the name when no address is given).
// Entries without a signature are dropped.
func ParseChangelog(r io.Reader) ([]Document, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var (
		out  []Document
		body []string
		in   bool
	)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, " -- "):
			if m := signature.FindStringSubmatch(line); m != nil && in {
				user := strings.ToLower(strings.TrimSpace(m[2]))
				if user == "" {
					user = strings.TrimSpace(m[1])
				}
				out = append(out, Document{User: user, Text: strings.TrimSpace(strings.Join(body, "\n"))})
			}
			body, in = body[:0], false
		case line != "" && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t"):
			// A header starts an entry; any other unindented line (Emacs
			// "Local variables:", old-format notes) ends the current one.
			body, in = body[:0], strings.Contains(line, "(") && strings.Contains(line, ";")
		case in:
			body = append(body, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("datasets: changelog: %w", err)
	}
	return out, nil
}

// ReadDebianChangelogs reads the gzipped changelogs matching glob (""
// means DebianChangelogGlob) in sorted path order and returns their entries.
// Symbolic links to already-read files are skipped.
func ReadDebianChangelogs(glob string) ([]Document, error) {
	paths, err := DebianChangelogFiles(glob)
	if err != nil {
		return nil, err
	}
	return readChangelogFiles(paths)
}

func readChangelogFile(path string) ([]Document, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("datasets: %s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	docs, err := ParseChangelog(r)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return docs, nil
}

// ReadTextByUser reads a user-attributed corpus from path:
//   - a file ending in .jsonl (or .json): one JSON object per line with
//     string fields "user" and "text", one document each (blank lines skipped);
//   - a directory: each regular file directly inside it is one document of
//     the user named by the file name without its extension, and each
//     subdirectory USER holds the documents (files, at any depth) of USER.
//
// Files are read in sorted path order.
func ReadTextByUser(path string) ([]Document, error) {
	return ReadTextByUserContext(context.Background(), path)
}

// ReadTextByUserContext is ReadTextByUser stopping with ctx's error once ctx
// is done.
func ReadTextByUserContext(ctx context.Context, path string) ([]Document, error) {
	files, err := TextFiles(path)
	if err != nil {
		return nil, err
	}
	if len(files) == 1 && files[0] == path {
		f, err := openRegular(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		docs, err := ReadJSONL(regular.Reader(ctx, f))
		if err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, path)
		}
		return docs, nil
	}
	out := make([]Document, 0, len(files))
	for _, p := range files {
		rel, _ := filepath.Rel(path, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		user := parts[0]
		if len(parts) == 1 {
			user = strings.TrimSuffix(user, filepath.Ext(user))
		}
		b, err := readRegular(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, Document{User: user, Text: string(b)})
	}
	return out, nil
}

// maxJSONLLine is the longest JSONL line read.
const maxJSONLLine = 64 << 20

// ReadJSONL decodes JSON lines of {"user": ..., "text": ...}.
func ReadJSONL(r io.Reader) ([]Document, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxJSONLLine)
	line := 1
	var out []Document
	for ; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec struct {
			User *string `json:"user"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			if rerr := sc.Err(); rerr != nil {
				// The read failed within the line: that, not the cut line,
				// is the error.
				return nil, fmt.Errorf("datasets: JSONL line %d: %w", line, rerr)
			}
			return nil, fmt.Errorf("datasets: JSONL line %d: %w", line, err)
		}
		if rec.User == nil || rec.Text == nil {
			return nil, fmt.Errorf("datasets: JSONL line %d: want string fields \"user\" and \"text\"", line)
		}
		out = append(out, Document{User: *rec.User, Text: *rec.Text})
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("datasets: JSONL line %d is longer than %d MiB", line, maxJSONLLine>>20)
	} else if err != nil {
		return nil, fmt.Errorf("datasets: JSONL line %d: %w", line, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("datasets: no JSONL records")
	}
	return out, nil
}
