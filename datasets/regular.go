package datasets

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Every data file is checked to be a regular file before it is read: a FIFO
// would block the open itself, and a device (/dev/zero) would be read for
// ever.

// CheckRegular returns an error naming path unless it is a regular file
// (symbolic links followed). It never opens the file, so it never blocks.
func CheckRegular(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return regularMode(path, st.Mode())
}

func regularMode(path string, m fs.FileMode) error {
	if m.IsRegular() {
		return nil
	}
	what := ""
	switch {
	case m.IsDir():
		what = " (a folder)"
	case m&fs.ModeNamedPipe != 0:
		what = " (a named pipe)"
	case m&fs.ModeSocket != 0:
		what = " (a socket)"
	case m&fs.ModeDevice != 0:
		what = " (a device)"
	}
	return fmt.Errorf("%s is not a regular file%s", path, what)
}

// OpenRegular opens path for reading if it is a regular file, without
// blocking on anything else: the path is checked before the open, the open
// does not wait for a FIFO's writer (O_NONBLOCK, which regular files
// ignore), and the file opened is checked again (it may have been replaced
// in between). Its errors name path (callers add their prefix).
func OpenRegular(path string) (*os.File, error) {
	if err := CheckRegular(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = regularMode(path, st.Mode())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openRegular is OpenRegular with the package's error prefix.
func openRegular(path string) (*os.File, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	return f, nil
}

// readRegular reads a whole regular file, observing ctx.
func readRegular(ctx context.Context, path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(ctxReader{ctx, f})
	if err != nil {
		return nil, fmt.Errorf("datasets: %s: %w", path, err)
	}
	return b, nil
}

// ctxReader fails with the context's error once ctx is done, so that a
// long read stops within one buffer of the reader it wraps.
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

// every is how many records a reader handles between two looks at its
// context.
const every = 4096

// ctxEvery returns ctx's error on every every-th call (i counting calls).
func ctxEvery(ctx context.Context, i int) error {
	if i%every != 0 {
		return nil
	}
	return ctx.Err()
}
