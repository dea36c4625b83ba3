#!/bin/bash
# dpfl: one run spread over MPI ranks, checked against the single-process run.
#
#   bash experiments/mpi/check.sh [WORK_DIR]      # from anywhere; a couple of minutes
#
# Installs Open MPI from Debian's packages if missing (openmpi-bin, libopenmpi-dev: needs root),
# builds dpfl twice (the default pure-Go build, and -tags mpi), and then:
#   1. runs experiments/quickstart.yaml with the default build (one process, 2 workers);
#   2. runs it with the MPI build on 1, 2 and 3 ranks (mpirun -np N, 1 worker per rank);
#   3. compares every file of the four run folders byte for byte (summary.json's wall_seconds,
#      workers and resumed_from_round lines aside), and does the same on 2 ranks for adaptive
#      clipping, DP-AGD and balls-in-bins amplification (experiments/*.yaml) and for the
#      quickstart with an audit's canaries;
#   4. kills rank 1 of a 2-rank run once its first checkpoint is written: the job must end on
#      every rank within 10 s; the same command then resumes from rank 0's checkpoint and must
#      give the folder of step 1;
#   5. starts 2 ranks with different configs, and 2 ranks with different executables: each
#      must be refused at the start with one line naming the rank.
# Prints PASS or FAIL (exit 1). Exits 77 (not run) when Open MPI is missing and cannot be installed
# (not root, or apt-get fails).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-/tmp/dpfl-mpi-check}
say() { echo "== $*"; }

if ! command -v mpirun >/dev/null || ! pkg-config --exists ompi-c 2>/dev/null; then
	[ "$(id -u)" = 0 ] || { echo "check.sh: Open MPI is missing and installing it needs root (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 77; }
	say "installing openmpi-bin and libopenmpi-dev from Debian's packages"
	if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null; }; then
		echo "check.sh: could not install Open MPI from Debian's packages (apt-get failed: no package mirror?)" >&2
		exit 77
	fi
fi
say "$(mpirun --version 2>&1 | head -1)"
rm -rf "$work"
mkdir -p "$work"
say "building dpfl (default) and dpfl-mpi (-tags mpi)"
(cd "$repo" && go build -o "$work/dpfl" ./cmd/dpfl && go build -tags mpi -o "$work/dpfl-mpi" ./cmd/dpfl)
cfg=$repo/experiments/quickstart.yaml
mpi() { mpirun --oversubscribe --allow-run-as-root "$@"; }
strip() { grep -v -e '"wall_seconds":' -e '"workers":' -e '"resumed_from_round":' "$1"; }
fail=0
same() { # same DIR_A DIR_B: every file equal (summary.json's timing lines aside)
	local a=$1 b=$2 f ok=1
	for f in $(cd "$a" && ls); do
		if [ "$f" = summary.json ]; then
			diff <(strip "$a/$f") <(strip "$b/$f") >/dev/null || ok=0
		else
			cmp -s "$a/$f" "$b/$f" || ok=0
		fi
		[ "$ok" = 1 ] || { echo "$f differs: $a, $b"; return 1; }
	done
	[ "$(cd "$a" && ls)" = "$(cd "$b" && ls)" ] || { echo "the files differ: $a, $b"; return 1; }
}

say "1. one process, 2 workers (default build)"
"$work/dpfl" run -quiet -workers 2 -out "$work/single" "$cfg"
ref=$(ls -d "$work"/single/*/)
for n in 1 2 3; do
	say "2. $n rank(s) x 1 worker (mpirun -np $n)"
	start=$(date +%s.%N)
	mpi -np "$n" "$work/dpfl-mpi" run -mpi -quiet -workers 1 -out "$work/np$n" "$cfg" | grep -e '^trained' -e '^run '
	echo "wall $(echo "$(date +%s.%N) - $start" | bc) s"
	if same "$ref" "$(ls -d "$work"/np"$n"/*/)"; then echo "3. $n rank(s) == one process, byte for byte"; else fail=1; fi
