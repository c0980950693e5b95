"""LLPRegressor against three baselines: weekly hours from bag means (Adult).

``python benchmarks/regression.py [--quick] [--seeds 0 1 2]`` writes
``results/regression.{json,md}``; setup: ``benchmarks/README.md``.
"""

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import RidgeCV
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from sklearn_llp import LLPRegressor
from sklearn_llp.bags import KMeansBagGenerator, UniformBagGenerator
from sklearn_llp.datasets import load_adult
from sklearn_llp.modules import MLP

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _common
from _common import RESULTS_DIR, adult_encoder, write_results  # noqa: E402

TARGET = "hours_per_week"
LABELS = {
    "llp-bag": "LLPRegressor() (bag loss, defaults)",
    "llp-interpolating": 'LLPRegressor(method="interpolating")',
    "plain-loop": "plain bag-mean PyTorch loop (same MLP)",
    "ecological": "ecological regression (ridge on bag means)",
    "instance": "same MLP on instance targets (bound)",
}
ESTIMATORS = tuple(LABELS)


def load(max_train, seed=0):
    """Standardised features, hours per week; a fixed 70/30 split."""
    frame = load_adult(as_frame=True).frame
    y = frame[TARGET].to_numpy(np.float64)
    X = frame.drop(columns=[TARGET, "income"])
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=seed
    )
    if max_train and max_train < len(X_train):
        X_train, y_train = X_train.iloc[:max_train], y_train[:max_train]
    encoder = adult_encoder()
    X_train = encoder.fit_transform(X_train).astype(np.float32)
    return X_train, encoder.transform(X_test).astype(np.float32), y_train, y_test


