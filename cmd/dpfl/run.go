package main

import (
	"context"
	"fmt"
	"io"
)

// cmdRun trains one experiment. (Being written in this session; see issue 2.)
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "dpfl run: not built yet")
	return exitFailure
}
