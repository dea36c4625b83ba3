package results

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// OpenRegular opens the regular file at path for reading, with its size. A
// device, FIFO or folder (/dev/zero, a named pipe) is refused without
// blocking on it: the type is checked before the open, the open does not
// wait for a FIFO's writer, and the opened file is checked again. A missing
// file is the *os.PathError of os.Open (os.IsNotExist holds).
func OpenRegular(path string) (*os.File, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("results: %s is not a regular file (%s)", path, fileKind(st.Mode()))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	st2, err := f.Stat()
	if err == nil && (!st2.Mode().IsRegular() || !os.SameFile(st, st2)) {
		err = fmt.Errorf("results: %s changed while being opened", path)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st2.Size(), nil
}

// fileKind names a file mode's type.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// ReadFileMax reads the regular file at path (OpenRegular), refusing one of
// more than max bytes before reading it. A missing file is the
// *os.PathError of os.Open.
func ReadFileMax(path string, max int64) ([]byte, error) {
	f, size, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > max {
		return nil, fmt.Errorf("results: %s has %d bytes, more than the %d such a file can have", path, size, max)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("results: %s shrank while being read", path)
		}
		return nil, fmt.Errorf("results: %w", err)
	}
	return b, nil
}
