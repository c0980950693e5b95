"""Memory, speed and accuracy of a Dask fit streamed from Parquet (issue 35).

Synthetic rows (32 float32 features, a nonlinear teacher's binary label) in
random bags of 256 are written once per size to Parquet, one file of 2**18
rows (1,024 whole bags) per partition. Every fit runs in a fresh process:
``LLPClassifier`` at its defaults but ``max_epochs``, on
``dd.read_parquet`` (streamed) or on the same rows read into NumPy
(in memory). Peak RSS comes from a 20 ms sampling thread and ru_maxrss.

    python benchmarks/dask_stream.py --rows 4e6 16e6 --in-memory 4e6 16e6
    python benchmarks/dask_stream.py --quick --out /tmp/dask_stream
"""

import argparse
import json
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS_DIR, machine_info, write_results  # noqa: E402

PART_ROWS, BAG, D = 2**18, 256, 32


def teacher(X):
    w = np.random.RandomState(1).normal(size=(2, X.shape[1])) / np.sqrt(X.shape[1])
    return (X @ w[0] + np.sin(2 * X @ w[1]) > 0).astype(np.int8)


def write_parquet(path, n_rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir(parents=True, exist_ok=True)
    for k in range(int(n_rows) // PART_ROWS):
        file = path / f"part-{k:05d}.parquet"
        if file.exists():
            continue
        X = np.random.RandomState(k + 10).normal(size=(PART_ROWS, D))
        X = X.astype(np.float32)
        y = teacher(X)
        bag = k * (PART_ROWS // BAG) + np.arange(PART_ROWS) // BAG
        p = np.repeat(y.reshape(-1, BAG).mean(axis=1), BAG)
        columns = {f"x{j}": X[:, j] for j in range(D)} | {"bag": bag, "p": p}
        pq.write_table(pa.table(columns), file)


def fit_one(path, mode, epochs):
    """In this process: fit, and print one JSON line of measurements."""
    import psutil

    process, peak = psutil.Process(), [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], process.memory_info().rss)
            time.sleep(0.02)

    import dask.dataframe as dd
    import torch  # noqa: F401

    from sklearn_llp import LLPClassifier

    after_imports = process.memory_info().rss
    threading.Thread(target=sample, daemon=True).start()
    features = [f"x{j}" for j in range(D)]
    clf = LLPClassifier(max_epochs=epochs, verbose=0, random_state=0, device="cpu")
    start = time.perf_counter()
    if mode == "streamed":
        ddf = dd.read_parquet(path)
        clf.fit(ddf[features], ddf["bag"], ddf["p"])
    else:
        import pandas as pd

        frame = pd.read_parquet(path)
        X = frame[features].to_numpy(np.float32)
        bags, p = frame["bag"].to_numpy(), frame["p"].to_numpy()
        del frame
        clf.fit(X, bags, p)
    wall = time.perf_counter() - start
    done.set()
    X_test = np.random.RandomState(0).normal(size=(200_000, D)).astype(np.float32)
    accuracy = float((clf.predict(X_test) == teacher(X_test)).mean())
    n_rows = sum(1 for _ in Path(path).glob("*.parquet")) * PART_ROWS
    epoch_s = [float(e["dur"]) for e in clf.history]
    print(
        json.dumps(
            {
                "mode": mode,
                "rows": n_rows,
                "rss_after_imports_mb": after_imports / 2**20,
                "peak_rss_mb": max(peak[0], after_imports) / 2**20,
                "ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                / 2**10,
                "fit_s": wall,
                "epoch_s": epoch_s,
                "rows_per_s": n_rows / float(np.mean(epoch_s)),
                "accuracy": accuracy,
            }
        )
    )


def markdown(runs):
    lines = [
        "| rows | fit | RSS after imports (MB) | peak RSS (MB) | above imports "
        "(MB) | s/epoch | rows/s | test accuracy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(runs, key=lambda r: (r["rows"], r["mode"])):
        lines.append(
            f"| {r['rows'] / 1e6:.1f}M | {r['mode']} | "
            f"{r['rss_after_imports_mb']:.0f} | {r['peak_rss_mb']:.0f} | "
            f"{r['peak_rss_mb'] - r['rss_after_imports_mb']:.0f} | "
            f"{np.mean(r['epoch_s']):.1f} | {r['rows_per_s']:,.0f} | "
            f"{r['accuracy']:.4f} |"
        )
    return "\n".join(lines) + "\n"


def plot(runs, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for mode in ("streamed", "in memory"):
        points = sorted(
            (r["rows"], r["peak_rss_mb"]) for r in runs if r["mode"] == mode
        )
        if points:
            ax.plot(*zip(*[(n / 1e6, mb / 1024) for n, mb in points]), "o-", label=mode)
    ax.set_xlabel("rows (millions; 32 float32 features)")
    ax.set_ylabel("peak resident memory during fit (GB)")
    ax.set_title("LLPClassifier fit: Dask streamed from Parquet vs in memory")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "dask_stream.png", dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=float, nargs="+", default=[4e6, 16e6])
    parser.add_argument("--in-memory", type=float, nargs="*", default=[4e6, 16e6])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--data", default="/tmp/sklearn-llp-dask-stream")
    parser.add_argument("--out", default=str(RESULTS_DIR))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return fit_one(args.child[0], args.child[1], args.epochs)
    if args.quick:
        args.rows, args.in_memory = [2 * PART_ROWS], [2 * PART_ROWS]
    runs = []
    for n in sorted(set(args.rows) | set(args.in_memory)):
        path = Path(args.data) / f"rows-{int(n)}"
        write_parquet(path, n)
        modes = ["streamed"] * (n in args.rows) + ["in memory"] * (n in args.in_memory)
        for mode in modes:
            command = [sys.executable, __file__, "--epochs", str(args.epochs)]
            child = subprocess.run(
                [*command, "--child", str(path), mode],
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(child.stdout.strip().splitlines()[-1]))
            print(markdown(runs[-1:]).splitlines()[-1], flush=True)
    out = Path(args.out)
    payload = {"machine": machine_info(), "epochs": args.epochs, "runs": runs}
    write_results("dask_stream", payload, markdown(runs), out_dir=out)
    plot(runs, out)


if __name__ == "__main__":
    main()
