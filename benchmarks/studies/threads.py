"""``n_threads="auto"`` against a bare PyTorch loop, idle and beside a busy process.

The issue's goals: on an idle machine, a default ``LLPClassifier`` fit takes
at most 1.25 times a bare PyTorch loop at torch's default threads; beside one
busy process, at most 1.3 times the 1-thread fit.

Engines, on the same synthetic data (``--rows`` rows, 64 features, 10
classes, uniform bags of 16), the same network (``sklearn_llp.modules.MLP``,
its defaults), the same batch size (``LLPClassifier``'s ``batch_size="auto"``)
and Adam with lr 1e-3, for DLLP and VAT (one power iteration, ``alpha=0.05``,
``eps=1``, no ramp-up in the bare loop):

* ``bare``: a plain PyTorch loop at torch's default threads;
* ``bare-1``: the same loop at one thread;
* ``llp-auto``: ``LLPClassifier(method=...)``, defaults (``n_threads="auto"``);
* ``llp-1``: the same with ``n_threads=1`` (the former default).

Scenarios: ``idle`` (whatever else runs on the machine: see ``loadavg``) and
``busy`` (one ``while True: pass`` Python subprocess started by the script).
Engines run interleaved, the order reversed every round; times are medians
of ``--repeats`` whole fits (``--epochs`` epochs each). ``threads_auto`` is
what ``"auto"`` chose, read during the fits. Run on an otherwise idle
machine::

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
from sklearn_llp._runtime import available_cores, running_others
from sklearn_llp.modules import MLP

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"


DEFAULT_THREADS = torch.get_num_threads()  # before anything sets it
N_FEATURES, N_CLASSES, BAG = 64, 10, 16


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
    clf = LLPClassifier(
        method=method,
        max_epochs=epochs,
        random_state=0,
        verbose=0,
        device="cpu",
        callbacks=[ThreadsSeen(seen)],
        **({} if n_threads == "auto" else {"n_threads": n_threads}),
    )
    return clf.fit(X, bags, props)


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
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2,000 rows, 1 epoch, 1 repeat: checks the script runs",
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
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
    report["scenarios"] = {}
    report["scenarios"]["idle"] = run_scenario(data, batch_size, args)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(1.0)
        report["scenarios"]["busy"] = run_scenario(data, batch_size, args)
    finally:
        busy.kill()
        busy.wait()
    print(json.dumps(report, indent=1))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "threads.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
