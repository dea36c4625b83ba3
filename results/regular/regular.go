// Package regular opens and reads input files that must be regular files,
// without ever blocking on anything else: a named pipe (FIFO), a device such
// as /dev/zero, a socket or a folder given where a file is expected is
// refused with an error naming the path and what it is, instead of waiting
// for a writer that never comes or reading without end. Every reader of
// user-supplied files (configurations, data sets, model and run files) goes
// through it.
//
// The type is checked before the open, the open does not wait for a FIFO's
// writer (O_NONBLOCK, which regular files ignore), and the opened file is
// checked again, since the path may have been replaced in between. Errors
// name the path and carry no package prefix: callers add theirs. A missing
// file is an *os.PathError, as os.Open's (os.IsNotExist holds).
//
// Package regular imports only the standard library.
package regular

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Check returns an error naming path unless it is a regular file (symbolic
// links followed). It never opens the file.
func Check(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return mode(path, st.Mode())
}

// mode refuses a file mode that is not a regular file's, naming its type.
func mode(path string, m fs.FileMode) error {
	if m.IsRegular() {
		return nil
	}
	what := "mode " + m.String()
	switch {
	case m.IsDir():
		what = "a folder"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%s is not a regular file (%s)", path, what)
}

// Open opens the regular file at path for reading and returns it with its
// size.
func Open(path string) (*os.File, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok {
			pe.Op = "open" // as os.Open says it
		}
		return nil, 0, err
	}
	if err := mode(path, st.Mode()); err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	st2, err := f.Stat()
	if err == nil {
		if err = mode(path, st2.Mode()); err == nil && !os.SameFile(st, st2) {
			err = fmt.Errorf("%s changed while being opened", path)
		}
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st2.Size(), nil
}

// ReadMax reads the regular file at path whole, refusing one of more than
// max bytes before reading it.
func ReadMax(path string, max int64) ([]byte, error) {
	f, size, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > max {
		return nil, fmt.Errorf("%s has %d bytes, more than the %d such a file can have", path, size, max)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s shrank while being read", path)
		}
		return nil, err
	}
	return b, nil
}

// Reader wraps r so that a read fails with ctx's error once ctx is done: a
// long read stops within one buffer of r.
func Reader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
