package main

import (
	"context"
	"fmt"
	"io"
)

// cmdAccount is the privacy calculator (issue 3; being written).
func cmdAccount(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "dpfl account: not built yet")
	return exitFailure
}
