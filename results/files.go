package results

import (
	"fmt"
	"os"

	"dpfl/results/regular"
)

// OpenRegular opens the regular file at path for reading, with its size,
// refusing a device, FIFO or folder without blocking on it (package
// regular). A missing file is the *os.PathError of os.Stat (os.IsNotExist
// holds).
func OpenRegular(path string) (*os.File, int64, error) {
	f, size, err := regular.Open(path)
	if err != nil && !os.IsNotExist(err) {
		err = fmt.Errorf("results: %w", err)
	}
	return f, size, err
}

// ReadFileMax reads the regular file at path (OpenRegular), refusing one of
// more than max bytes before reading it. A missing file is the
// *os.PathError of os.Stat.
func ReadFileMax(path string, max int64) ([]byte, error) {
	b, err := regular.ReadMax(path, max)
	if err != nil && !os.IsNotExist(err) {
		err = fmt.Errorf("results: %w", err)
	}
	return b, err
}
