"""Digits from bags of 16: LLP-VAT and DLLP against the supervised limit
=====================================================================

scikit-learn's digits are split 70/30 and standardised; the training images
are cut into random bags of 16 and only each bag's digit proportions are
kept. Default LLPClassifier settings learn an instance classifier from them
in a few seconds on a CPU. The same network trained on the individual labels
(``props=None``) is the limit to compare with.

``digits_bags.png`` shows the three test accuracies (axis from 0) and the
confusion matrix of LLP-VAT on the test images: which digits a classifier
that never saw a single labelled image confuses.

Runs in about 8 s on 2 CPU cores (100 epochs per model); ``--quick`` (10
epochs) in about 2 s.

Usage: ``python examples/digits_bags.py [--out DIR] [--quick]``.
"""

import argparse
import time
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.metrics import ConfusionMatrixDisplay
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import UniformBagGenerator

matplotlib.use("Agg")  # draw to files, no display needed
torch.set_num_threads(1)  # small networks: one thread is enough
# Default --out: examples/out/, git-ignored (sphinx-gallery, which defines no
# __file__, passes its own --out).
OUT = Path(globals().get("__file__", ".")).resolve().parent / "out"

MODELS = [
    ("LLP-VAT (bags of 16)", "vat", False),
    ("DLLP (bags of 16)", "dllp", False),
    ("supervised (same network)", "dllp", True),
]


def plot(accuracies, y_test, vat_pred, path):
    fig, (ax_acc, ax_cm) = plt.subplots(
        1, 2, figsize=(12, 5), gridspec_kw={"width_ratios": [1, 1.1]}
    )
    names = list(accuracies)
    values = [accuracies[name] for name in names]
    bars = ax_acc.bar(
        [name.replace(" (", "\n(") for name in names],
        values,
        color=["tab:red", "tab:gray", "tab:green"],
    )
    ax_acc.bar_label(bars, labels=[f"{v:.3f}" for v in values])
    ax_acc.set_ylim(0, 1.05)
    ax_acc.set_ylabel("Test accuracy (axis from 0)")
    ax_acc.set_title(f"Test accuracy on {len(y_test)} digits")
    ConfusionMatrixDisplay.from_predictions(
        y_test, vat_pred, ax=ax_cm, colorbar=False, cmap="Reds"
    )
    ax_cm.set_title("LLP-VAT from bags of 16: test confusion matrix")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument(
        "--out",
        default=OUT,
        help="folder of the PNG (default examples/out, git-ignored)",
    )
    parser.add_argument("--quick", action="store_true", help="10 epochs, not 100")
    args = parser.parse_args(argv)
    epochs = 10 if args.quick else 100
    start = time.perf_counter()

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=0
    )
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)

    bags, props = UniformBagGenerator(16, drop_last=False, random_state=0).make_bags(
        X_train, y_train
    )
    print(f"{len(X_train)} training images in {bags.max() + 1} bags of 16\n")

    accuracies, predictions = {}, {}
    for name, method, supervised in MODELS:
        clf = LLPClassifier(method=method, max_epochs=epochs, random_state=0, verbose=0)
        tic = time.perf_counter()
        if supervised:
            clf.fit(X_train, y_train)
        else:
            clf.fit(X_train, bags, props)
        seconds = time.perf_counter() - tic
        predictions[name] = clf.predict(X_test)
        accuracies[name] = float(np.mean(predictions[name] == y_test))
        print(f"{name:<28} test accuracy {accuracies[name]:.3f}  ({seconds:.1f} s)")

    path = Path(args.out) / "digits_bags.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    plot(accuracies, y_test, predictions[MODELS[0][0]], path)
    print(f"saved {path}  ({time.perf_counter() - start:.1f} s)")
    return accuracies


if __name__ == "__main__":
    main()
