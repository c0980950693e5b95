"""Fashion-MNIST in random bags of 256 at the defaults, the pixels fed at three
scales: standardised, in [0, 1] and in [0, 255] (issue 48, item 1).

Every fit leaves every parameter at its default but ``random_state``,
``verbose`` and ``n_threads=1``; the bags are ``default_method.py``'s. One JSON
line per fit, resumable.

    python benchmarks/studies/input_scale.py --scales unit standardised
    python benchmarks/studies/input_scale.py --markdown-only
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import accuracy_score

from sklearn_llp import LLPClassifier

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402
    FASHION_DIR,
    FASHION_FILES,
    RESULTS_DIR,
    load_dataset,
    read_idx,
)
from accuracy import make_bags  # noqa: E402
from default_method import _read  # noqa: E402

STEM = "input_scale"
#: scale -> pixels from their standardised values (None) or from the bytes
SCALES = {"standardised": None, "unit": 1 / 255, "byte": 1.0}


def run(scale, seed, library):
    torch.set_num_threads(1)
    X, X_test, _, y_test = load_dataset("fashion")
    bags, props, _ = make_bags("fashion", None, str(FASHION_DIR), "uniform-256", seed)
    if SCALES[scale] is not None:
        X, X_test = (
            read_idx(FASHION_DIR / FASHION_FILES[k]).reshape(-1, 784) * SCALES[scale]
            for k in ("X_train", "X_test")
        )
    keep = bags >= 0
    X, bags, props = X[keep].astype(np.float32), bags[keep], props[keep]
    X_test = X_test.astype(np.float32)
    clf = LLPClassifier(random_state=seed, verbose=0, n_threads=1)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, bags, props)
    fit_s = round(time.perf_counter() - start, 1)
    accuracy = float(accuracy_score(y_test, clf.predict(X_test)))
    return {
        "scale": scale,
        "seed": seed,
        "library": library,
        "trained": type(clf.method_).__name__,
        "fit_s": fit_s,
        "accuracy": accuracy,
    }


def markdown(records):
    lines = [
        "# Fashion-MNIST, random bags of 256, by input scale "
        "(`benchmarks/studies/input_scale.py`)",
        "",
        "Test accuracy in % at the defaults (1 torch thread, CPU, 2 cores shared "
        "with other jobs: fit times are upper bounds). Before the default MLP "
        "standardised its inputs (issue 48): 83.2 standardised "
        "(`default_method.jsonl`, VAT, seed 0), 76.6 in [0, 1] (the issue).",
        "",
        "| library | scale | seed | method | accuracy | fit (s) |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['library']} | {r['scale']} | {r['seed']} | {r['trained']} | "
            f"{100 * r['accuracy']:.1f} | {r['fit_s']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", nargs="*", default=list(SCALES))
    parser.add_argument("--seeds", type=int, nargs="*", default=[0])
    parser.add_argument("--library", default="standardising MLP")
    parser.add_argument("--markdown-only", action="store_true")
    args = parser.parse_args(argv)
    path = RESULTS_DIR / f"{STEM}.jsonl"
    done = {(r["scale"], r["seed"], r["library"]) for r in _read(path)}
    for seed in args.seeds:
        for scale in args.scales:
            if args.markdown_only or (scale, seed, args.library) in done:
                continue
            record = run(scale, seed, args.library)
            with path.open("a") as f:
                f.write(json.dumps(record) + "\n")
            print(json.dumps(record), flush=True)
    text = markdown(_read(path))
    (RESULTS_DIR / f"{STEM}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
