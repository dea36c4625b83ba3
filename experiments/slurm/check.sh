#!/bin/bash
# dpfl: run an experiment grid on a real Slurm cluster and check it against an unsharded run.
#
#   sudo bash experiments/slurm/check.sh [WORK_DIR]      # from the repository root; about 3 minutes
#
# Brings up a single-node Slurm from Debian's packages (slurm-wlm, munge: installed with apt-get
# if missing; this needs root), builds dpfl, and then:
#   1. submits a 4-point grid as a 2-task array (experiments/slurm/grid.sbatch) writing to one
#      folder, and, while task 0's first attempt runs, submits task 0 again (a resubmission);
#   2. waits for the jobs, and checks that each point was trained exactly once over the three
#      attempts and that the resubmitted task overlapped the first;
#   3. runs the same grid unsharded, without Slurm, into another folder;
#   4. compares the two index.csv files: equal except the wall-time column (wall_seconds);
#   5. builds dpfl with MPI (installing Open MPI from Debian's packages if missing), runs the
#      quickstart as one 2-task job (experiments/slurm/run-mpi.sbatch: mpirun inside the
#      allocation) and compares its run folder with a single-process run's, byte for byte
#      (summary.json's wall_seconds and workers aside).
# Prints PASS or FAIL (exit 1). The daemons it started are stopped at the end. Not part of CI
# (it installs packages); its output is quoted in experiments/README.md.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-/tmp/dpfl-slurm-check}
say() { echo "== $*"; }

[ "$(id -u)" = 0 ] || { echo "check.sh needs root (apt-get, munged, slurmd)" >&2; exit 2; }
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
	say "installing slurm-wlm and munge from Debian's packages"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi
say "$(slurmctld -V), $(munged -V 2>&1 | head -1)"

rm -rf "$work"
mkdir -p "$work"/{spool/ctld,spool/d,log,run}
host=$(hostname -s)
cpus=$(nproc)

# munge: a key, and the daemon as the munge user.
if [ ! -s /etc/munge/munge.key ]; then
	mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
mkdir -p /run/munge && chown munge:munge /run/munge
started=()
if ! munge -n >/dev/null 2>&1; then
	runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
	started+=(/run/munge/munged.pid)
fi
munge -n | unmunge >/dev/null && say "munge works"

# A one-node cluster: this machine, 4 task slots (so a resubmitted task runs beside the array
# however many cores the machine has), no cgroups, no accounting database.
mkdir -p /etc/slurm
conf=/etc/slurm/slurm.conf
if [ -e "$conf" ] && ! grep -q "^# dpfl slurm check" "$conf"; then
	echo "$conf exists and is not this check's: refusing to replace it" >&2
	exit 2
