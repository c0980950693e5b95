"""A few labelled rows plus bags: labelled rows as singleton bags
==============================================================

Often some rows *do* have labels -- a small labelled survey next to
aggregated reports, a few audited cases among campaigns -- and the rest come
only in bags with their proportions. No special API is needed: a labelled
row is a **bag of one** whose proportions are its one-hot label, so the
labelled rows are appended to the bagged rows with bag ids of their own and
everything is fitted in one ``fit(X, bags, props)``.

Here scikit-learn's digits are split 70/30 and standardised; 100 training
images are set aside as the pool of labelled rows and the other 1,157 are
cut into random bags of 128 (10 bags, the last one of 5). DLLP (60 epochs)
is fitted on the bags plus the first 0, 10, 25, 50 and 100 labelled rows,
and compared with the same network trained on those labelled rows alone and
on every training label (the supervised limit).

The proportion loss is a mean over **bags**, so a singleton weighs as much
as a whole bag of 128: 50 labelled rows next to 10 bags carry 50/60 of the
loss. ``sample_weight`` does not change that (it weighs rows *within* a
bag); to give the labelled rows more weight, repeat them as more singleton
bags. :func:`~sklearn_llp.bags.check_identifiability` counts the labelled
rows too: its ``effective_labels`` grows with them, and the
``IdentifiabilityWarning`` of the bags alone stops at 50 labelled rows.

``plot_few_labels.png`` plots the test accuracy against the number of
labelled rows.

What the full run shows (seed 0; the gallery runs ``--quick``, whose
figure and numbers below differ): bags alone reach 0.500 test accuracy; with 10, 25,
50 and 100 labelled rows 0.820, 0.837, 0.876 and 0.904, against 0.578,
0.587, 0.726 and 0.863 from the labelled rows alone; every training label
gives 0.978. The bags and the labels help each other: 10 labelled rows
add 0.32 to the bags, and the bags add 0.04 to 0.25 to the labelled rows.

Runs offline in about 16 s of CPU time (one torch thread, 10 fits): 25 s
wall on a 2-core machine shared with other jobs (load average about 5);
``--quick`` (10 epochs, 0 and 50 labelled rows) in a few seconds.

Usage: ``python examples/plot_few_labels.py [--out DIR] [--quick]``.
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import UniformBagGenerator, check_identifiability
from sklearn_llp.exceptions import IdentifiabilityWarning

matplotlib.use("Agg")  # draw to files, no display needed
torch.set_num_threads(1)  # small networks: one thread is enough
# Default --out: examples/out/, git-ignored (sphinx-gallery, which defines no
# __file__, passes its own --out).
OUT = Path(globals().get("__file__", ".")).resolve().parent / "out"

BAG_SIZE = 128
N_LABELLED = [0, 10, 25, 50, 100]


def with_labelled_rows(X_bags, bags, props, X_labelled, y_labelled, classes):
    """Append labelled rows to bagged data, each as a bag of its own.

    Parameters
    ----------
    X_bags : ndarray of shape (n_bag_rows, n_features)
        The rows that come in bags.
    bags : ndarray of shape (n_bag_rows,)
        Their integer bag ids (non-negative).
    props : ndarray of shape (n_bag_rows, n_classes)
        Sample-aligned proportions, columns in the order of ``classes``.
    X_labelled : ndarray of shape (n_labelled, n_features)
        The labelled rows.
    y_labelled : ndarray of shape (n_labelled,)
        Their labels, values of ``classes``.
    classes : ndarray of shape (n_classes,)
        The class of every column of ``props``.

    Returns
    -------
    X, bags, props : ndarrays
        The rows, bag ids and proportions of both, for ``fit(X, bags, props)``:
        every labelled row gets a new bag id and its one-hot label as
        proportions.
    """
    ids = bags.max() + 1 + np.arange(len(y_labelled))
    one_hot = (np.asarray(y_labelled)[:, None] == classes).astype(float)
    return (
        np.vstack([X_bags, X_labelled]),
        np.concatenate([bags, ids]),
        np.vstack([props, one_hot]),
    )


def plot(results, n_test, path):
    fig, ax = plt.subplots(figsize=(8, 4.8))
    n = np.array(results["n_labelled"])
    ax.plot(
        n,
        results["bags + labelled rows"],
        "o-",
        color="tab:red",
        label=f"bags of {BAG_SIZE} + labelled rows as singleton bags",
    )
    only = results["labelled rows only"]
    ax.plot(n[1:], only[1:], "s--", color="tab:gray", label="labelled rows only")
    ax.axhline(
        results["supervised, every label"],
        color="tab:green",
        linestyle=":",
        label="every training label (supervised limit)",
    )
    for x, value in zip(n, results["bags + labelled rows"]):
        ax.annotate(
            f"{value:.3f}",
            (x, value),
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
            fontsize=8,
        )
    ax.set_xticks(n)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("Labelled rows added (each a bag of one)")
    ax.set_ylabel("Test accuracy (axis from 0)")
    ax.set_title(f"Digits: a few labelled rows plus bags (test: {n_test} images)")
    ax.legend(loc="lower right", fontsize="small")
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
        "--quick", action="store_true", help="10 epochs, 0 and 50 labelled rows"
    )
    args = parser.parse_args(argv)
    epochs = 10 if args.quick else 60
    n_labelled = [0, 50] if args.quick else N_LABELLED
    start = time.perf_counter()

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=0
    )
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    # a pool of 100 labelled images; the other training images come in bags
    order = np.random.RandomState(0).permutation(len(X_train))
    pool, bagged = order[:100], order[100:]
    generator = UniformBagGenerator(BAG_SIZE, drop_last=False, random_state=0)
    bags, props = generator.make_bags(X_train[bagged], y_train[bagged])
    classes = generator.classes_
    print(
        f"{len(bagged)} training images in {generator.n_bags_} bags of up to "
        f"{BAG_SIZE}; {len(pool)} more with labels. DLLP, {epochs} epochs.\n"
    )

    def model():
        return LLPClassifier(
            method="dllp", max_epochs=epochs, random_state=0, verbose=0
        )

    results = {
        "n_labelled": n_labelled,
        "bags + labelled rows": [],
        "labelled rows only": [],
        "effective_labels": [],
        "identifiability_warning": [],
    }
    print(
        "labelled   bags + labelled   labelled only   effective labels   "
        "identifiability warning"
    )
    for n in n_labelled:
        labelled = pool[:n]
        X_fit, bags_fit, props_fit = with_labelled_rows(
            X_train[bagged],
            bags,
            props,
            X_train[labelled],
            y_train[labelled],
            classes,
        )
        report = check_identifiability(X_fit, bags_fit, props_fit, classes=classes)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", IdentifiabilityWarning)
            clf = model().fit(X_fit, bags_fit, props_fit, classes=classes)
        warned = any(issubclass(w.category, IdentifiabilityWarning) for w in caught)
        accuracy = float(np.mean(clf.predict(X_test) == y_test))
        only = None  # no labelled rows to train on
        if n:
            alone = model().fit(X_train[labelled], y_train[labelled])
            only = float(np.mean(alone.predict(X_test) == y_test))
        results["bags + labelled rows"].append(accuracy)
        results["labelled rows only"].append(only)
        results["effective_labels"].append(report.effective_labels)
        results["identifiability_warning"].append(warned)
        shown = "-" if only is None else f"{only:.3f}"
        print(
            f"{n:>8}   {accuracy:>15.3f}   {shown:>13}   "
            f"{report.effective_labels:>16.0f}   {'yes' if warned else 'no'}"
        )
    supervised = model().fit(X_train, y_train)
    results["supervised, every label"] = float(
        np.mean(supervised.predict(X_test) == y_test)
    )
    print(
        f"\nevery training label ({len(X_train)} images): test accuracy "
        f"{results['supervised, every label']:.3f}"
    )

    path = Path(args.out) / "plot_few_labels.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    plot(results, len(y_test), path)
    # the printed numbers, for tests/test_doc_numbers.py (examples/results/
    # holds those of the full run, which this docstring quotes)
    numbers = {"quick": args.quick, "n_bags": int(generator.n_bags_), **results}
    json_path = path.with_suffix(".json")
    json_path.write_text(json.dumps(numbers, indent=2, default=float) + "\n")
    print(f"saved {path} and {json_path.name}  ({time.perf_counter() - start:.1f} s)")
    return results


if __name__ == "__main__":
    main()