def make_bags(bagging, X, seed):
    if bagging == "kmeans":
        return KMeansBagGenerator(len(X) // 64, random_state=seed).fit_transform(X)
    uniform = UniformBagGenerator(int(bagging), drop_last=False, random_state=seed)
    return uniform.fit_transform(X)


def bag_means(bags, values):
    ids, codes = np.unique(bags, return_inverse=True)
    sizes = np.bincount(codes)
    sums = np.zeros((len(ids),) + values.shape[1:])
    np.add.at(sums, codes, values)
    return codes, sizes, sums / sizes.reshape(-1, *([1] * (values.ndim - 1)))


def plain_loop(X, bags, targets, epochs, *, rows_per_step, seed):
    """The bag-mean loop a user would write, on the same MLP."""
    torch.manual_seed(seed)
    rng = np.random.RandomState(seed)
    codes, sizes, means = bag_means(bags, targets)
    mean, scale = means.mean(), means.std()
    order_of = np.argsort(codes, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)])
    X_t = torch.as_tensor(X)
    z = torch.as_tensor((means - mean) / scale, dtype=torch.float32)
    net = MLP(X.shape[1], 1)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    bags_per_step = max(1, rows_per_step // int(np.median(sizes)))
    for _ in range(epochs):
        perm = rng.permutation(len(sizes))
        for i in range(0, len(perm), bags_per_step):
            chosen = perm[i : i + bags_per_step]
            rows = np.concatenate([order_of[starts[b] : starts[b + 1]] for b in chosen])
            segment = torch.as_tensor(np.repeat(np.arange(len(chosen)), sizes[chosen]))
            out = net(X_t[rows]).squeeze(1)
            sums = torch.zeros(len(chosen)).index_add_(0, segment, out)
            counts = torch.as_tensor(sizes[chosen], dtype=torch.float32)
            loss = (counts * (sums / counts - z[chosen]) ** 2).sum() / counts.sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    @torch.no_grad()
    def predict(X_new):
        return net(torch.as_tensor(X_new)).squeeze(1).numpy() * scale + mean

    return predict


def ecological(X, bags, targets):
    _, sizes, X_means = bag_means(bags, X.astype(np.float64))
    _, _, y_means = bag_means(bags, targets)
    # ridge, its penalty chosen by leave-one-bag-out: plain least squares on
    # ~100 one-hot columns of bag means is ill-posed
    model = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(
        X_means, y_means, sample_weight=sizes
    )
    return model.predict


def run(estimator, X, bags, targets, y_train, seed, epochs):
    """``predict`` of a fitted estimator, and the LLPRegressor (or None)."""
    if estimator == "ecological":
        return ecological(X, bags, targets), None
    model = LLPRegressor(random_state=seed, verbose=0, n_threads=1)
    model.set_params(max_epochs=epochs or model.max_epochs)
    if estimator == "plain-loop":  # the epochs and rows a step LLPRegressor uses
        rows = model.set_params(max_epochs=0).fit(X, bags, targets).batch_size_
        epochs = epochs or LLPRegressor().max_epochs
        return plain_loop(X, bags, targets, epochs, rows_per_step=rows, seed=seed), None
    model.set_params(
        method="interpolating" if estimator == "llp-interpolating" else "bag"
    )
    model.fit(*((X, y_train) if estimator == "instance" else (X, bags, targets)))
    return model.predict, model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--seeds", type=int, nargs="+", default=[0, 1, 2])
    add("--baggings", nargs="+", default=["16", "64", "kmeans"])
    add("--max-train", type=int, default=10000)
    add("--epochs", type=int, default=None, help="default: the library's")
    add("--quick", action="store_true", help="2,000 rows, 2 epochs")
    add("--out", type=Path, default=RESULTS_DIR)
    add("--markdown-only", action="store_true", help="regression.md from the JSON")
    args = parser.parse_args(argv)
    if args.markdown_only:
        report = json.loads((args.out / "regression.json").read_text())
        return (args.out / "regression.md").write_text(markdown(report))
    if args.quick:
        args.max_train, args.epochs, args.seeds = 2_000, 2, args.seeds[:1]
    torch.set_num_threads(1)
    records, started = [], time.time()
    for seed in args.seeds:
        X, X_test, y, y_test = load(args.max_train, seed)
        for bagging in args.baggings:
            bags = make_bags(bagging, X, seed)
            codes, _, means = bag_means(bags, y)
            targets = means[codes]  # every row gets its bag's mean
            for estimator in ESTIMATORS:
                tic = time.time()
                predict, model = run(estimator, X, bags, targets, y, seed, args.epochs)
                r2 = float(r2_score(y_test, predict(X_test)))
                record = dict(seed=seed, bagging=bagging, estimator=estimator, r2=r2)
                record["fit_s"] = round(time.time() - tic, 2)
                record["n_bags"] = len(np.unique(bags))
                record["epochs_run"] = None if model is None else len(model.history)
                records.append(record)
                print(json.dumps(record), flush=True)
    report = {
        "machine": f"{platform.processor() or platform.machine()}, torch "
        f"{torch.__version__}, 1 thread",
        "settings": {k: v for k, v in vars(args).items() if k != "markdown_only"}
        | {"out": str(args.out)},
        "wall_s": round(time.time() - started, 1),
        "records": records,
    }
    write_results("regression", report, markdown(report), args.out)
    print(markdown(report))


def markdown(report):
    records = report["records"]
    baggings = list(dict.fromkeys(r["bagging"] for r in records))
    title = {"16": "random 16", "64": "random 64", "kmeans": "K-means"}
    lines = [
        "# Weekly hours from bag means (`benchmarks/regression.py`)",
        "",
        f"Adult, {report['settings']['max_train']:,} training people, test R² on "
        f"the held-out people's own hours, mean ± std over seeds "
        f"{report['settings']['seeds']}; {report['machine']}; "
        f"{report['wall_s'] / 60:.1f} min in all.",
        "",
        "| estimator | " + " | ".join(title.get(b, b) for b in baggings) + " | fit s |",
        "|---|" + "---|" * (len(baggings) + 1),
    ]
    for estimator in ESTIMATORS:
        mine = [r for r in records if r["estimator"] == estimator]
        cells = [LABELS[estimator]]
        for bagging in baggings:
            values = [r["r2"] for r in mine if r["bagging"] == bagging]
            std = np.std(values, ddof=1) if len(values) > 1 else 0.0
            cells.append(f"{np.mean(values):.3f} ± {std:.3f}")
        cells.append(f"{np.mean([r['fit_s'] for r in mine]):.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
