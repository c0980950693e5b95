"""The number of bags behind the large-bag gaps (issue 48): goal cells of
``default_method.py`` refit at every default with more or fewer bags of the
same size, and with the same bags trained longer.

- ``partitions-k``: the training rows cut into ``k`` independent random
  partitions of the cell's bagging (bag seeds ``seed``, ``seed + 1000``, ...);
  each row is in ``k`` bags, so ``k`` times the bags (and proportions) of the
  same rows; ``-short``: ``100 / k`` epochs, the rows a fit sees of
  ``default`` (VAT's optimizer steps too);
- ``overlapping-k``: ``partitions-k``'s bags as one set of rows in
  overlapping bags (a list of row indices per bag), the form a user with
  several tables over the same rows passes;
- ``epochs-k``: the cell's own bags, ``k`` times the epochs: ``k`` times
  the optimizer steps without more bags (the control);
- ``half``: a random half of the cell's bags (whole bags), the other rows unused.

If the defaults fall short of the goals for lack of bags, ``partitions-k``
climbs and ``epochs-k`` does not. One JSON line per fit (``_configs.run``),
resumable; the table is rebuilt from all of them.

    python benchmarks/studies/bag_count.py --cells adult-256 --seeds 0 1
    python benchmarks/studies/bag_count.py --markdown-only
"""

import sys
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _configs  # noqa: E402
from _common import FASHION_DIR, load_dataset  # noqa: E402
from accuracy import make_bags  # noqa: E402
from default_method import CELLS as BAGGINGS  # noqa: E402
from default_method import by_cell, cell_data  # noqa: E402

from sklearn_llp.core import check_bags  # noqa: E402

STEM = "bag_count"
#: the method ``auto`` trains on the cell's own bags, kept for every config
#: (with more bags ``auto`` would switch to EasyLLP)
METHOD = {
    "adult-256": "vat",
    "adult-1024": "dllp",
    "adult-10-bags": "easyllp",
    "fashion-256": "vat",
}
CELLS = tuple(METHOD)
CONFIGS = {
    "half": {},
    "default": {},
    "partitions-2": {},
    "partitions-4": {},
    "partitions-2-short": {"max_epochs": 50},
    "partitions-4-short": {"max_epochs": 25},
    "overlapping-4": {},
    "epochs-2": {"max_epochs": 200},
    "epochs-4": {"max_epochs": 400},
}


def params(cell, config):
    return {"method": METHOD[cell], **CONFIGS[config]}


def data(cell, seed, config):
    """The cell's training rows and bags as ``config`` reshapes them."""
    X, bags, props, X_test, y_test = cell_data(cell, seed)
    if config == "half":
        ids = np.unique(bags)
        kept = np.random.default_rng(seed).permutation(ids)[: len(ids) // 2]
        keep = np.isin(bags, kept)
        return X[keep], bags[keep], props[keep], X_test, y_test
    if config.startswith("overlapping-"):
        return (*_overlapping(cell, seed, int(config.split("-")[1])), X_test, y_test)
    if not config.startswith("partitions-"):
        return X, bags, props, X_test, y_test
    parts = [(X, bags, props)]
    for k in range(1, int(config.split("-")[1])):
        X_k, bags_k, props_k, _, _ = cell_data(cell, seed + 1000 * k)
        parts.append((X_k, bags_k + k * (bags.max() + 1), props_k))
    return (*(np.concatenate(p) for p in zip(*parts)), X_test, y_test)


def _overlapping(cell, seed, k):
    """All training rows, the row lists of ``k`` partitions' bags, and one
    row of proportions per bag."""
    dataset, bagging = BAGGINGS[cell]
    X = load_dataset(dataset)[0]
    lists, props = [], []
    for part in range(k):
        bags, props_k, _ = make_bags(
            dataset, None, str(FASHION_DIR), bagging, seed + 1000 * part
        )
        kept = np.flatnonzero(bags >= 0)  # rows the bagging left out are -1
        read = check_bags(bags[kept], props_k[kept])
        lists += np.split(kept[read.members], read.indptr[1:-1])
        props.append(read.props)
    return X, lists, np.concatenate(props)


HEADING = [
    "# The number of bags behind the large-bag gaps "
    "(`benchmarks/studies/bag_count.py`)",
    "",
    "Test scores in %, mean over the seeds; every parameter at its default but "
    "`method` (the one `auto` trains on the cell's bags: VAT in bags of 256, "
    "DLLP in bags of 1,024, EasyLLP on 10 bags, VAT on Fashion-MNIST) and "
    "`max_epochs` in `epochs-k` and `-short` "
    '(100 epochs otherwise, `batch_size="auto"`), 1 torch thread a fit, CPU. '
    "`default`: the "
    "cell's bags; `half`: a random half of them; `partitions-k`: the same "
    "training rows cut into k independent random partitions of the cell's "
    "bagging, k times the bags (each row in k bags), the partitions stacked; "
    "`overlapping-k`: the same bags as overlapping bags (row lists) of one "
    "copy of the rows; `-short`: 100 / k epochs (the rows a fit sees of "
    "`default`); `epochs-k`: the cell's "
    "bags with k times the epochs, k times the optimizer steps of "
    "`default` (the control). Two classes: accuracy / F1 of >50K / ROC AUC.",
]


def markdown(records, cells, configs, heading):
    """One row per (cell, config): bags, steps, and the mean scores."""
    lines = [
        *heading,
        "",
        "| cell | trained | config | bags | steps a fit | seeds "
        "| accuracy / F1 / AUC |",
        "|---|---|---|---|---|---|---|",
    ]
    for cell, rows in by_cell(records, cells):
        for config in configs:
            runs = [r for r in rows if r["config"] == config]
            if not runs:
                continue
            text, steps, seeds = _configs.summary(runs)
            lines.append(
                f"| {cell} | {runs[0]['trained']} | {config} | {runs[0]['n_bags']} "
                f"| {steps} | {seeds} | {text} |"
            )
    return "\n".join(lines) + "\n"


#: the same MLP trained on Adult's labels (``accuracy.md``)
LABELS_AUC = 90.9


def plot(records, path):
    """ROC AUC against the number of bags, a line per Adult cell through its
    100-epoch fits (hollow: ``-short``); the labels' AUC dashed."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for cell in CELLS:
        means = {}
        for r in records:
            if r["cell"] == cell and "auc" in r and "epochs-" not in r["config"]:
                means.setdefault((r["config"], r["n_bags"]), []).append(r["auc"])
        if not means:
            continue
        points = sorted(
            (bags, 100 * np.mean(aucs), config.endswith("-short"))
            for (config, bags), aucs in means.items()
        )
        full = [(b, a) for b, a, short in points if not short]
        (line,) = ax.plot(*zip(*full), "o-", label=f"{cell} ({METHOD[cell]})")
        short = [(b, a) for b, a, short in points if short]
        if short:
            ax.plot(*zip(*short), "o", mfc="none", color=line.get_color())
    ax.plot([], [], "o", mfc="none", color="grey", label="k partitions, 100 / k epochs")
    ax.axhline(LABELS_AUC, ls="--", color="grey", label="the MLP on labels")
    ax.set(xscale="log", xlabel="bags (same rows, bags of the cell's size)")
    ax.set(ylabel="test ROC AUC (%)", title="Adult: more bags of the same rows")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    _configs.main(argv, sys.modules[__name__])


if __name__ == "__main__":
    main()
