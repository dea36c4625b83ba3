#!/usr/bin/env bash
# Regenerates results/paper/mechanisms/ (the mechanism tables of the papers,
# no training): Choquette-Choo et al. 2023 Table 2 (n = 2052, k = 6, b = 342) and
# Denisov et al. 2022's comparison of the optimal factorization with the tree estimators.
#
#   experiments/paper/mechanisms.sh            # from the repository root
#
# Every number comes from `dpfl mechanism -json` (raw/*.json, one file per
# call); experiments/paper/mechanisms (Go) renders table2.{md,csv,json},
# seed000.{md,json} and README.md from them and the papers' printed values.
# Optimized strategies are cached in $DPFL_CACHE (default: the dpfl user
# cache), so a second run takes seconds. dpfl is built in pure Go (the
# default build; every call takes at most about a minute since the
# multi-epoch MF goes through its dual); DPFL_TAGS=lapack builds it with
# LAPACK/OpenBLAS instead (apt-get install -y libopenblas-dev
# liblapacke-dev; same numbers to the optimizer tolerance).
#
# The script resumes: a call whose raw/NAME.json is complete and whose wall
# time is in raw/timings.tsv is not run again, so an interrupted regeneration
# keeps its finished calls and their first-run times. FORCE=1 redoes them all.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=results/paper/mechanisms
RAW=$OUT/raw
CACHE=${DPFL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dpfl/strategies}
TAGS=${DPFL_TAGS-}
BIN=$(mktemp -d)/dpfl
mkdir -p "$RAW"
if [ "$TAGS" = lapack ]; then
	CGO_LDFLAGS="-llapacke -lopenblas" go build -tags lapack -o "$BIN" ./cmd/dpfl
else
	go build -o "$BIN" ./cmd/dpfl
fi
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-2}
if [ -n "${FORCE-}" ] || [ ! -f "$RAW/timings.tsv" ]; then
	: > "$RAW/timings.tsv"
fi
sed -i '/^total\t/d' "$RAW/timings.tsv"
# run NAME ARGS...: one `dpfl mechanism -json` call into raw/NAME.json, its
# stderr (L-BFGS progress) into raw/NAME.log and its wall time into timings.tsv.
run() {
	local name=$1
	shift
	local t0 t1
	if [ -s "$RAW/$name.json" ] && grep -q "^$name	" "$RAW/timings.tsv"; then
		echo "$name: done earlier, kept" >&2
		return
	fi
	sed -i "/^$name	/d" "$RAW/timings.tsv"
	t0=$(date +%s.%N)
	"$BIN" mechanism "$@" -json -cache "$CACHE" > "$RAW/$name.json" 2> "$RAW/$name.log"
	t1=$(date +%s.%N)
	printf '%s\t%.1f\n' "$name" "$(echo "$t1 - $t0" | bc)" >> "$RAW/timings.tsv"
	echo "$name: $(tail -n 1 "$RAW/timings.tsv" | cut -f2) s" >&2
}

# Denisov et al. 2022: single participation, all strategies (best first), prefix sums at
# n = 256 and 2048, momentum 0.9 at n = 256.
run s0-prefix-256 -n 256 -workload prefix
run s0-prefix-2048 -n 2048 -workload prefix
run s0-momentum-256 -n 256 -workload momentum -momentum 0.9

# Choquette-Choo et al. 2023 Table 2: every mechanism under (6,342)-participation and
# 342-min-sep (the second call is served from the cache). Every L-BFGS run
# stops when the loss improved by less than 1e-6 (relative) over 20
# iterations (the table has 2 decimals). The multi-epoch MF (2.1 million
# variables) is solved through its Lagrange dual (7182 multiplier entries;
# the certificate's gap is printed).
T2=(-n 2052 -k 6 -b 342 -reltol 1e-6 -maxiter 1000 -progress)
# both NAME ARGS...: NAME under (k,b) and under min-sep.
both() {
	local name=$1
	shift
	run "t2-$name-kb" "${T2[@]}" -participation kb "$@"
	run "t2-$name-minsep" "${T2[@]}" -participation minsep "$@"
}
both tree -strategy tree-full
both sgd -strategy identity
both bandmf342-T -strategy bandmf -bands 342
both bandmf342-F -strategy bandmf-f -bands 342
both me-F -strategy multi-epoch-f
both me-T -strategy multi-epoch
both bandmf128-T -strategy bandmf -bands 128
both bandmf128-F -strategy bandmf-f -bands 128

# The total is the sum of the calls' first-run wall times.
awk -F'\t' '{ s += $2 } END { printf "total\t%.1f\n", s }' "$RAW/timings.tsv" > "$RAW/timings.tsv.total"
cat "$RAW/timings.tsv.total" >> "$RAW/timings.tsv" && rm "$RAW/timings.tsv.total"
go run ./experiments/paper/mechanisms -raw "$RAW" -out "$OUT"
