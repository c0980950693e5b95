"""Mini-bag labels: a cut bag labelled by a hypergeometric draw, or by its
bag's own proportions (issue 33, Kubo et al. 2024).

Adult in random bags of 512 rows cut to ``max_bag_size=128`` every epoch,
DLLP at the defaults otherwise (100 epochs), seeds 0-2; the same fit with
the bags uncut for reference. Results: ``results/mini_bags.{json,md}``.

    python benchmarks/studies/mini_bags.py
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score, roc_auc_score

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import UniformBagGenerator
from sklearn_llp.methods import DLLP

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import RESULTS_DIR, load_dataset, machine_info, write_results  # noqa: E402


class BagLabelDLLP(DLLP):
    """DLLP whose cut bags keep their bag's proportions."""

    labels_mini_bags = False


VARIANTS = {
    "drawn (default)": (DLLP, 128),
    "bag's own proportions": (BagLabelDLLP, 128),
    "uncut": (DLLP, None),
}


def run(variant, seed):
    X, X_test, y, y_test = load_dataset("adult")
    bags, props = UniformBagGenerator(512, random_state=seed).make_bags(X, y)
    keep = bags >= 0
    method, max_bag_size = VARIANTS[variant]
    clf = LLPClassifier(
        method=method(),
        max_bag_size=max_bag_size,
        random_state=seed,
        verbose=0,
        n_threads=1,
    )
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X[keep], bags[keep], props[keep])
    return {
        "variant": variant,
        "seed": seed,
        "accuracy": float(accuracy_score(y_test, clf.predict(X_test))),
        "auc": float(roc_auc_score(y_test, clf.predict_proba(X_test)[:, 1])),
        "fit_s": round(time.perf_counter() - start, 1),
    }


def markdown(records):
    lines = [
        "# Mini-bag labels (`benchmarks/studies/mini_bags.py`)",
        "",
        "Adult, random bags of 512 cut to 128 rows every epoch "
        "(`max_bag_size=128`), DLLP, 100 epochs, 1 thread; test accuracy (%) "
        "/ ROC AUC per seed and their mean.",
        "",
        "| cut bags labelled by | seeds | per seed | mean |",
        "|---|---|---|---|",
    ]
    for variant in VARIANTS:
        rows = [r for r in records if r["variant"] == variant]
        per_seed = ", ".join(
            f"{100 * r['accuracy']:.1f} / {r['auc']:.3f}" for r in rows
        )
        mean = (
            f"{100 * np.mean([r['accuracy'] for r in rows]):.1f} / "
            f"{np.mean([r['auc'] for r in rows]):.3f}"
        )
        label = "(bags uncut)" if variant == "uncut" else variant
        lines.append(f"| {label} | {len(rows)} | {per_seed} | {mean} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    parser.add_argument("--out", default=str(RESULTS_DIR))
    args = parser.parse_args(argv)
    records = [run(v, s) for v in VARIANTS for s in args.seeds]
    payload = {"machine": machine_info(), "runs": records}
    write_results("mini_bags", payload, markdown(records), out_dir=Path(args.out))
    print(markdown(records))


if __name__ == "__main__":
    main()
