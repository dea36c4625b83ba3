#!/usr/bin/env bash
# sgd-vs-torch.sh: local-SGD throughput of dpfl's models against PyTorch on the CPU, side by side.
# For each model (default: logreg mlp cnn cnn-large lstm transformer resnet-gn) and batch (16, 64) it runs
# dpfl's BenchmarkLocalSGD/<model>/batch=<b>/workers=1 and then the same model, shapes and SGD step in
# PyTorch on one thread (torch_layers.py beside this file), back to back so both see the same machine load,
# and prints examples/s and the ratio dpfl/torch, then the worst ratio. On a shared machine, compare ratios
# and repeat before believing a small change. A dev tool (the tests do not need PyTorch).
# Needs Debian's PyTorch: apt-get install -y python3-torch libopenblas0-pthread
# Usage, from the project root: models/testdata/sgd-vs-torch.sh [-s SECONDS] [MODEL ...]
#
# models/testdata/sgd-vs-torch.sh -dpsgd [RUNS] compares per-example DP-SGD of the transformer instead:
# dpfl runs dpsgd-transformer.yaml (one 20-token window per client, cohort 64, DP-FedAvg) pinned to one CPU
# (taskset; GOMAXPROCS=1 where taskset is missing), timed over rounds 2-39 from its -events, against
# torch_layers.py -dpsgd (functorch per-example gradients of one batched pass, batch 64) on one thread,
# RUNS times each (default 2), and prints examples/s and the ratio.
set -u
here=$(cd "$(dirname "$0")" && pwd); secs=2
[ "${1:-}" = "-s" ] && { secs=$2; shift 2; }
if [ "${1:-}" = "-dpsgd" ]; then
  runs=${2:-2}
  export OPENBLAS_NUM_THREADS=1
  /usr/bin/python3 -c "import torch" 2>/dev/null || { echo "PyTorch missing: apt-get install -y python3-torch libopenblas0-pthread"; exit 2; }
  [ -d models ] || { echo "run from the project root"; exit 2; }
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  go build -o "$tmp/dpfl" ./cmd/dpfl || exit 1
  pin="taskset -c 0"; command -v taskset >/dev/null || pin="env GOMAXPROCS=1"
  for i in $(seq "$runs"); do
    rm -rf "$tmp/out" "$tmp/ev"
    $pin "$tmp/dpfl" run -quiet -workers 1 -events "$tmp/ev" -out "$tmp/out" "$here/dpsgd-transformer.yaml" >/dev/null || exit 1
    d=$(/usr/bin/python3 - "$tmp/ev" <<'PY'
import json, sys, datetime
t = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("event") == "round":
        s = e["time"].rstrip("Z"); head, frac = (s.split(".") + ["0"])[:2]
        t[e["round"]] = datetime.datetime.fromisoformat(head).replace(tzinfo=datetime.timezone.utc).timestamp() + float("0." + frac)
print(round(37 * 64 / (t[39] - t[2]), 1))
PY
)
    t=$(taskset -c 0 /usr/bin/python3 "$here/torch_layers.py" -dpsgd 5 64 2>/dev/null || /usr/bin/python3 "$here/torch_layers.py" -dpsgd 5 64)
    t=$(echo "$t" | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['examples_per_s'])")
    printf 'per-example DP-SGD, transformer, cohort/batch 64: dpfl %8s ex/s   torch %8s ex/s   ratio %s\n' "$d" "$t" "$(/usr/bin/python3 -c "print(round($d/$t, 3))")"
  done
  exit 0
fi
models=${*:-logreg mlp cnn cnn-large lstm transformer resnet-gn}
export OPENBLAS_NUM_THREADS=1
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "PyTorch missing: apt-get install -y python3-torch libopenblas0-pthread"; exit 2; }
[ -d models ] || { echo "run from the project root"; exit 2; }
bin=$(mktemp); trap 'rm -f "$bin"' EXIT
go test -c -o "$bin" ./models/ || exit 1
worst=
for m in $models; do for b in 16 64; do
  d=$(cd models && "$bin" -test.run '^$' -test.bench "LocalSGD/^$m\$/batch=$b/workers=1\$" -test.benchtime "${secs}s" 2>/dev/null | awk '/examples\/s/{print $(NF-1)}')
  [ -n "$d" ] || { echo "$m batch=$b: dpfl benchmark printed nothing"; exit 1; }
  t=$(/usr/bin/python3 "$here/torch_layers.py" "$secs" "$m/batch=$b" | /usr/bin/python3 -c "import json,sys; print(list(json.load(sys.stdin)['examples_per_s'].values())[0])")
  r=$(/usr/bin/python3 -c "print(round($d/$t, 3))")
  printf '%-12s batch=%-3s dpfl %10s ex/s   torch %10s ex/s   ratio %s\n' "$m" "$b" "$d" "$t" "$r"
  worst=$(/usr/bin/python3 -c "import sys; print(min(float(x) for x in sys.argv[1:] if x))" $worst $r)
done; done
echo "local SGD, dpfl/torch (1 worker vs 1 thread): worst ratio $worst"
