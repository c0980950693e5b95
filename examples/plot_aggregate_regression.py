"""Weekly hours of each person from group averages: ``LLPRegressor``
==================================================================

A continuous target is often published only as group means: average hours
by district, conversion value per campaign. Here the bundled UCI Adult data
is split 70/30; the training people are grouped the way census tables are
(age band x sex x education) and keep only their group's **mean weekly
hours**. An ``LLPRegressor`` (in a Pipeline with one-hot categoricals and
scaled numerics) learns each person's hours from those means alone, and is
compared on the test people with:

* the same pipeline trained on every person's own hours (the limit);
* the group-average lookup: every test person gets the mean hours of the
  training group they fall into (the best one can do with the table alone);
* the overall mean (R² 0 by construction on the training mean).

``plot_aggregate_regression.png`` shows the test people's predicted against
true hours, and the bag view: every held-out group of test people, its
predicted mean hours against its true mean (marker area by group size).

What the full run shows (seed 0; the gallery runs ``--quick``, whose
figure and numbers below differ): test R² 0.123 from group means, 0.156 for the
group-average lookup and 0.261 with individual hours; on the 186 held-out
groups the predicted means have R² 0.908 against the true ones. Weekly
hours are hard to predict from census columns (the network trained on every
person's hours explains a quarter of their variance); from 188 group means
alone the network comes within 0.033 of the lookup table, and it needs only
each person's columns, not their group's published mean.

Runs offline in 7 min on a 2-core CPU beside other jobs (one torch thread,
load average about 5; an earlier version took 35 s idle);
``--quick`` (5,000 training people, 3 epochs) in a few seconds.

Usage: ``python examples/plot_aggregate_regression.py [--out DIR] [--quick]``.
"""

import argparse
import json
import time
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklearn_llp import LLPRegressor
from sklearn_llp.bags import FeatureBagGenerator
from sklearn_llp.datasets import load_adult
from sklearn_llp.metrics import bag_r2_score

matplotlib.use("Agg")  # draw to files, no display needed
torch.set_num_threads(1)  # small networks: one thread is enough
# Default --out: examples/out/, git-ignored (sphinx-gallery, which defines no
# __file__, passes its own --out).
OUT = Path(globals().get("__file__", ".")).resolve().parent / "out"
TARGET = "hours_per_week"


def preprocessor():
    return make_column_transformer(
        (
            OneHotEncoder(handle_unknown="ignore", min_frequency=20),
            make_column_selector(dtype_include="category"),
        ),
        (StandardScaler(), make_column_selector(dtype_include="number")),
    )


def plot(y_test, predicted, held_out, path):
    fig, (ax_rows, ax_bags) = plt.subplots(1, 2, figsize=(12, 5.2))
    ax_rows.hexbin(y_test, predicted, gridsize=40, mincnt=1, bins="log", cmap="Blues")
    ax_rows.plot([0, 100], [0, 100], color="gray", lw=1)
    ax_rows.set_xlabel("True weekly hours (test person)")
    ax_rows.set_ylabel("Predicted weekly hours")
    ax_rows.set_title(
        f"{len(y_test):,} test people, R² {r2_score(y_test, predicted):.3f}"
    )
    ax_bags.scatter(
        held_out["true"], held_out["predicted"], s=held_out["size"] / 2, alpha=0.6
    )
    low, high = held_out[["true", "predicted"]].min().min(), held_out.max().max()
    ax_bags.plot([low, 100], [low, 100], color="gray", lw=1)
    ax_bags.set_xlim(low - 2, min(high, 100) + 2)
    ax_bags.set_ylim(low - 2, min(high, 100) + 2)
    ax_bags.set_xlabel("True mean hours of the held-out group")
    ax_bags.set_ylabel("Predicted mean hours")
    ax_bags.set_title(f"{len(held_out)} held-out groups of test people")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument(
        "--out",
        default=OUT,
        help="folder of the PNG and of the printed numbers as JSON "
        "(default examples/out, git-ignored)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="5,000 training people, 3 epochs"
    )
    args = parser.parse_args(argv)
    epochs = {"max_epochs": 3} if args.quick else {}  # else the default
    start = time.perf_counter()

    frame = load_adult(as_frame=True).frame
    y = frame[TARGET].to_numpy(np.float64)
    X = frame.drop(columns=[TARGET, "income"])
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=0
    )
    if args.quick:
        X_train, y_train = X_train.iloc[:5000], y_train[:5000]

    # Census-style groups; only each group's mean hours are kept. The hours
    # are whole numbers, so make_bag_means (make_bags would read them as
    # class labels).
    groups = FeatureBagGenerator(["age", "sex", "education"], n_bins={"age": 6})
    bags, targets = groups.make_bag_means(X_train, y_train)
    print(
        f"{len(X_train):,} training people in {groups.n_bags_} groups (median "
        f"size {int(np.median(groups.bag_sizes_))}); only each group's mean "
        "hours are used.\n"
    )

    tic = time.perf_counter()
    llp = make_pipeline(
        preprocessor(), LLPRegressor(random_state=0, verbose=0, **epochs)
    )
    llp.fit(X_train, bags, llpregressor__targets=targets)
    seconds = time.perf_counter() - tic
    supervised = make_pipeline(
        preprocessor(), LLPRegressor(random_state=0, verbose=0, **epochs)
    )
    supervised.fit(X_train, y_train)

    # the group-average lookup: a test person's training group mean
    means = pd.Series(targets, index=bags).groupby(level=0).first()
    test_groups = groups.transform(X_test)  # -1: a group unseen in training
    lookup = np.where(
        test_groups >= 0,
        means.reindex(test_groups).to_numpy(),
        np.average(targets),
    )

    predicted = llp.predict(X_test)
    scores = {
        "LLPRegressor from group means": r2_score(y_test, predicted),
        "group-average lookup": r2_score(y_test, lookup),
        "same pipeline, individual hours": r2_score(y_test, supervised.predict(X_test)),
    }
    print(f"Test people ({len(X_test):,}), R² of their weekly hours:")
    for name, value in scores.items():
        print(f"  {name:<34} {value:.3f}")

    # Held-out groups: the test people grouped the same way.
    kept = test_groups >= 0
    held_out = (
        pd.DataFrame(
            {
                "group": test_groups[kept],
                "true": y_test[kept],
                "predicted": predicted[kept],
            }
        )
        .groupby("group")
        .agg(
            true=("true", "mean"),
            predicted=("predicted", "mean"),
            size=("true", "size"),
        )
    )
    # the bag view: R² of the groups' predicted mean hours (each group once)
    bag_r2 = bag_r2_score(
        test_groups[kept], held_out["true"].to_dict(), predicted[kept]
    )
    print(
        f"\n{len(held_out)} held-out groups: R² of their predicted mean hours "
        f"{bag_r2:.3f}.  (LLP fit {seconds:.0f} s)"
    )

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot(y_test, predicted, held_out, out / "plot_aggregate_regression.png")
    numbers = {
        "quick": args.quick,
        "test_r2": scores,
        "held_out_groups": len(held_out),
        "held_out_bag_r2": bag_r2,
        "seconds": time.perf_counter() - start,
    }
    (out / "plot_aggregate_regression.json").write_text(
        json.dumps(numbers, indent=1) + "\n", encoding="utf-8"
    )
    return scores


if __name__ == "__main__":
    main()
