// Command mechanisms renders results/paper/mechanisms/ from the raw
// `dpfl mechanism -json` outputs that experiments/paper/mechanisms.sh writes:
// Choquette-Choo et al. 2023 Table 2 and Denisov et al.'s (2022) comparison of the optimal
// factorization with the tree estimators, each next to the papers' printed
// values and reference losses of an independent implementation.
//
//	go run ./experiments/paper/mechanisms -raw results/paper/mechanisms/raw -out results/paper/mechanisms
//
// The rendering is deterministic: the same raw files give the same bytes (a
// test re-renders the committed raw files and compares). It reads the JSON
// through strategy.Report, the type dpfl mechanism writes.
//
// The papers: Choquette-Choo, Ganesh, McKenna, McMahan, Rush, Thakurta and Xu
// (2023), "(Amplified) Banded Matrix Factorization: A unified approach to
// private training", NeurIPS 2023, arXiv:2306.08153; Denisov, McMahan, Rush,
// Smith and Thakurta (2022), "Improved Differential Privacy for SGD via
// Optimal Private Linear Operators on Adaptive Streams", NeurIPS 2022,
// arXiv:2202.08312.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

func main() {
	raw := flag.String("raw", "results/paper/mechanisms/raw", "directory of the raw dpfl mechanism -json outputs")
	out := flag.String("out", "results/paper/mechanisms", "output directory")
	flag.Parse()
	files, err := render(*raw)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mechanisms: %v\n", err)
		os.Exit(1)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(*out, name), files[name], 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "mechanisms: %v\n", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "mechanisms: wrote %s\n", filepath.Join(*out, name))
	}
}
