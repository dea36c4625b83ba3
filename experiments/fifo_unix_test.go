//go:build unix

package experiments

import "syscall"

// mkfifo makes a FIFO at path (opening it for reading blocks until a writer
// comes).
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }
