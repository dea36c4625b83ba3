"""PyTorch twins of BenchmarkLocalSGD's models (bench_test.go: the five presets logreg, mlp, cnn,
cnn-large, lstm and the layer-list models transformer, resnet-gn), for comparing local-SGD throughput
with dpfl on one CPU thread (sgd-vs-torch.sh beside this file runs both side by side). A dev tool: the
tests do not run it. One forward, backward and SGD update per iteration, batch 16 and 64; prints
examples/s per model and batch as JSON; "-mem" prints the resident-memory growth of building a model and
training 10 steps instead; "-dpsgd" runs per-example DP-SGD on the transformer instead (per-example
gradients of one batched pass by functorch's vmap over grad, each clipped to norm 1, summed, Gaussian
noise added, a momentum step), the yardstick for dpfl's per-example runs (one window per client).
  /usr/bin/python3 models/testdata/torch_layers.py [seconds] [model/batch=B ...]
  /usr/bin/python3 models/testdata/torch_layers.py -mem transformer/batch=16
  /usr/bin/python3 models/testdata/torch_layers.py -dpsgd seconds batch"""
import json, sys, time
import torch, torch.nn as nn, torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(1)

class CNN(nn.Module):  # the (E)MNIST CNN of the papers as dpfl's cnn preset builds it (pads 3 and 1)
    def __init__(s, k=62):
        super().__init__(); s.c1 = nn.Conv2d(1, 16, 8, 2, 3); s.c2 = nn.Conv2d(16, 32, 4, 2, 1)
        s.f1 = nn.Linear(32 * 7 * 7, 32); s.f2 = nn.Linear(32, k)
    def forward(s, x):
        x = F.relu(s.c1(x)); x = F.relu(s.c2(x)); return s.f2(F.relu(s.f1(x.flatten(1))))

class CNNLarge(nn.Module):  # the cnn-large preset: two 3x3 convolutions, max-pool, dropout, dense 128
    def __init__(s, k=62):
        super().__init__(); s.c1 = nn.Conv2d(1, 32, 3); s.c2 = nn.Conv2d(32, 64, 3)
        s.f1 = nn.Linear(64 * 12 * 12, 128); s.f2 = nn.Linear(128, k); s.d1 = nn.Dropout(0.25); s.d2 = nn.Dropout(0.5)
    def forward(s, x):
        x = F.relu(s.c1(x)); x = F.relu(s.c2(x)); x = s.d1(F.max_pool2d(x, 2)).flatten(1)
        return s.f2(s.d2(F.relu(s.f1(x))))

class LSTM(nn.Module):  # the lstm preset: embedding 32, LSTM 128, projection 32, vocabulary head
    def __init__(s, V=1004, E=32, H=128):
        super().__init__(); s.e = nn.Embedding(V, E); s.l = nn.LSTM(E, H, batch_first=True)
        s.p = nn.Linear(H, E); s.o = nn.Linear(E, V)
    def forward(s, x):
        h, _ = s.l(s.e(x)); return s.o(s.p(h)).reshape(-1, s.o.out_features)

class Transformer(nn.Module):  # pre-norm blocks, causal attention, 4x GELU MLP, final norm, vocab head
    def __init__(s, V=1004, T=20, D=128, L=2, H=4):
        super().__init__(); s.e = nn.Embedding(V, D); s.p = nn.Parameter(torch.zeros(T, D))
        s.b = nn.ModuleList(nn.TransformerEncoderLayer(D, H, 4 * D, 0.0, "gelu", batch_first=True, norm_first=True)
                            for _ in range(L))
        s.n = nn.LayerNorm(D); s.o = nn.Linear(D, V)
        s.register_buffer("mask", torch.triu(torch.full((T, T), float("-inf")), 1))
    def forward(s, x):
        h = s.e(x) + s.p
        for b in s.b:
            h = b(h, src_mask=s.mask)
        return s.o(s.n(h)).reshape(-1, s.o.out_features)

class Block(nn.Module):
    def __init__(s, i, o, stride):
        super().__init__()
        s.c1 = nn.Conv2d(i, o, 3, stride, 1); s.g1 = nn.GroupNorm(4, o)
        s.c2 = nn.Conv2d(o, o, 3, 1, 1); s.g2 = nn.GroupNorm(4, o)
        s.sc = nn.Sequential(nn.Conv2d(i, o, 1, stride), nn.GroupNorm(4, o)) if stride != 1 or i != o else nn.Identity()
    def forward(s, x):
        return s.g2(s.c2(F.relu(s.g1(s.c1(x))))) + s.sc(x)