fi
cat >"$conf" <<EOF
# dpfl slurm check (experiments/slurm/check.sh)
ClusterName=dpflcheck
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation=$work/spool/ctld
SlurmdSpoolDir=$work/spool/d
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
NodeName=$host CPUs=4 State=UNKNOWN
PartitionName=check Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
cleanup() {
	for pid in "$work/run/slurmd.pid" "$work/run/slurmctld.pid" "${started[@]}"; do
		[ -s "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true
	done
}
trap cleanup EXIT
slurmctld -i
slurmd
started+=("$work/run/slurmctld.pid" "$work/run/slurmd.pid")
for _ in $(seq 60); do
	sinfo -h -o %t 2>/dev/null | grep -qx idle && break
	sleep 1
done
sinfo -h -o "%P %D %t %c" | sed 's/^/== sinfo: partition, nodes, state, cpus: /'

say "building dpfl"
(cd "$repo" && go build -o "$work/dpfl" ./cmd/dpfl)
cat >"$work/grid.yaml" <<'EOF'
# 4 points: DP-FedAvg and tree DP-FTRL at epsilon 2 and 8 (MNIST, 6,000 IID clients, logreg).
name: slurm-check
seed: 1
rounds: 300
data:
  dataset: mnist
  partition: iid
  clients: 6000
model:
  kind: logreg
client:
  batch_size: 5
  lr: 0.2
participation:
  kind: uniform
  cohort: 500
aggregator:
  clip: 1.0
privacy:
  delta: 1.0e-5
server:
  lr: 0.5
  momentum: 0.9
eval:
  every: 50
grid:
  aggregator.kind: [dpfedavg, tree]
  privacy.epsilon: [2, 8]
EOF

say "submitting the grid as a 2-task array"
export DPFL="$work/dpfl"
cd "$work"
sb() { sbatch --parsable --cpus-per-task=1 --mem=0 -o "$work/log/%x-%A_%a-$1.out" "${@:2}"; }
job=$(sb first --array=0-1 --job-name=grid "$repo/experiments/slurm/grid.sbatch" "$work/grid.yaml" "$work/sharded")
echo "array job $job"
for _ in $(seq 600); do
	[ "$(squeue -h -j "${job}_0" -t R -o %i 2>/dev/null)" != "" ] && break
	sleep 0.2
done
say "task 0 is running: resubmitting task 0 (shard 0/2) while its first attempt runs"
again=$(DPFL_SHARDS=2 sb again --array=0 --job-name=grid "$repo/experiments/slurm/grid.sbatch" "$work/grid.yaml" "$work/sharded")
echo "resubmitted as job $again"
while [ -n "$(squeue -h -o %i)" ]; do sleep 1; done
say "all tasks done"
for f in "$work"/log/grid-*.out; do
	echo "--- $(basename "$f")"
	cat "$f"
done

say "the same grid, unsharded and without Slurm"
"$work/dpfl" grid -quiet -out "$work/unsharded" "$work/grid.yaml"

fail=0
ran=$(cat "$work"/log/grid-*.out | awk '/^ran [0-9]+,/ { n += $2 } END { print n + 0 }')
echo "points trained over the three task attempts: $ran (want 4)"
[ "$ran" = 4 ] || fail=1
# The resubmitted task started before the first attempt of task 0 ended.
first0=$(cat "$work"/log/grid-"${job}"_0-first.out)
s1=$(sed -n 's/^task 0\/2 job [0-9]* start //p' <<<"$first0")
e1=$(sed -n 's/^task 0\/2 job [0-9]* end //p' <<<"$first0")
s2=$(sed -n 's/^task 0\/2 job [0-9]* start //p' "$work"/log/grid-"${again}"_0-again.out)
echo "task 0: first attempt ran $s1 .. $e1, resubmission started $s2"
if awk -v s1="$s1" -v e1="$e1" -v s2="$s2" 'BEGIN { exit !(s2 > s1 && s2 < e1) }'; then
	echo "the resubmission overlapped the first attempt"
else
	echo "the resubmission did not overlap the first attempt"
	fail=1
fi
drop_wall() { awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "wall_seconds") w = i } { if (w && NR > 1) $w = ""; print }' "$1"; }
say "index.csv, sharded on Slurm (wall_seconds blanked):"
drop_wall "$work/sharded/index.csv"
if diff <(drop_wall "$work/sharded/index.csv") <(drop_wall "$work/unsharded/index.csv") >"$work/index.diff"; then
	echo "index.csv: sharded on Slurm == unsharded (every column but wall_seconds)"
else
	echo "index.csv differs:"
	cat "$work/index.diff"
	fail=1
fi
say "one run over MPI: the quickstart as a 2-task job"
if ! command -v mpirun >/dev/null || ! pkg-config --exists ompi-c 2>/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
(cd "$repo" && go build -tags mpi -o "$work/dpfl-mpi" ./cmd/dpfl)
# The jobs run as root here (SlurmUser=root): Open MPI refuses root unless told.
mjob=$(DPFL="$work/dpfl-mpi" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
	sbatch --parsable --ntasks=2 --cpus-per-task=1 --mem=0 -o "$work/log/mpi-%j.out" \
	"$repo/experiments/slurm/run-mpi.sbatch" "$repo/experiments/quickstart.yaml" "$work/mpi")
echo "MPI job $mjob"
while [ -n "$(squeue -h -j "$mjob" -o %i 2>/dev/null)" ]; do sleep 1; done
cat "$work/log/mpi-$mjob.out"
"$work/dpfl" run -quiet -workers 2 -out "$work/single" "$repo/experiments/quickstart.yaml" >/dev/null
strip() { grep -v -e '"wall_seconds":' -e '"workers":' "$1"; }
a=$(ls -d "$work"/mpi/*/ 2>/dev/null | head -1) b=$(ls -d "$work"/single/*/)
same=1
[ -n "$a" ] && [ "$(cd "$a" && ls)" = "$(cd "$b" && ls)" ] || same=0
for f in $( [ -n "$a" ] && cd "$a" && ls); do
	if [ "$f" = summary.json ]; then diff <(strip "$a/$f") <(strip "$b/$f") >/dev/null || same=0
	else cmp -s "$a/$f" "$b/$f" || same=0; fi
done
if [ "$same" = 1 ]; then
	echo "run folder: 2-task MPI job on Slurm == one process (every file; summary.json's timing aside)"
else
	echo "the 2-task MPI job's run folder differs from one process's (or is missing)"
	fail=1
fi
if [ "$fail" = 0 ]; then echo PASS; else echo FAIL; exit 1; fi
