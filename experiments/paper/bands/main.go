// Command bands computes the table of optimal band counts of amplified
// BandMF (no training): for n = 1024 steps of the prefix-sum workload, every
// ε and number of epochs E, the band count b̂ whose amplified BandMF has the
// smallest RMSE, next to the table printed in Choquette-Choo, Ganesh,
// McKenna, McMahan, Rush, Thakurta and Xu (2023), "(Amplified) Banded Matrix
// Factorization: A unified approach to private training", NeurIPS 2023,
// arXiv:2306.08153, App G.1 (Fig 5).
//
//	go run ./experiments/paper/bands -out results/paper/bands
//
// The setting (the paper's §5 and App F): b̂ bands split the data into b̂
// equal groups; step t admits group t mod b̂ only, and each of its examples
// takes part with probability q = E·b̂/n, so an example takes part E times in
// expectation (kb-poisson participation). Amplified BandMF's privacy is that
// of n/b̂ Poisson-subsampled Gaussian mechanisms (rate q, noise multiplier z)
// composed, accounted in RDP with the CKS conversion, zero-out adjacency;
// b̂ ranges over the powers of two up to n/E (at q = 1 there is no
// amplification left). The RMSE of the prefix sums is
// z · sens · sqrt(‖B‖²_F / n) with sens the single-participation
// sensitivity of the b̂-banded C (1: unit column norms); the batch size, the
// same for every b̂ at a given (ε, E), is left out since it does not change
// the argmin.
//
// The BandMF strategies (one per b̂; they do not depend on ε or E) are kept
// in the strategy cache (-cache). Every cell is appended to cells.csv as it
// finishes, and cells already there are not recomputed, so an interrupted
// run resumes; -render writes table.md from the CSVs alone. -fine redoes the
// accounting over a finer grid of RDP orders (FineOrders) into
// cells-fine.csv; -pld accounts with privacy loss distributions into
// cells-pld.csv.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"dpfl/privacy"
)

func main() {
	out := flag.String("out", "results/paper/bands", "output directory (cells.csv, table.md)")
	cache := flag.String("cache", "", "strategy cache directory (default: the dpfl user cache)")
	maxBands := flag.Int("max-bands", N, "compute only band counts up to this (cells needing more are left out)")
	render := flag.Bool("render", false, "only render table.md from cells.csv and cells-fine.csv")
	fine := flag.Bool("fine", false, "account over FineOrders (into cells-fine.csv) instead of the accountant's default orders (cells.csv)")
	maxEpochs := flag.Int("max-epochs", N, "compute only the columns of at most this many epochs")
	pld := flag.Bool("pld", false, "account with privacy loss distributions (into cells-pld.csv)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *out, *cache, limits{*maxBands, *maxEpochs}, *render, *fine, *pld); err != nil {
		fmt.Fprintf(os.Stderr, "bands: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, cacheDir string, lim limits, renderOnly, fine, pld bool) error {
	csvPath, finePath, pldPath := filepath.Join(out, "cells.csv"), filepath.Join(out, "cells-fine.csv"), filepath.Join(out, "cells-pld.csv")
	if fine && pld {
		return fmt.Errorf("-fine (RDP orders) and -pld exclude each other")
	}
	path := csvPath
	switch {
	case fine:
		path = finePath
	case pld:
		path = pldPath
	}
	if !renderOnly {
		if cacheDir == "" {
			d, err := os.UserCacheDir()
			if err != nil {
				return fmt.Errorf("no -cache given and no user cache directory: %v", err)
			}
			cacheDir = filepath.Join(d, "dpfl", "strategies")
		}
		c := newComputer(cacheDir, func(s string) { fmt.Fprintln(os.Stderr, "bands: "+s) })
		if fine {
			c.orders = FineOrders()
		}
		if pld {
			c.account = privacy.MethodPLD
		}
		if err := c.fill(ctx, path, lim); err != nil {
			return err
		}
	}
	cells, err := readCells(csvPath)
	if err != nil {
		return err
	}
	text := "## Default RDP orders\n\n" + renderTable(cells)
	if fc, err := readCells(finePath); err == nil {
		text += "\n## Fine RDP orders\n\n" + renderTable(fc)
	}
	if pc, err := readCells(pldPath); err == nil {
		text += "\n## Privacy loss distributions\n\n" + renderTable(pc)
	}
	return os.WriteFile(filepath.Join(out, "table.md"), []byte(text), 0o644)
}