done

# An audit: the quickstart with 100 canaries.
{ cat "$cfg"; printf 'audit:\n  canaries: 100\n  observe: rounds\n'; } >"$work/audit.yaml"
for name in adaptive-clip audit dp-agd balls-in-bins; do
	say "2b. $name: one process, and 2 ranks x 1 worker"
	other=$repo/experiments/$name.yaml
	[ "$name" = audit ] && other=$work/audit.yaml
	"$work/dpfl" run -quiet -workers 2 -out "$work/single-$name" "$other" >/dev/null
	mpi -np 2 "$work/dpfl-mpi" run -mpi -quiet -workers 1 -out "$work/np2-$name" "$other" | grep -e '^trained' -e '^run '
	if same "$(ls -d "$work"/single-"$name"/*/)" "$(ls -d "$work"/np2-"$name"/*/)"; then echo "3b. $name: 2 ranks == one process, byte for byte"; else fail=1; fi
done

say "4. kill rank 1 of 2 after the first checkpoint, then rerun the same command"
mpirun --oversubscribe --allow-run-as-root -np 2 "$work/dpfl-mpi" run -mpi -quiet -workers 1 -out "$work/killed" "$cfg" >"$work/killed.out" 2>&1 &
launcher=$! # mpirun itself: the ranks are its children
for _ in $(seq 600); do
	ls "$work"/killed/*/checkpoint.bin >/dev/null 2>&1 && break
	sleep 0.05
done
victim=""
for pid in $(ps -o pid= --ppid "$launcher"); do
	if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then victim=$pid; fi
done
if [ -z "$victim" ]; then
	echo "rank 1 not found among mpirun's children (the run ended first?)"
	fail=1
	wait "$launcher" || true
else
	killed=$(date +%s.%N)
	kill -9 "$victim"
	code=0
	wait "$launcher" || code=$?
	took=$(echo "$(date +%s.%N) - $killed" | bc)
	echo "killed rank 1 (pid $victim): mpirun exited with $code after ${took}s:"
	grep -v '^ *$' "$work/killed.out" | grep -v -e '^---' | head -4
	if [ "$code" = 0 ] || [ "$(echo "$took > 10" | bc)" = 1 ]; then echo "the job did not end within 10 s with an error"; fail=1; fi
	mpi -np 2 "$work/dpfl-mpi" run -mpi -quiet -workers 1 -out "$work/killed" "$cfg" 2>&1 | grep -e resuming -e '^run '
	if same "$ref" "$(ls -d "$work"/killed/*/)"; then echo "resumed run == one process, byte for byte"; else fail=1; fi
fi

say "5. ranks that differ are refused at the start"
sed 's/^seed: 1$/seed: 2/' "$cfg" >"$work/seed2.yaml"
if out=$(mpi -np 1 "$work/dpfl-mpi" run -mpi -quiet -out "$work/mismatch" "$cfg" : -np 1 "$work/dpfl-mpi" run -mpi -quiet -out "$work/mismatch" "$work/seed2.yaml" 2>&1); then
	echo "2 ranks with different configs ran"; fail=1
fi
grep '^dpfl run' <<<"$out" || { echo "no message for different configs"; fail=1; }
cp "$work/dpfl-mpi" "$work/dpfl-mpi-other" && echo >>"$work/dpfl-mpi-other"
if out=$(mpi -np 1 "$work/dpfl-mpi" run -mpi -quiet -out "$work/mismatch" "$cfg" : -np 1 "$work/dpfl-mpi-other" run -mpi -quiet -out "$work/mismatch" "$cfg" 2>&1); then
	echo "2 ranks with different executables ran"; fail=1
fi
grep '^dpfl run' <<<"$out" || { echo "no message for different executables"; fail=1; }

if [ "$fail" = 0 ]; then echo PASS; else echo FAIL; exit 1; fi
