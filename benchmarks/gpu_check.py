"""One command for a CUDA machine: tests, determinism and throughput on the GPU.

The test suite with ``SKLEARN_LLP_TEST_DEVICE=cuda``, bit-identical seeded
fits of every method, and rows per second against a bare loop; see
``benchmarks/README.md``, section ``gpu_check.py``. Without CUDA it says so
and exits 0; ``--dry-run`` runs it all on the CPU with tiny sizes::

    python benchmarks/gpu_check.py                      # on a GPU machine
    python benchmarks/gpu_check.py --dry-run --out /tmp/gpu_check
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))  # for _common
from _common import machine_info, write_results  # noqa: E402

N_FEATURES, N_CLASSES = 64, 10
DRY_TESTS = "tests/test_reproducibility.py -k gpu_plan"


def device_info(device):
    """``_common.machine_info`` and, on CUDA, cuDNN's version."""
    info = machine_info(device)
    if device == "cuda":
        info["cudnn"] = torch.backends.cudnn.version()
    return info


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
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    lines = done.stdout.strip().splitlines() or [""]
    return {
        "command": " ".join(command[2:]),
        "device": args.device,
        "returncode": done.returncode,
        "summary": lines[-1],
        "seconds": round(time.perf_counter() - start, 1),
    }


def check_determinism(args):
    from sklearn_llp import LLPClassifier
    from sklearn_llp.methods import available_methods

    X, bags, props, y = make_data(args.det_rows, 16)
    rng = np.random.RandomState(1)  # overlapping: 2 bags of 12 per 32 rows
    blocks = range(len(X) // 32)
    lists = [32 * b + rng.choice(32, 12, replace=False) for b in blocks for _ in "ab"]
    list_props = np.stack([np.bincount(y[r], minlength=N_CLASSES) / 12 for r in lists])
    results = []
    for method in available_methods():
        cases = [("disjoint", bags, props)]
        if method != "llpfc":  # llpfc refuses overlapping bags
            cases.append(("overlapping", lists, list_props))
        for kind, b, p in cases:
            probas = []
            for _ in range(2):
                clf = LLPClassifier(
                    method=method,
                    max_epochs=args.epochs,
                    random_state=0,
                    device=args.device,
                    verbose=0,
                )
                probas.append(clf.fit(X, b, p).predict_proba(X))
            diff = float(np.abs(probas[0] - probas[1]).max())
            results.append(
                {"method": method, "bags": kind, "identical": diff == 0, "diff": diff}
            )
            print(f"determinism {method:8s} {kind:12s} identical={diff == 0}")
    return results


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def bare_epochs(X, props, bag, batch, method, precision, epochs, device):
    """Seconds per epoch of a plain loop; ``X`` and ``props`` on the device."""
    from sklearn_llp.modules import MLP

    torch.manual_seed(0)
    model = MLP(N_FEATURES, N_CLASSES).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    per_batch, offsets = max(batch // bag, 1), torch.arange(bag, device=device)
    dtype = getattr(torch, precision)
    times = []
    for _ in range(epochs):
        sync(device)
        start = time.perf_counter()
        for chosen in torch.randperm(len(props), device=device).split(per_batch):
            x = X[(chosen[:, None] * bag + offsets).ravel()]
            with torch.autocast(device, dtype, enabled=precision != "float32"):
                logits = model(x)
            probs = torch.softmax(logits.float(), 1).view(len(chosen), bag, -1)
            loss = -(props[chosen] * torch.log(probs.mean(1) + 1e-8)).sum(1).mean()
            if method == "vat":
                target = torch.log_softmax(logits.detach().float(), 1)

                def kl(x_shifted, target=target):
                    with torch.autocast(device, dtype, enabled=precision != "float32"):
                        out = torch.log_softmax(model(x_shifted).float(), 1)
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


def llp_epochs(X, bags, props, batch, method, precision, epochs, device):
    from skorch.callbacks import Callback

    from sklearn_llp import LLPClassifier

    times = []

    class Clock(Callback):
        def on_epoch_begin(self, net, **kwargs):
            sync(device)
            self.start = time.perf_counter()

        def on_epoch_end(self, net, **kwargs):
            sync(device)
            times.append(time.perf_counter() - self.start)

    params = dict(method=method, max_epochs=epochs, batch_size=batch, verbose=0)
    clf = LLPClassifier(device=device, random_state=0, callbacks=[Clock()], **params)
    if "precision" in clf.get_params():
        clf.set_params(precision=precision)
    clf.fit(X, bags, props)
    return times, clf.batch_size_


def median_after_first(times):
    return statistics.median(times[1:] if len(times) > 1 else times)


def throughput(args):
    from sklearn_llp import LLPClassifier

    precisions = ["float32"]
    if "precision" in LLPClassifier().get_params():
        precisions.append("bfloat16")
    results = []
    for bag in args.bags:
        X, bags, props, _ = make_data(args.rows, bag)
        X_dev = torch.from_numpy(X).to(args.device)
        props_dev = torch.as_tensor(props[::bag], dtype=torch.float32).to(args.device)
        grid = itertools.product(("dllp", "vat"), args.batches, precisions)
        for method, batch, precision in grid:
            batch = batch if batch == "auto" else int(batch)
            run = (method, precision, args.epochs, args.device)
            llp, used = llp_epochs(X, bags, props, batch, *run)
            bare = bare_epochs(X_dev, props_dev, bag, used, *run)
            row = dict(method=method, bag=bag, batch=batch, batch_rows=used)
            row.update(precision=precision, rows=args.rows)
            row["llp_rows_per_s"] = round(args.rows / median_after_first(llp))
            row["bare_rows_per_s"] = round(args.rows / median_after_first(bare))
            ratio = row["bare_rows_per_s"] / row["llp_rows_per_s"]
            row["llp_over_bare_time"] = round(ratio, 3)
            results.append(row)
            print("throughput", json.dumps(row))
    return results


def write_markdown(report, path):
    info, tests, det = report["machine"], report.get("tests"), report["determinism"]
    lines = [
        f"# GPU check\n\nDevice: {info.get('gpu', info['device'])}; torch "
        f"{info['versions']['torch']}, CUDA {info.get('cuda')}; dry run: "
        f"{report['dry_run']}.\n"
    ]
    if tests:
        lines.append(
            f"Tests (`{tests['command']}`, {tests['device']}): {tests['summary']}\n"
        )
    same = sum(r["identical"] for r in det)
    lines.append(f"Seeded fits repeated bit for bit: {same} of {len(det)}.\n")
    lines.append("| method | bags | identical | max diff |\n|-|-|-|-|")
    lines += [
        f"| {r['method']} | {r['bags']} | {r['identical']} | {r['diff']:.2g} |"
        for r in det
    ]
    head = ["method", "bag", "batch", "rows", "precision", "LLP rows/s", "bare rows/s"]
    lines += ["", "| " + " | ".join(head + ["time ratio"]) + " |", "|-" * 8 + "|"]
    keys = ["method", "bag", "batch", "batch_rows", "precision", "llp_rows_per_s"]
    keys += ["bare_rows_per_s", "llp_over_bare_time"]
    lines += [
        "| " + " | ".join(str(r[k]) for k in keys) + " |" for r in report["throughput"]
    ]
    path.write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    add = parser.add_argument
    add("--out", type=Path, default=HERE / "results")
    add("--dry-run", action="store_true", help="tiny, on the CPU")
    add("--rows", type=int, default=65536)
    add("--det-rows", type=int, default=2048)
    add("--epochs", type=int, default=4)
    add("--bags", type=int, nargs="+", default=[16, 64, 256])
    add("--batches", nargs="+", default=["128", "2048", "8192", "auto"])
    add("--pytest-args", default="tests", help="what pytest runs")
    add("--skip-tests", action="store_true")
    args = parser.parse_args(argv)
    if args.dry_run:
        args.device, args.rows, args.det_rows, args.epochs = "cpu", 256, 320, 1
        args.bags, args.batches = args.bags[:1], args.batches[:1]
        torch.set_num_threads(1)  # a shared CI machine: no waiting threads
        if args.pytest_args == "tests":
            args.pytest_args = DRY_TESTS
    elif torch.cuda.is_available():
        args.device = "cuda"
    else:
        print(
            "gpu_check: no CUDA device here; nothing to check (use --dry-run "
            "to exercise the script on the CPU)."
        )
        return 0
    warnings.simplefilter("ignore")  # tiny data sets warn of identifiability
    report = {"machine": device_info(args.device), "dry_run": args.dry_run}
    if not args.skip_tests:
        report["tests"] = run_tests(args)
        print("tests:", report["tests"]["summary"])
    report["determinism"] = check_determinism(args)
    report["throughput"] = throughput(args)
    write_results("gpu_check", report, out_dir=args.out)
    write_markdown(report, args.out / "gpu_check.md")
    print(f"wrote {args.out / 'gpu_check.json'} and gpu_check.md")
    failed = report.get("tests", {}).get("returncode", 0) != 0
    return int(failed or not all(r["identical"] for r in report["determinism"]))


if __name__ == "__main__":
    sys.exit(main())
