"""Where the goals of issue 33 are lost: the decision rule or the ranking.

The default fit of each cell (every parameter at its default). Two classes:
scored at the prior-matched threshold ``predict`` uses and at the best
threshold chosen with the test labels (a ceiling no rule without labels can
pass), with its ROC AUC. More classes: scored at argmax and at prior
matching. One JSON line per fit, resumable.

    python benchmarks/studies/decision_ceiling.py --seeds 0 1
    python benchmarks/studies/decision_ceiling.py --markdown-only
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _configs  # noqa: E402

STEM = "decision_ceiling"
CELLS = (
    "adult-256",
    "adult-512",
    "adult-25-bags",
    "adult-10-bags",
    "fashion-256",
    "fashion-512",
    "fashion-1024",
)
CONFIGS = {"defaults": {}}
HEADING = [
    "# The decision rule against the ranking "
    "(`benchmarks/studies/decision_ceiling.py`)",
    "",
    "`LLPClassifier()` at its defaults (*trained*: the method `auto` chose), "
    "100 epochs, 1 torch thread a fit, CPU; test scores in %, seed by seed.",
]
BINARY = [
    "## Two classes (Adult)",
    "",
    '*predict*: the prior-matched threshold of `threshold="auto"`; *best*: '
    "the threshold that maximises the test score, chosen with the test labels. "
    "The same MLP trained on the instance labels: accuracy 85.6, F1 67.2, "
    "AUC 90.9 (`accuracy.md`).",
]
MANY = [
    "## Ten classes (Fashion-MNIST)",
    "",
    'Test accuracy of the same network at `threshold="argmax"` and at '
    '`threshold="prior"` (class rates on the training rows matched to the '
    "bags'). The same MLP trained on the labels: 90.1 (`accuracy.md`).",
]


def _seeds(runs, key):
    return " · ".join(f"{100 * r[key]:.1f}" for r in runs)


def _rows(records, cells, key, row):
    """A table row of every cell whose records hold ``key``."""
    lines = []
    for cell, rows in _configs.by_cell([r for r in records if key in r], cells):
        runs = sorted(rows, key=lambda r: r["seed"])
        trained = "/".join(sorted({r["trained"] for r in runs}))
        seeds = ",".join(str(r["seed"]) for r in runs)
        lines.append(f"| {cell} | {trained} | {seeds} | " + row(runs) + " |")
    return lines


def markdown(records, cells, configs, heading):
    """Two classes: accuracy and F1 at predict's threshold and at the best,
    AUC; many classes: accuracy at argmax and at prior matching."""
    binary = [r for r in records if "f1" in r]
    gain = {
        score: 100 * np.mean([r[f"best_threshold_{score}"] - r[score] for r in binary])
        for score in ("accuracy", "f1")
    }
    return (
        "\n".join(
            [
                *heading,
                "",
                *BINARY,
                "",
                "| cell | trained | seeds | accuracy: predict / best "
                "| F1: predict / best | AUC |",
                "|---|---|---|---|---|---|",
                *_rows(
                    records,
                    cells,
                    "f1",
                    lambda runs: (
                        f"{_seeds(runs, 'accuracy')} / "
                        f"{_seeds(runs, 'best_threshold_accuracy')} | "
                        f"{_seeds(runs, 'f1')} / {_seeds(runs, 'best_threshold_f1')} | "
                        f"{_seeds(runs, 'auc')}"
                    ),
                ),
                "",
                f"What the best threshold adds, mean over the fits: accuracy "
                f"{gain['accuracy']:.1f} points, F1 {gain['f1']:.1f}.",
                "",
                *MANY,
                "",
                "| cell | trained | seeds | argmax | prior matching |",
                "|---|---|---|---|---|",
                *_rows(
                    records,
                    cells,
                    "accuracy_prior",
                    lambda runs: (
                        f"{_seeds(runs, 'accuracy_argmax')} | "
                        f"{_seeds(runs, 'accuracy_prior')}"
                    ),
                ),
            ]
        )
        + "\n"
    )


def main(argv=None):
    _configs.main(argv, sys.modules[__name__])


if __name__ == "__main__":
    main()
