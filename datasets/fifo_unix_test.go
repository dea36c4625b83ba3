//go:build unix

package datasets

import "syscall"

// mkfifo makes a FIFO at path (opening it for reading blocks until a writer
// comes).
func makeFIFO(path string) error { return syscall.Mkfifo(path, 0o644) }
