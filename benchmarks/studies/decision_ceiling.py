"""Where the Adult goals of issue 33 are lost: the decision rule or the ranking.

The default fit of each cell (every parameter at its default), scored at the
prior-matched threshold ``predict`` uses and at the best threshold chosen
with the test labels (a ceiling no rule without labels can pass), with its
ROC AUC. One JSON line per fit, resumable.

    python benchmarks/studies/decision_ceiling.py --seeds 0 1
    python benchmarks/studies/decision_ceiling.py --markdown-only
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _configs  # noqa: E402

STEM = "decision_ceiling"
CELLS = ("adult-256", "adult-512", "adult-25-bags", "adult-10-bags")
CONFIGS = {"defaults": {}}
HEADING = [
    "# The decision rule against the ranking "
    "(`benchmarks/studies/decision_ceiling.py`)",
    "",
    "`LLPClassifier()` at its defaults (*trained*: the method `auto` chose), "
    "100 epochs, 1 torch thread a fit, CPU; test scores in %, seed by seed. "
    '*predict*: the prior-matched threshold of `threshold="auto"`; *best*: '
    "the threshold that maximises the test score, chosen with the test labels. "
    "The same MLP trained on the instance labels: accuracy 85.6, F1 67.2, "
    "AUC 90.9 (`accuracy.md`).",
]


def markdown(records, cells, configs, heading):
    """One row per cell: accuracy and F1 at predict's threshold and at the best, AUC."""
    lines = [
        *heading,
        "",
        "| cell | trained | seeds | accuracy: predict / best "
        "| F1: predict / best | AUC |",
        "|---|---|---|---|---|---|",
    ]

    def seeds(runs, key):
        return " · ".join(f"{100 * r[key]:.1f}" for r in runs)

    for cell in cells:
        runs = sorted(
            (r for r in records if r["cell"] == cell), key=lambda r: r["seed"]
        )
        if not runs:
            continue
        trained = "/".join(sorted({r["trained"] for r in runs}))
        lines.append(
            f"| {cell} | {trained} | {','.join(str(r['seed']) for r in runs)} "
            f"| {seeds(runs, 'accuracy')} / {seeds(runs, 'best_threshold_accuracy')} "
            f"| {seeds(runs, 'f1')} / {seeds(runs, 'best_threshold_f1')} "
            f"| {seeds(runs, 'auc')} |"
        )
    gain = {
        score: 100 * np.mean([r[f"best_threshold_{score}"] - r[score] for r in records])
        for score in ("accuracy", "f1")
    }
    lines += [
        "",
        f"What the best threshold adds, mean over the fits: accuracy "
        f"{gain['accuracy']:.1f} points, F1 {gain['f1']:.1f}.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    _configs.main(argv, sys.modules[__name__])


if __name__ == "__main__":
    main()
