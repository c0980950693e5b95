"""One huge bag in bounded memory: per-epoch subsampling vs exact chunks.

DLLP on one bag of 10^5-10^6 rows trained three ways, each in a fresh
subprocess so its peak RSS is its own: ``subsample`` (``max_bag_size=1024``,
the default), ``whole`` (``max_bag_size=None``) and ``exact_chunks`` (the
exact proportion gradient over 4096-row chunks, :func:`exact_step`). See
``benchmarks/README.md``, section ``studies/huge_bag.py``.

    python benchmarks/studies/huge_bag.py            # bags of 1e5 and 1e6 rows
    python benchmarks/studies/huge_bag.py --quick    # 2e4 rows, for a smoke test
"""

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"


N_FEATURES = 20
SMALL_BAGS = 50
SMALL_BAG_SIZE = 64
CHUNK = 4096


def make_data(n_huge, seed=0):
    """One bag of ``n_huge`` rows plus 50 bags of 64; two classes."""
    rng = np.random.RandomState(seed)
    n = n_huge + SMALL_BAGS * SMALL_BAG_SIZE
    y = rng.randint(0, 2, n)
    X = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    X[:, 0] += 1.5 * y
    # the small bags group similar rows, so their proportions carry signal
    bags = np.zeros(n, int)
    small = n_huge + np.argsort(X[n_huge:, 0])
    bags[small] = 1 + np.arange(SMALL_BAGS).repeat(SMALL_BAG_SIZE)
    onehot = np.eye(2)[y]
    sums = np.zeros((SMALL_BAGS + 1, 2))
    np.add.at(sums, bags, onehot)
    props = (sums / sums.sum(1, keepdims=True))[bags]
    return X, bags, props, y


def exact_step(module, X_bag, p, optimizer, chunk=CHUNK):
    """One exact proportion-loss step on one bag, in chunks; returns the loss."""
    n = len(X_bag)
    with torch.no_grad():
        mean = (
            sum(
                torch.softmax(module(X_bag[i : i + chunk]), 1).sum(0)
                for i in range(0, n, chunk)
            )
            / n
        )
    optimizer.zero_grad()
    weight = p / mean.clamp_min(1e-8)
    for i in range(0, n, chunk):
        probs = torch.softmax(module(X_bag[i : i + chunk]), 1)
        (-(weight * probs.sum(0)).sum() / n).backward()
    optimizer.step()
    return float(-(p * mean.clamp_min(1e-8).log()).sum())


def _peak_rss_mb():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_config(config, n_huge, epochs):
    """Train one configuration in this process; return its measurements."""
    from sklearn_llp import LLPClassifier
    from sklearn_llp.modules import MLP

    torch.set_num_threads(1)
    X, bags, props, y = make_data(n_huge)
    rss_data = _peak_rss_mb()
    start = time.perf_counter()
    if config == "exact_chunks":
        torch.manual_seed(0)
        module = MLP(N_FEATURES, 2)
        optimizer = torch.optim.Adam(module.parameters(), lr=1e-3)
        X_t = torch.from_numpy(X)
        huge = X_t[bags == 0]
        p_huge = torch.tensor(props[0], dtype=torch.float32)
        order = np.argsort(bags[n_huge:], kind="stable") + n_huge
        small = X_t[order].view(SMALL_BAGS, SMALL_BAG_SIZE, N_FEATURES)
        p_small = torch.tensor(props[order][::SMALL_BAG_SIZE], dtype=torch.float32)
        for _ in range(epochs):
            exact_step(module, huge, p_huge, optimizer)
            for i in range(0, SMALL_BAGS, 2):  # 128 rows per step, as below
                optimizer.zero_grad()
                probs = torch.softmax(
                    module(small[i : i + 2].reshape(-1, N_FEATURES)), 1
                )
                means = probs.view(-1, SMALL_BAG_SIZE, 2).mean(1)
                loss = -(p_small[i : i + 2] * means.clamp_min(1e-8).log()).sum(1).mean()
                loss.backward()
                optimizer.step()
        predict = lambda Z: module(torch.from_numpy(Z)).argmax(1).numpy()  # noqa: E731
    else:
        max_bag_size = 1024 if config == "subsample" else None
        clf = LLPClassifier(
            method="dllp",
            max_bag_size=max_bag_size,
            max_epochs=epochs,
            verbose=0,
            random_state=0,
        ).fit(X, bags, props)
        predict = clf.predict
    seconds = time.perf_counter() - start
    return {
        "config": config,
        "n_huge": n_huge,
        "epochs": epochs,
        "seconds_per_epoch": seconds / epochs,
        "peak_rss_mb": _peak_rss_mb(),
        "data_rss_mb": rss_data,
        "train_accuracy": float(np.mean(predict(X) == y)),
    }


