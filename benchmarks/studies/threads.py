"""``n_threads="auto"`` against a bare PyTorch loop, idle and beside a busy process.

python benchmarks/studies/threads.py  # -> benchmarks/results/threads.json
python benchmarks/studies/threads.py --quick --out /tmp
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
import torch
from skorch.callbacks import Callback

from sklearn_llp import LLPClassifier
from sklearn_llp.modules import MLP
from sklearn_llp.neural._runtime import available_cores, running_others

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _common
from _common import RESULTS_DIR, write_results  # noqa: E402

DEFAULT_THREADS = torch.get_num_threads()  # before anything sets it
N_FEATURES, N_CLASSES, BAG = 64, 10, 16
FIXED = dict(random_state=0, verbose=0, device="cpu")  # of every LLPClassifier fit


def make_data(rows, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(N_CLASSES, size=rows)
    X = (
        rng.normal(size=(rows, N_FEATURES))
        + rng.normal(size=(N_CLASSES, N_FEATURES))[y]
    )
    bags = np.arange(rows) // BAG
    props = np.stack(
        [np.bincount(y[bags == b], minlength=N_CLASSES) for b in range(bags.max() + 1)]
    )
    return X.astype(np.float32), bags, (props / props.sum(1, keepdims=True))[bags]


def kl(target_logits, logits):
    target = torch.log_softmax(target_logits, 1)
    return (target.exp() * (target - torch.log_softmax(logits, 1))).sum(1).mean()


def bare_fit(X, bags, props, method, epochs, batch_size, threads, seed=0):
    """A plain DLLP/VAT loop: whole bags of 16 per batch, bag means by reshape."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(seed)
        rng = np.random.RandomState(seed)
        X, props = (
            torch.from_numpy(X),
            torch.as_tensor(props[::BAG], dtype=torch.float32),
        )
        model = MLP(N_FEATURES, N_CLASSES)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        per_batch = max(batch_size // BAG, 1)
        for _ in range(epochs):
            order = torch.from_numpy(rng.permutation(len(props)))
            for chosen in order.split(per_batch):
                rows = (chosen[:, None] * BAG + torch.arange(BAG)).ravel()
                x = X[rows]
                logits = model(x)
                means = torch.softmax(logits, 1).view(len(chosen), BAG, -1).mean(1)
                loss = -(props[chosen] * torch.log(means + 1e-8)).sum(1).mean()
                if method == "vat":
                    d = torch.randn_like(x)
                    d = (1e-6 * d / d.norm(dim=1, keepdim=True)).requires_grad_()
                    (grad,) = torch.autograd.grad(kl(logits.detach(), model(x + d)), d)
                    r = grad / grad.norm(dim=1, keepdim=True).clamp_min(1e-12)
                    loss = loss + 0.05 * kl(logits.detach(), model(x + r))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    finally:
        torch.set_num_threads(previous)


class ThreadsSeen(Callback):
    def __init__(self, seen):
        self.seen = seen

    def on_epoch_begin(self, net, **kwargs):
        self.seen.append(torch.get_num_threads())


def llp_fit(X, bags, props, method, epochs, n_threads, seen):
    clf = LLPClassifier(method=method, max_epochs=epochs, n_threads=n_threads, **FIXED)
    return clf.set_params(callbacks=[ThreadsSeen(seen)]).fit(X, bags, props)


def run_scenario(data, batch_size, args):
    seen, engines = [], {}
    for m in ("dllp", "vat"):
        fits = {
            "bare": (bare_fit, (batch_size, DEFAULT_THREADS)),
            "bare-1": (bare_fit, (batch_size, 1)),
            "llp-auto": (llp_fit, ("auto", seen)),
            "llp-1": (llp_fit, (1, [])),
        }
        for name, (fit, extra) in fits.items():
            engines[f"{name}-{m}"] = partial(fit, *data, m, args.epochs, *extra)
    times, names = {name: [] for name in engines}, list(engines)
    for round_ in range(args.repeats):
        for name in names if round_ % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            engines[name]()
            times[name].append(time.perf_counter() - start)
    med = {name: statistics.median(t) for name, t in times.items()}
    out = {"fit_s": {k: round(v, 3) for k, v in med.items()}}
    out["threads_auto"] = sorted(set(seen))
    for m in ("dllp", "vat"):
        for a, b in (("llp-auto", "bare"), ("llp-auto", "llp-1"), ("bare", "bare-1")):
            key = f"{m}_{a.replace('llp-', '')}_over_{b.replace('-', '_')}"
            out[key] = round(med[f"{a}-{m}"] / med[f"{b}-{m}"], 3)
    out["loadavg_after"] = os.getloadavg()
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--rows", type=int, default=20000)
    add("--epochs", type=int, default=3)
    add("--repeats", type=int, default=3)
    add("--quick", action="store_true", help="2,000 rows, 1 epoch, 1 repeat")
    add("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.epochs, args.repeats = 2000, 1, 1
    data = make_data(args.rows)
    probe = LLPClassifier(max_epochs=0, verbose=0, device="cpu").fit(*data)
    batch_size = probe.batch_size_
    report = dict(torch=torch.__version__, default_threads=DEFAULT_THREADS)
    report.update(cores=available_cores(), rows=args.rows, epochs=args.epochs)
    report.update(repeats=args.repeats, batch_size=batch_size)
    report["loadavg_at_start"] = os.getloadavg()
    report["running_others_at_start"] = running_others()  # should be 0: idle
    report["goals"] = {"idle: auto_over_bare": 1.25, "busy: auto_over_llp_1": 1.3}
    report["scenarios"] = {"idle": run_scenario(data, batch_size, args)}
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(1.0)
        report["scenarios"]["busy"] = run_scenario(data, batch_size, args)
    finally:
        busy.kill()
        busy.wait()
    print(json.dumps(report, indent=1))
    write_results("threads", report, out_dir=args.out)


if __name__ == "__main__":
    main()
