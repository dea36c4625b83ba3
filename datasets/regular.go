package datasets

import (
	"context"
	"fmt"
	"io"
	"os"

	"dpfl/results/regular"
)

// Every data file is checked to be a regular file before it is read: a FIFO
// would block the open itself, and a device (/dev/zero) would be read for
// ever.

// openRegular opens path for reading if it is a regular file, without
// blocking on anything else (package regular), with the package's error
// prefix.
func openRegular(path string) (*os.File, error) {
	f, _, err := regular.Open(path)
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
	b, err := io.ReadAll(regular.Reader(ctx, f))
	if err != nil {
		return nil, fmt.Errorf("datasets: %s: %w", path, err)
	}
	return b, nil
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
