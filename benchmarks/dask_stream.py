"""Memory, speed and accuracy of a Dask fit streamed from Parquet (issue 35).

Synthetic census-like rows (32 float32 features: correlated Gaussians,
binary indicators, skewed positives; a fixed nonlinear teacher draws the
binary label, Bayes accuracy about 0.90) in random bags of 256 are written
once per size to Parquet, chunk by chunk, one file of about 2**18 rows of
whole bags per partition (rows sorted by bag). Every fit runs in a fresh
process: ``LLPClassifier`` at its defaults but ``max_epochs``, on
``dd.read_parquet`` (streamed) or on the same rows read into NumPy (in
memory). Peak RSS: a 50 ms psutil sampling thread, ``ru_maxrss`` and the
kernel's ``VmHWM`` reset just before ``fit``.

    python benchmarks/dask_stream.py --delete-data       # 4M, 16M, 64M rows
    python benchmarks/dask_stream.py --quick             # 2**20 rows, 2 min
    python benchmarks/dask_stream.py --resummarise       # the md from the JSON
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS_DIR, machine_info, write_results  # noqa: E402

PART_ROWS, BAG, D = 2**18, 256, 32
TEST_ROWS, TEST_SEED = 200_000, 10**6
FEATURES = [f"x{j}" for j in range(D)]
DATA_DIR = Path("/work/data-bench35")
GB = 1e9


# --- data ---
def _fixed():
    """The generator's fixed parts: feature mixing, thresholds, teacher."""
    rng = np.random.default_rng(12345)
    mix = rng.normal(size=(16, 16)) / 4 + np.eye(16)
    mix /= np.sqrt((mix**2).sum(axis=0))
    thresholds = rng.uniform(-1, 1.2, size=8)
    w = rng.normal(size=(3, D)) / np.sqrt(D)
    return mix.astype(np.float32), thresholds.astype(np.float32), w.astype(np.float32)


MIX, THRESHOLDS, W = _fixed()


def make_rows(seed, n):
    """``n`` rows: float32 features, sampled labels, Bayes-optimal labels."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, D), dtype=np.float32)
    X = np.empty_like(Z)
    X[:, :16] = Z[:, :16] @ MIX  # correlated, standard normal
    X[:, 16:24] = Z[:, 16:24] > THRESHOLDS  # indicators
    X[:, 24:] = (np.exp(0.6 * Z[:, 24:]) - np.float32(np.exp(0.18))) / 0.67
    score = X @ W[0] + 1.5 * np.sin(2.5 * (X @ W[1])) + 0.6 * (X @ W[2]) ** 2
    logit = 3.0 * (score - 1.2)
    y = rng.random(n, dtype=np.float32) < 1 / (1 + np.exp(-logit))
    return X, y.astype(np.int8), (logit > 0).astype(np.int8)


def write_dataset(path, n_rows):
    """Parquet files of whole random bags of 256, about 2**18 rows each.

    Partition ``k`` is drawn from its own seed, so the data never sits in
    memory whole and a rerun rewrites the same rows. Also ``props.parquet``
    (bag, size, p). Skipped when ``done.json`` says it is complete.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    done = path / "done.json"
    if done.exists() and json.loads(done.read_text())["rows"] == n_rows:
        return json.loads(done.read_text())
    shutil.rmtree(path, ignore_errors=True)
    (path / "parts").mkdir(parents=True)
    start = time.perf_counter()
    n_bags = n_rows // BAG
    parts = np.array_split(np.arange(n_bags), max(1, round(n_rows / PART_ROWS)))
    props = []
    for k, ids in enumerate(parts):
        rows = len(ids) * BAG
        X, y, _ = make_rows([0, k], rows)
        rng = np.random.default_rng([1, k])
        bag = ids[0] + rng.permutation(rows) // BAG  # random bags of 256
        order = np.argsort(bag, kind="stable")
        X, y, bag = X[order], y[order], bag[order]
        p = y.reshape(-1, BAG).mean(axis=1)
        columns = {f"x{j}": X[:, j] for j in range(D)}
        columns |= {"bag": bag.astype(np.int64), "p": np.repeat(p, BAG)}
        pq.write_table(pa.table(columns), path / "parts" / f"part-{k:05d}.parquet")
        props.append(pa.table({"bag": ids, "size": np.full(len(ids), BAG), "p": p}))
    pq.write_table(pa.concat_tables(props), path / "props.parquet")
    disk = sum(f.stat().st_size for f in (path / "parts").iterdir())
    meta = {
        "rows": n_rows,
        "bags": n_bags,
        "partitions": len(parts),
        "gb_on_disk": disk / GB,
        "write_s": time.perf_counter() - start,
    }
    done.write_text(json.dumps(meta))
    return meta


