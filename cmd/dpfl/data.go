package main

import (
	"context"
	"fmt"
	"io"
)

// cmdData prints partition statistics (issue 7; being written).
func cmdData(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "dpfl data: not built yet")
	return exitFailure
}