def gradient_fidelity(n_huge, draws=20, max_bag_size=1024):
    """Cosine between subsampled and exact proportion gradients of the huge bag."""
    from sklearn_llp.modules import MLP

    X, bags, props, _ = make_data(n_huge)
    torch.manual_seed(0)
    module = MLP(N_FEATURES, 2)
    huge = torch.from_numpy(X[bags == 0])
    p = torch.tensor(props[0], dtype=torch.float32)

    def grad_of(rows):
        module.zero_grad()
        mean = torch.softmax(module(rows), 1).mean(0)
        (-(p * mean.log()).sum()).backward()
        return torch.cat([q.grad.flatten() for q in module.parameters()])

    optimizer = torch.optim.SGD(module.parameters(), lr=0.0)
    module.zero_grad()
    exact_step(module, huge, p, optimizer)
    exact = torch.cat([q.grad.flatten() for q in module.parameters()]).clone()
    rng = np.random.RandomState(0)
    cosines = []
    for _ in range(draws):
        rows = huge[torch.from_numpy(rng.choice(len(huge), max_bag_size, False))]
        cosines.append(
            float(torch.nn.functional.cosine_similarity(grad_of(rows), exact, 0))
        )
    return float(np.mean(cosines)), float(np.min(cosines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--quick", action="store_true")
    add("--sizes", type=float, nargs="+", default=[100000.0, 1000000.0])
    add("--epochs", type=int, default=3)
    add("--out", default=str(RESULTS_DIR))
    add("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        config, n_huge = args.child[0], int(float(args.child[1]))
        print(json.dumps(run_config(config, n_huge, args.epochs)))
        return None
    sizes = [2e4] if args.quick else args.sizes
    epochs = 1 if args.quick else args.epochs
    rows = []
    for n_huge in map(int, sizes):
        for config in ("subsample", "whole", "exact_chunks"):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    config,
                    str(n_huge),
                    "--epochs",
                    str(epochs),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(rows[-1], flush=True)
        mean_cos, min_cos = gradient_fidelity(n_huge)
        rows.append(
            {
                "config": "gradient_cosine",
                "n_huge": n_huge,
                "mean": mean_cos,
                "min": min_cos,
            }
        )
        print(rows[-1], flush=True)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = {
        "machine": platform.processor() or platform.machine(),
        "torch_threads": 1,
        "torch": torch.__version__,
    }
    (out_dir / "huge_bag.json").write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=1)
    )
    lines = [
        "| bag rows | config | s / epoch | peak RSS (MB) | data RSS (MB) | train acc |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["config"] == "gradient_cosine":
            continue
        lines.append(
            f"| {r['n_huge']:,} | {r['config']} | {r['seconds_per_epoch']:.2f} | "
            f"{r['peak_rss_mb']:.0f} | {r['data_rss_mb']:.0f} | "
            f"{r['train_accuracy']:.3f} |"
        )
    lines.append("")
    lines.append(
        "| bag rows | cosine(subsampled 1024-row gradient, exact) mean | min |"
    )
    lines.append("|---|---|---|")
    for r in rows:
        if r["config"] == "gradient_cosine":
            lines.append(f"| {r['n_huge']:,} | {r['mean']:.3f} | {r['min']:.3f} |")
    (out_dir / "huge_bag.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return rows


if __name__ == "__main__":
    main()