class ResNetGN(nn.Module):  # experiments/resnet-gn.yaml's model, 62 classes
    def __init__(s, k=62):
        super().__init__(); s.c = nn.Conv2d(1, 8, 3, 2, 1); s.g = nn.GroupNorm(2, 8)
        s.b1 = Block(8, 8, 1); s.b2 = Block(8, 16, 2); s.f = nn.Linear(16, k)
    def forward(s, x):
        x = F.relu(s.g(s.c(x))); x = F.relu(s.b1(x)); x = F.relu(s.b2(x))
        return s.f(x.mean((2, 3)))

MODELS = {
    "logreg": (lambda: nn.Sequential(nn.Flatten(), nn.Linear(784, 62)), "img"),
    "mlp": (lambda: nn.Sequential(nn.Flatten(), nn.Linear(784, 200), nn.ReLU(), nn.Linear(200, 200), nn.ReLU(),
                                  nn.Linear(200, 62)), "img"),
    "cnn": (CNN, "img"),
    "cnn-large": (CNNLarge, "img"),
    "lstm": (LSTM, "seq"),
    "transformer": (Transformer, "seq"),
    "resnet-gn": (ResNetGN, "img"),
}

def setup(make, kind, batch):
    m = make(); opt = torch.optim.SGD(m.parameters(), lr=0.01)
    if kind == "img":
        x = torch.rand(batch, 1, 28, 28); y = torch.randint(0, 62, (batch,))
    else:
        x = torch.randint(0, 1004, (batch, 20)); y = torch.randint(0, 1004, (batch * 20,))
    def step():
        opt.zero_grad(set_to_none=True); F.cross_entropy(m(x), y).backward(); opt.step()
    return step

def bench(make, kind, batch, secs):
    step = setup(make, kind, batch)
    for _ in range(3): step()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < secs:
        step(); n += 1
    return n * batch / (time.perf_counter() - t0)

def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

def dpsgd(secs, B):
    from functorch import make_functional_with_buffers, vmap, grad
    fm, params, bufs = make_functional_with_buffers(Transformer())
    def loss(p, x, y):
        return F.cross_entropy(fm(p, bufs, x.unsqueeze(0)), y)
    per_example = vmap(grad(loss), in_dims=(None, 0, 0))
    x = torch.randint(0, 1004, (B, 20)); y = torch.randint(0, 1004, (B, 20))
    mom = [torch.zeros_like(p) for p in params]
    def step():
        g = per_example(params, x, y)
        with torch.no_grad():
            norms = torch.sqrt(sum((gi.reshape(B, -1) ** 2).sum(1) for gi in g))
            scale = (1.0 / (norms + 1e-12)).clamp(max=1.0)
            for p, gi, m in zip(params, g, mom):
                s = torch.einsum("b,b...->...", scale, gi) + torch.randn_like(p)
                m.mul_(0.9).add_(s / B); p.sub_(0.1 * m)
    step()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < secs:
        step(); n += 1
    return n * B / (time.perf_counter() - t0)

if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "-dpsgd":
        print(json.dumps({"torch": torch.__version__, "batch": int(args[2]),
                          "examples_per_s": round(dpsgd(float(args[1]), int(args[2])), 1)}))
        sys.exit(0)
    if args and args[0] == "-mem":
        name, b = args[1].split("/batch=")
        base = rss("VmRSS:"); step = setup(*MODELS[name], int(b))
        for _ in range(10): step()
        print(json.dumps({"torch": torch.__version__, "key": args[1], "rss_growth_bytes": rss("VmHWM:") - base}))
        sys.exit(0)
    secs = float(args[0]) if args else 2.0
    only = args[1:]
    out = {"torch": torch.__version__, "threads": torch.get_num_threads(), "examples_per_s": {}}
    for name, (make, kind) in MODELS.items():
        for b in (16, 64):
            key = f"{name}/batch={b}"
            if only and key not in only:
                continue
            out["examples_per_s"][key] = round(bench(make, kind, b, secs), 1)
    print(json.dumps(out, indent=1))
