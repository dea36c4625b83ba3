package experiments

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAccountChecksModelAgainstData: dpfl account refuses a model that does
// not fit the data a LEAF folder holds, with the message dpfl run gives.
func TestAccountChecksModelAgainstData(t *testing.T) {
	leaf := leafFEMNIST(t)
	cfg, _, err := Load([]byte(fileRun("leaf", leaf, "lstm", "")), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const want = "model.kind: lstm predicts the next token of text, but data.path holds leaf-femnist images"
	_, perr := NewPlan(context.Background(), cfg, Options{})
	_, aerr := NewAccount(context.Background(), cfg, Options{})
	for name, err := range map[string]error{"NewPlan": perr, "NewAccount": aerr} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	if perr != nil && aerr != nil && perr.Error() != aerr.Error() {
		t.Errorf("run and account differ:\n%v\n%v", perr, aerr)
	}
}

// TestDataFIFORefused: data.path naming a named pipe is refused at once,
// naming the key and the file, by the input fingerprint (the run ID), the
// load and the census, instead of blocking in open for ever.
func TestDataFIFORefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "corpus.jsonl")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	cfg, _, err := Load([]byte(textYAML(fifo)), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"Fingerprint": func() error { _, err := Fingerprint(cfg, Options{}); return err },
		"NewPlan":     func() error { _, err := NewPlan(context.Background(), cfg, Options{}); return err },
		"NewAccount":  func() error { _, err := NewAccount(context.Background(), cfg, Options{}); return err },
	} {
		done := make(chan error, 1)
		go func() { done <- call() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "data.path: ") || !strings.Contains(err.Error(), fifo+" is not a regular file") {
				t.Errorf("%s: %v, want data.path: %s is not a regular file", name, err, fifo)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s blocked on the named pipe", name)
		}
	}
}

// TestLoadInterruptible: cancelling the context while a large corpus (50
// MB) is being read and tokenized stops the load within a second, with the
// context's error (the full load takes a few seconds on two cores).
func TestLoadInterruptible(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	text := strings.Repeat("the quick brown fox jumps over the lazy dog and keeps running ", 40)
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(w, `{"user": "u%d", "text": "%d %s"}`+"\n", i%500, i, text)
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load([]byte(textYAML(path)), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for name, call := range map[string]func(context.Context) error{
		"NewPlan":    func(ctx context.Context) error { _, err := NewPlan(ctx, cfg, Options{}); return err },
		"NewAccount": func(ctx context.Context) error { _, err := NewAccount(ctx, cfg, Options{}); return err },
		"Run":        func(ctx context.Context) error { _, err := Run(ctx, cfg, Options{OutDir: out}); return err },
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- call(ctx) }()
		time.Sleep(300 * time.Millisecond)
		cancel()
		stopped := time.Now()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v, want the context's error", name, err)
			}
			if d := time.Since(stopped); d > time.Second {
				t.Errorf("%s stopped %v after the cancel", name, d)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not stop", name)
		}
	}
	// Hashing the inputs for the run ID stops too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := FingerprintContext(ctx, cfg, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("fingerprint of a cancelled run: %v", err)
	}
}