def read_numpy(parts_dir):
    """The Parquet rows as NumPy, file by file into preallocated arrays."""
    import pyarrow.parquet as pq

    files = sorted(Path(parts_dir).glob("*.parquet"))
    n = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    X = np.empty((n, D), np.float32)
    bags, p = np.empty(n, np.int64), np.empty(n, np.float64)
    start = 0
    for f in files:
        table = pq.read_table(f)
        stop = start + table.num_rows
        for j, name in enumerate(FEATURES):
            X[start:stop, j] = table.column(name).to_numpy()
        bags[start:stop] = table.column("bag").to_numpy()
        p[start:stop] = table.column("p").to_numpy()
        start = stop
    return X, bags, p


# --- one fit, in a fresh process ---
def _vm_hwm():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None


def _busy_jiffies():
    """CPU time of the whole machine, and of this process, in clock ticks."""
    cpu = [int(v) for v in Path("/proc/stat").read_text().split()[1:8]]
    mine = os.times()
    return cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6], (mine[0] + mine[1]) * 100


def fit_one(cfg):
    """Fit as ``cfg`` says; print one JSON line of measurements."""
    import resource
    import threading

    import psutil

    process = psutil.Process()
    import dask.dataframe as dd
    import pyarrow.parquet  # noqa: F401  (both fits read Parquet)
    import torch  # noqa: F401  (counted in the RSS after the imports)
    from skorch.callbacks import Callback

    from sklearn_llp import LLPClassifier

    rss_imports = process.memory_info().rss
    trace, marks = [], {}
    stop = threading.Event()
    t0 = time.perf_counter()

    def sample():
        while not stop.is_set():
            trace.append((time.perf_counter() - t0, process.memory_info().rss))
            time.sleep(0.05)

    def mark(name):
        marks[name] = time.perf_counter() - t0

    class Marks(Callback):
        def on_epoch_begin(self, net, **kwargs):
            mark(f"epoch{len(net.history)}_begin")

        def on_epoch_end(self, net, **kwargs):
            mark(f"epoch{len(net.history)}_end")

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    load_avg = os.getloadavg()
    clf = LLPClassifier(
        method="vat",  # what "auto" trained when these numbers were measured
        max_epochs=cfg["epochs"],
        verbose=0,
        random_state=0,
        device="cpu",
        n_threads=cfg["threads"],
        callbacks=[("bench_marks", Marks())],
    )
    parts = Path(cfg["path"]) / "parts"
    extra = {}
    if cfg["mode"] == "streamed":
        ddf = dd.read_parquet(parts)
        extra["npartitions"] = ddf.npartitions
        args = ddf[FEATURES], ddf["bag"], ddf["p"]
    else:
        mark("load_begin")
        args = read_numpy(parts)
        mark("load_end")
        extra["rss_after_load_mb"] = process.memory_info().rss / 2**20
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := current RSS
    mark("fit_begin")
    busy = _busy_jiffies()
    clf.fit(*args)
    mark("fit_end")
    busy = np.subtract(_busy_jiffies(), busy)
    others = (busy[0] - busy[1]) / 100 / (marks["fit_end"] - marks["fit_begin"])
    vm_hwm = _vm_hwm()
    stop.set()
    sampler.join()
    del args
    X_test, y_test, bayes = make_rows(TEST_SEED, TEST_ROWS)
    pred = clf.predict(X_test)
    if cfg.get("pred_path"):
        np.save(cfg["pred_path"], pred.astype(np.int8))
    times, rss = np.array(trace).T
    n_rows = cfg["rows"]
    epoch_s = [float(d) for d in clf.history[:, "dur"]]

    def peak(begin, end):
        keep = (times >= marks[begin]) & (times <= marks[end])
        return float(rss[keep].max() / 2**20) if keep.any() else None

    out = {
        "rows": n_rows,
        "mode": cfg["mode"],
        "variant": cfg.get("variant", "default"),
        "epochs": cfg["epochs"],
        "rss_after_imports_mb": rss_imports / 2**20,
        "peak_rss_mb": float(max(rss.max(), rss_imports) / 2**20),
        "ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10,
        "vm_hwm_fit_mb": vm_hwm / 2**20 if vm_hwm else None,
        "peak_setup_mb": peak("fit_begin", "epoch1_begin"),
        "peak_training_mb": peak("epoch1_begin", "fit_end"),
        "fit_s": marks["fit_end"] - marks["fit_begin"],
        "epoch_s": epoch_s,
        "rows_per_s": n_rows / float(np.mean(epoch_s)),
        "train_loss": [float(v) for v in clf.history[:, "train_loss"]],
        "accuracy": float(np.mean(pred == y_test)),
        "bayes_accuracy": float(np.mean(bayes == y_test)),
        "threshold": float(getattr(clf, "threshold_", np.nan)),
        "n_threads": cfg["threads"],
        "other_cpu_share": float(max(others, 0.0)),
        "loadavg_at_start": load_avg,
        "loadavg_at_end": os.getloadavg(),
        "marks": marks,
        **extra,
    }
    print(json.dumps(out))


