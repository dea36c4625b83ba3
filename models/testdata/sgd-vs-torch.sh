#!/usr/bin/env bash
# sgd-vs-torch.sh: local-SGD throughput of dpfl's models against PyTorch on the CPU, side by side.
# For each model (default: logreg mlp cnn cnn-large lstm transformer resnet-gn) and batch (16, 64) it runs
# dpfl's BenchmarkLocalSGD/<model>/batch=<b>/workers=1 and then the same model, shapes and SGD step in
# PyTorch on one thread (torch_layers.py beside this file), back to back so both see the same machine load,
# and prints examples/s and the ratio dpfl/torch, then the worst ratio. On a shared machine, compare ratios
# and repeat before believing a small change. A dev tool (the tests do not need PyTorch).
# Needs Debian's PyTorch: apt-get install -y python3-torch libopenblas0-pthread
# Usage, from the project root: models/testdata/sgd-vs-torch.sh [-s SECONDS] [MODEL ...]
set -u
here=$(cd "$(dirname "$0")" && pwd); secs=2
[ "${1:-}" = "-s" ] && { secs=$2; shift 2; }
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
