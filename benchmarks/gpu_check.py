"""One command for a CUDA machine: the whole test suite on CUDA
(SKLEARN_LLP_TEST_DEVICE=cuda moves the device fixture's tests), seeded fits
bit for bit, rows per second against a bare device loop (float32, bfloat16,
a wide model); benchmarks/README.md, section ``gpu_check.py``. Without CUDA
it exits 0; ``--dry-run`` runs it all on the CPU with tiny sizes.
"""

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from skorch.callbacks import Callback

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # for _common
from _common import machine_info, write_results  # noqa: E402

from sklearn_llp import LLPClassifier  # noqa: E402
from sklearn_llp.methods import available_methods  # noqa: E402
from sklearn_llp.modules import MLP  # noqa: E402

N_FEATURES, N_CLASSES = 64, 10


def make_data(rows, bag, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(N_CLASSES, size=rows)
    centres = rng.normal(size=(N_CLASSES, N_FEATURES))
    X = (rng.normal(size=(rows, N_FEATURES)) + centres[y]).astype(np.float32)
    bags = np.arange(rows) // bag
    counts = np.zeros((bags.max() + 1, N_CLASSES))
    np.add.at(counts, (bags, y), 1)
    return X, bags, (counts / counts.sum(1, keepdims=True))[bags], y


def run_tests(args):
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += args.pytest_args.split()
    env = {**os.environ, "SKLEARN_LLP_TEST_DEVICE": args.device}
    start = time.perf_counter()
    done = subprocess.run(
        command, cwd=HERE.parent, env=env, capture_output=True, text=True
    )
    return {
        "command": " ".join(command[2:]),
        "device": args.device,
        "returncode": done.returncode,
        "summary": (done.stdout.strip().splitlines() or [""])[-1],
        "seconds": round(time.perf_counter() - start, 1),
    }


def check_determinism(args):
    """Two seeded fits of every method, disjoint and overlapping bags."""
    X, bags, props, y = make_data(args.det_rows, 16)
    rng = np.random.RandomState(1)  # overlapping: 2 bags of 12 per 32 rows
    blocks = range(len(X) // 32)
    lists = [32 * b + rng.choice(32, 12, replace=False) for b in blocks for _ in "ab"]
    list_props = np.stack([np.bincount(y[r], minlength=N_CLASSES) / 12 for r in lists])
    results = []
    for method in available_methods():
        cases = [("disjoint", bags, props), ("overlapping", lists, list_props)]
        for kind, b, p in cases[:1] if method == "llpfc" else cases:  # llpfc: disjoint
            params = dict(method=method, max_epochs=args.epochs, random_state=0)
            probas = [
                LLPClassifier(device=args.device, verbose=0, **params)
                .fit(X, b, p)
                .predict_proba(X)
                for _ in range(2)
            ]
            diff = float(np.abs(probas[0] - probas[1]).max())
            results.append(
                dict(method=method, bags=kind, identical=diff == 0, diff=diff)
            )
            print(f"determinism {method:8s} {kind:12s} identical={diff == 0}")
    return results


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def bare_epochs(X, props, bag, batch, method, precision, epochs, device, hidden):
    """Seconds per epoch of a plain loop; ``X`` and ``props`` on the device."""
    torch.manual_seed(0)
    model = MLP(N_FEATURES, N_CLASSES, hidden_sizes=hidden).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    per_batch, offsets = max(batch // bag, 1), torch.arange(bag, device=device)
    dtype, autocast = getattr(torch, precision), precision != "float32"

    def forward(x):
        with torch.autocast(device, dtype, enabled=autocast):
            return model(x).float()

    times = []
    for _ in range(epochs):
        sync(device)
        start = time.perf_counter()
        for chosen in torch.randperm(len(props), device=device).split(per_batch):
            x = X[(chosen[:, None] * bag + offsets).ravel()]
            logits = forward(x)
            probs = torch.softmax(logits, 1).view(len(chosen), bag, -1)
            loss = -(props[chosen] * torch.log(probs.mean(1) + 1e-8)).sum(1).mean()
            if method == "vat":
                target = torch.log_softmax(logits.detach(), 1)

                def kl(x_shifted, target=target):
                    out = torch.log_softmax(forward(x_shifted), 1)
                    return (target.exp() * (target - out)).sum(1).mean()

                d = torch.randn_like(x)
                d = (1e-6 * d / d.norm(dim=1, keepdim=True)).requires_grad_()
                (grad,) = torch.autograd.grad(kl(x + d), d)
                r = grad / grad.norm(dim=1, keepdim=True).clamp_min(1e-12)
                loss = loss + 0.05 * kl(x + r)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        sync(device)
        times.append(time.perf_counter() - start)
    return times


class Clock(Callback):
    """Seconds of every epoch, the device synchronised at both ends."""

    def __init__(self, times, device):
        self.times, self.device = times, device

    def on_epoch_begin(self, net, **kwargs):
        sync(self.device)
        self.start = time.perf_counter()

    def on_epoch_end(self, net, **kwargs):
        sync(self.device)
        self.times.append(time.perf_counter() - self.start)


def throughput(args):
    """LLPClassifier's rows/s against the bare loop's, at the same rows a step."""

    def rows_per_s(times):  # the median epoch after the first
        return round(args.rows / statistics.median(times[1:] or times))

    # 256: the default MLP; the wide model: bfloat16 where arithmetic dominates
    grid = [*itertools.product(args.bags, ("dllp", "vat"), args.batches, [256])]
    grid += [(args.bags[0], "dllp", args.batches[-2], args.wide)]
    results, data = [], {}
    for (bag, method, batch, width), precision in itertools.product(
        grid, ("float32", "bfloat16")
    ):
        if bag not in data:
            X, bags, props, _ = make_data(args.rows, bag)
            on_device = torch.from_numpy(X), torch.tensor(props[::bag]).float()
            data[bag] = X, bags, props, *(t.to(args.device) for t in on_device)
        X, bags, props, X_dev, props_dev = data[bag]
        batch, llp, hidden = batch if batch == "auto" else int(batch), [], (width,) * 2
        params = dict(method=method, max_epochs=args.epochs, batch_size=batch)
        params |= dict(precision=precision, device=args.device, random_state=0)
        params |= dict(module__hidden_sizes=hidden, verbose=0)
        clf = LLPClassifier(callbacks=[Clock(llp, args.device)], **params)
        clf.fit(X, bags, props)
        run = (method, precision, args.epochs, args.device, hidden)
        bare = bare_epochs(X_dev, props_dev, bag, clf.batch_size_, *run)
        row = dict(method=method, bag=bag, batch=batch, batch_rows=clf.batch_size_)
        row |= dict(width=width, precision=precision, rows=args.rows)
        row["llp_rows_per_s"], row["bare_rows_per_s"] = map(rows_per_s, (llp, bare))
        ratio = row["bare_rows_per_s"] / row["llp_rows_per_s"]
        row["llp_over_bare_time"] = round(ratio, 3)
        results.append(row)
        print("throughput", json.dumps(row))
    return results


def goals(rows):
    """The issue's: float32 within 1.15x the bare loop's time, bfloat16 1.3x
    the float32 rows/s on the wide model."""
    worst = max(r["llp_over_bare_time"] for r in rows if r["precision"] == "float32")
    wide = {r["precision"]: r["llp_rows_per_s"] for r in rows if r["width"] != 256}
    speedup = round(wide["bfloat16"] / wide["float32"], 3)
    return dict(worst_float32_llp_over_bare=worst, within_1_15=worst <= 1.15) | dict(
        wide_bfloat16_over_float32=speedup, wide_width=rows[-1]["width"]
    )


def markdown(report):
    info, tests, det = report["machine"], report.get("tests"), report["determinism"]
    lines = [
        f"# GPU check\n\nDevice: {info.get('gpu', info['device'])}; torch "
        f"{info['versions']['torch']}, CUDA {info.get('cuda')}; dry run: "
        f"{report['dry_run']}.\n"
    ]
    if tests:
        summary = f"{tests['command']}`, {tests['device']}): {tests['summary']}"
        lines.append(f"Tests (`{summary}\n")
    same = sum(r["identical"] for r in det)
    lines += [f"Seeded fits repeated bit for bit: {same} of {len(det)}.\n"]
    lines += ["| method | bags | identical | max diff |\n|-|-|-|-|"]
    lines += [
        f"| {r['method']} | {r['bags']} | {r['identical']} | {r['diff']:.2g} |"
        for r in det
    ]
    g = report["goals"]
    lines += [
        f"\nfloat32, LLPClassifier's time over the bare loop's: worst "
        f"{g['worst_float32_llp_over_bare']:.2f} (goal <= 1.15). Wide model "
        f"(hidden {g['wide_width']} x 2): bfloat16 "
        f"{g['wide_bfloat16_over_float32']:.2f}x the float32 rows/s (goal >= 1.3).",
    ]
    head = "method | bag | batch | rows | width | precision | LLP rows/s | bare rows/s"
    lines += ["", f"| {head} | time ratio |", "|-" * 9 + "|"]
    lines += [
        "| " + " | ".join(str(v) for k, v in r.items() if k != "rows") + " |"
        for r in report["throughput"]
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    add = parser.add_argument
    add("--out", type=Path, default=HERE / "results")
    add("--dry-run", action="store_true", help="tiny, on the CPU")
    add("--rows", type=int, default=65536)
    add("--det-rows", type=int, default=2048)
    add("--epochs", type=int, default=4)
    add("--bags", type=int, nargs="+", default=[16, 64, 256])
    add("--batches", nargs="+", default=["128", "2048", "8192", "auto"])
    add("--wide", type=int, default=4096, help="hidden width of the wide model")
    add("--pytest-args", default="", help="what pytest runs (default: all)")
    add("--skip-tests", action="store_true")
    args = parser.parse_args(argv)
    if args.dry_run:
        args.device, args.rows, args.det_rows, args.epochs = "cpu", 256, 320, 1
        args.bags, args.batches, args.wide = args.bags[:1], args.batches[:2], 16
        torch.set_num_threads(1)  # a shared CI machine: no waiting threads
        if not args.pytest_args:
            args.pytest_args = "tests/test_reproducibility.py -k gpu_plan"
    elif torch.cuda.is_available():
        args.device = "cuda"
    else:
        print("gpu_check: no CUDA device here; nothing to check (try --dry-run).")
        return 0
    warnings.simplefilter("ignore")  # tiny data sets warn of identifiability
    report = {"machine": machine_info(args.device), "dry_run": args.dry_run}
    if args.device == "cuda":
        report["machine"]["cudnn"] = torch.backends.cudnn.version()
    if not args.skip_tests:
        report["tests"] = run_tests(args)
        print("tests:", report["tests"]["summary"])
    report |= dict(determinism=check_determinism(args), throughput=throughput(args))
    report["goals"] = goals(report["throughput"])
    write_results("gpu_check", report, markdown(report), args.out)
    failed = report.get("tests", {}).get("returncode", 0) != 0
    return int(failed or not all(r["identical"] for r in report["determinism"]))


if __name__ == "__main__":
    sys.exit(main())