# --- summaries ---
def _rows(n):
    return f"{n / 1e6:.0f}M" if n >= 1e6 and n % 1e6 == 0 else f"{n / 2**20:g}Mi"


def markdown(payload):
    runs = [r for r in payload["runs"] if r["variant"] == "default"]
    disk = {d["rows"]: d["gb_on_disk"] for d in payload.get("data", [])}
    lines = [
        "| rows | GB on disk | fit | epochs | RSS after imports (MiB) | peak RSS "
        "(MiB) | above imports (MiB) | s/epoch | rows/s | test accuracy | "
        "other jobs' cores |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(runs, key=lambda r: (r["rows"], r["mode"] != "streamed")):
        lines.append(
            f"| {_rows(r['rows'])} | {disk.get(r['rows'], float('nan')):.2f} | "
            f"{r['mode']} | {r['epochs']} | {r['rss_after_imports_mb']:.0f} | "
            f"{r['peak_rss_mb']:.0f} | "
            f"{r['peak_rss_mb'] - r['rss_after_imports_mb']:.0f} | "
            f"{np.mean(r['epoch_s']):.1f} | {r['rows_per_s']:,.0f} | "
            f"{r['accuracy']:.4f} | {r['other_cpu_share']:.2f} |"
        )
    lines += ["", *goals(runs, payload.get("agreement", {})), ""]
    bayes = sorted({round(r["bayes_accuracy"], 4) for r in runs})
    threads = sorted({str(r["n_threads"]) for r in runs})
    lines.append(
        f"LLPClassifier at its defaults (method='vat') but max_epochs, "
        f"n_threads={'/'.join(threads)}, random_state=0, device='cpu'; "
        f"{payload['machine']['usable_cpus']} "
        f"CPU cores ({payload['machine']['cpu']}). Peak RSS: 50 ms psutil "
        "samples from the imports to the end of fit (ru_maxrss and VmHWM "
        "during fit in the JSON agree). rows/s: rows of the data set over "
        "the mean epoch time (skorch's `dur`, held-out bags included). Test "
        f"accuracy: {TEST_ROWS:,} fresh rows against their sampled labels "
        f"(Bayes rule: {', '.join(map(str, bayes))}). Other jobs' cores: CPU "
        "time of every other process during the fit over its wall time (the "
        "machine is shared)."
    )
    profile = [r for r in payload["runs"] if r["variant"] != "default"]
    if profile:
        lines += [
            "",
            "Where the streamed fit's memory goes (one fit each, same data):",
            "",
            "| rows | variant | peak RSS (MiB) | above imports (MiB) | peak before "
            "epoch 1 (MiB) | peak in epochs (MiB) | tracemalloc peak (MiB) | "
            "s/epoch | test accuracy |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        base = [r for r in runs if r["mode"] == "streamed"]
        for r in sorted(base + profile, key=lambda r: (r["rows"], r["variant"])):
            if r["rows"] not in {p["rows"] for p in profile}:
                continue
            traced = r.get("tracemalloc_peak_mb")
            traced = "-" if traced is None else f"{traced:.0f}"
            lines.append(
                f"| {_rows(r['rows'])} | {r['variant']} | {r['peak_rss_mb']:.0f} | "
                f"{r['peak_rss_mb'] - r['rss_after_imports_mb']:.0f} | "
                f"{r['peak_setup_mb']:.0f} | {r['peak_training_mb']:.0f} | "
                f"{traced} | "
                f"{np.mean(r['epoch_s']):.1f} | {r['accuracy']:.4f} |"
            )
        lines.append("")
        lines += [f"- `{k}`: {v}" for k, v in payload.get("variants", {}).items()]
    if payload.get("notes"):
        lines += ["", "Notes:", "", *[f"- {note}" for note in payload["notes"]]]
    return "\n".join(lines) + "\n"


def goals(runs, agreement):
    """The issue's goals, checked on the runs there are."""
    by = {(r["rows"], r["mode"]): r for r in runs}
    out = []
    for n in sorted({r["rows"] for r in runs}):
        s, m = by.get((n, "streamed")), by.get((n, "in memory"))
        if s and m:
            ratio = m["rows_per_s"] / s["rows_per_s"]
            gap = abs(m["accuracy"] - s["accuracy"])
            out.append(
                f"- {_rows(n)} rows: in-memory / streamed rows/s = {ratio:.2f} "
                f"(goal <= 1.5); accuracy gap {gap:.4f} (goal <= 0.01); peak "
                f"{s['peak_rss_mb']:.0f} MiB streamed vs {m['peak_rss_mb']:.0f} MiB "
                "in memory; the two predict the same class for "
                f"{agreement.get(str(n), float('nan')):.1%} of the test rows."
            )
    streamed = sorted(
        (r["rows"], r["peak_rss_mb"]) for r in runs if r["mode"] == "streamed"
    )
    if len(streamed) > 1:
        peaks = ", ".join(f"{_rows(n)} {mb:.0f}" for n, mb in streamed)
        spread = max(mb for _, mb in streamed) - min(mb for _, mb in streamed)
        out.append(f"- Streamed peak RSS (MiB): {peaks}; spread {spread:.0f} MiB.")
    return out


def save(payload, out):
    write_results("dask_stream", payload, markdown(payload), out_dir=out)


# --- driver ---
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=float, nargs="*", default=[4e6, 16e6, 64e6])
    parser.add_argument("--in-memory", type=float, nargs="*", default=[4e6, 16e6])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--epochs-large", type=int, default=1, help="above 8M rows")
    parser.add_argument("--threads", default="auto", help="n_threads of the fits")
    parser.add_argument("--data", default=str(DATA_DIR))
    parser.add_argument("--out", default=None)
    parser.add_argument("--quick", action="store_true", help="2**20 rows")
    parser.add_argument("--delete-data", action="store_true")
    parser.add_argument("--resummarise", action="store_true")
    parser.add_argument("--variant", default="default", help="a profiling run's name")
    parser.add_argument("--about", default="", help="what the variant is")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return fit_one(json.loads(args.child))
    if args.quick:
        args.rows, args.in_memory = [2**20], [2**20]
    out = Path(args.out or (RESULTS_DIR if not args.quick else "/tmp/dask_stream"))
    results = out / "dask_stream.json"
    payload = {"runs": [], "data": [], "variants": {}}
    if results.exists():
        payload |= json.loads(results.read_text())
    if args.resummarise:
        return save(payload, out)
    payload["machine"] = machine_info()
    if args.variant != "default":
        payload["variants"][args.variant] = args.about
    for n in sorted(set(args.rows) | set(args.in_memory)):
        n = int(n)
        path = Path(args.data) / f"rows-{n}"
        meta = write_dataset(path, n)
        print(f"{_rows(n)}: {meta}", flush=True)
        payload["data"] = [d for d in payload["data"] if d["rows"] != n] + [meta]
        modes = ["streamed"] * (n in args.rows) + ["in memory"] * (n in args.in_memory)
        for mode in modes:
            cfg = {
                "path": str(path),
                "rows": n,
                "mode": mode,
                "epochs": args.epochs_large if n > 8e6 else args.epochs,
                "variant": args.variant,
                "threads": int(args.threads) if args.threads.isdigit() else "auto",
                "pred_path": str(path / f"pred-{mode.replace(' ', '_')}.npy"),
            }
            command = [sys.executable, __file__, "--child", json.dumps(cfg)]
            child = subprocess.run(command, capture_output=True, text=True)
            if child.returncode:
                sys.exit(f"{mode} fit on {_rows(n)} rows failed:\n{child.stderr}")
            run = json.loads(child.stdout.strip().splitlines()[-1])
            key = (run["rows"], run["mode"], run["variant"])
            payload["runs"] = [
                r
                for r in payload["runs"]
                if (r["rows"], r["mode"], r["variant"]) != key
            ] + [run]
            save(payload, out)
            print(
                f"  {mode} ({args.variant}): peak {run['peak_rss_mb']:.0f} MiB "
                f"(imports {run['rss_after_imports_mb']:.0f}), "
                f"{np.mean(run['epoch_s']):.1f} s/epoch, acc {run['accuracy']:.4f}",
                flush=True,
            )
        preds = [path / f"pred-{m}.npy" for m in ("streamed", "in_memory")]
        if args.variant == "default" and all(p.exists() for p in preds):
            agree = float(np.mean(np.load(preds[0]) == np.load(preds[1])))
            payload.setdefault("agreement", {})[str(n)] = agree
            save(payload, out)
            print(f"  streamed and in-memory predictions agree on {agree:.4f}")
        if args.delete_data:
            shutil.rmtree(path)


if __name__ == "__main__":
    main()
