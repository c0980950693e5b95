"""One huge bag in bounded memory: per-epoch subsampling vs exact chunks.

python benchmarks/studies/huge_bag.py                  # bags of 1e5 and 1e6 rows
python benchmarks/studies/huge_bag.py --quick          # 2e4 rows, a smoke test
python benchmarks/studies/huge_bag.py --markdown-only  # redo the .md from the .json
"""

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from sklearn_llp import LLPClassifier
from sklearn_llp.modules import MLP

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _common
from _common import RESULTS_DIR, write_results  # noqa: E402

N_FEATURES, SMALL_BAGS, SMALL_BAG_SIZE, CHUNK = 20, 50, 64, 4096
CONFIGS = ("subsample", "whole", "exact_chunks")


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
    sums = np.zeros((SMALL_BAGS + 1, 2))
    np.add.at(sums, bags, np.eye(2)[y])
    return X, bags, (sums / sums.sum(1, keepdims=True))[bags], y


def exact_step(module, X_bag, p, optimizer, chunk=CHUNK):
    """One exact proportion-loss step on one bag, in chunks; returns the loss."""
    n = len(X_bag)
    chunks = [X_bag[i : i + chunk] for i in range(0, n, chunk)]
    with torch.no_grad():
        mean = sum(torch.softmax(module(x), 1).sum(0) for x in chunks) / n
    optimizer.zero_grad()
    weight = p / mean.clamp_min(1e-8)
    for x in chunks:  # d loss / d probs is -p / mean for every row
        (-(weight * torch.softmax(module(x), 1).sum(0)).sum() / n).backward()
    optimizer.step()
    return float(-(p * mean.clamp_min(1e-8).log()).sum())


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def train_exact_chunks(X, bags, props, n_huge, epochs):
    """The exact step on the huge bag, then the small bags 2 (128 rows) a step."""
    torch.manual_seed(0)
    module = MLP(N_FEATURES, 2)
    optimizer = torch.optim.Adam(module.parameters(), lr=1e-3)
    X_t = torch.from_numpy(X)
    huge, p_huge = X_t[bags == 0], torch.tensor(props[0], dtype=torch.float32)
    order = np.argsort(bags[n_huge:], kind="stable") + n_huge
    small = X_t[order].view(SMALL_BAGS, SMALL_BAG_SIZE, N_FEATURES)
    p_small = torch.tensor(props[order][::SMALL_BAG_SIZE], dtype=torch.float32)
    for _ in range(epochs):
        exact_step(module, huge, p_huge, optimizer)
        for i in range(0, SMALL_BAGS, 2):
            optimizer.zero_grad()
            probs = torch.softmax(module(small[i : i + 2].reshape(-1, N_FEATURES)), 1)
            means = probs.view(-1, SMALL_BAG_SIZE, 2).mean(1).clamp_min(1e-8)
            (-(p_small[i : i + 2] * means.log()).sum(1).mean()).backward()
            optimizer.step()
    return lambda Z: module(torch.from_numpy(Z)).argmax(1).numpy()


def run_config(config, n_huge, epochs):
    """Train one configuration in this process; return its measurements."""
    torch.set_num_threads(1)
    X, bags, props, y = make_data(n_huge)
    rss_data, start = peak_rss_mb(), time.perf_counter()
    if config == "exact_chunks":
        predict = train_exact_chunks(X, bags, props, n_huge, epochs)
    else:
        max_bag_size = 1024 if config == "subsample" else None
        params = dict(method="dllp", max_epochs=epochs, verbose=0, random_state=0)
        clf = LLPClassifier(max_bag_size=max_bag_size, **params)
        predict = clf.fit(X, bags, props).predict
    return {
        "config": config,
        "n_huge": n_huge,
        "epochs": epochs,
        "seconds_per_epoch": (time.perf_counter() - start) / epochs,
        "peak_rss_mb": peak_rss_mb(),
        "data_rss_mb": rss_data,
        "train_accuracy": float(np.mean(predict(X) == y)),
    }


def gradient_fidelity(n_huge, draws=20, max_bag_size=1024):
    """Cosine between subsampled and exact proportion gradients of the huge bag."""
    X, bags, props, _ = make_data(n_huge)
    torch.manual_seed(0)
    module = MLP(N_FEATURES, 2)
    huge = torch.from_numpy(X[bags == 0])
    p = torch.tensor(props[0], dtype=torch.float32)

    def gradient():
        return torch.cat([q.grad.flatten() for q in module.parameters()])

    exact_step(module, huge, p, torch.optim.SGD(module.parameters(), lr=0.0))
    exact = gradient().clone()
    rng = np.random.RandomState(0)
    cosines = []
    for _ in range(draws):
        rows = huge[torch.from_numpy(rng.choice(len(huge), max_bag_size, False))]
        module.zero_grad()
        (-(p * torch.softmax(module(rows), 1).mean(0).log()).sum()).backward()
        cosines.append(float(torch.cosine_similarity(gradient(), exact, 0)))
    return {"mean": float(np.mean(cosines)), "min": float(np.min(cosines))}


FIT_TABLE = (
    "| bag rows | config | s / epoch | peak RSS (MB) | data RSS (MB) | train acc |",
    "|---|---|---|---|---|---|",
    "| {n_huge:,} | {config} | {seconds_per_epoch:.2f} | {peak_rss_mb:.0f} | "
    "{data_rss_mb:.0f} | {train_accuracy:.3f} |",
)
COSINE_TABLE = (
    "| bag rows | cosine(subsampled 1024-row gradient, exact) mean | min |",
    "|---|---|---|",
    "| {n_huge:,} | {mean:.3f} | {min:.3f} |",
)


def markdown(rows):
    def table(header, rule, row, cosine):
        chosen = [r for r in rows if (r["config"] == "gradient_cosine") == cosine]
        return [header, rule, *(row.format(**r) for r in chosen)]

    return "\n".join([*table(*FIT_TABLE, False), "", *table(*COSINE_TABLE, True)])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--quick", action="store_true")
    add("--sizes", type=float, nargs="+", default=[100000.0, 1000000.0])
    add("--epochs", type=int, default=3)
    add("--out", default=str(RESULTS_DIR))
    add("--markdown-only", action="store_true", help="redo the .md from the .json")
    add("--child", nargs=3, help=argparse.SUPPRESS)  # config, rows, epochs
    args = parser.parse_args(argv)
    if args.child:  # one configuration in a fresh process: its peak RSS is its own
        config, n_huge, epochs = args.child
        return print(json.dumps(run_config(config, int(n_huge), int(epochs))))
    out = Path(args.out)
    if args.markdown_only:
        rows = json.loads((out / "huge_bag.json").read_text())["rows"]
    else:
        epochs, rows = 1 if args.quick else args.epochs, []
        for n_huge in map(int, [2e4] if args.quick else args.sizes):
            for config in CONFIGS:
                child = [__file__, "--child", config, str(n_huge), str(epochs)]
                lines = subprocess.check_output([sys.executable, *child], text=True)
                rows.append(json.loads(lines.strip().splitlines()[-1]))
                print(rows[-1], flush=True)
            rows.append({"config": "gradient_cosine", "n_huge": n_huge})
            rows[-1].update(gradient_fidelity(n_huge))
            print(rows[-1], flush=True)
        machine = platform.processor() or platform.machine()
        meta = {"machine": machine, "torch_threads": 1, "torch": torch.__version__}
        write_results("huge_bag", {"meta": meta, "rows": rows}, out_dir=out)
    (out / "huge_bag.md").write_text(markdown(rows) + "\n")
    print(markdown(rows))
    return rows


if __name__ == "__main__":
    main()
