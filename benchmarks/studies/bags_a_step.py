"""Bags a step on few large bags (issue 48): the Adult cells of
``default_method.py`` where ``batch_size="auto"`` packs large bags, trained
with 1 to 16 bags a step (or every bag in one step), every other parameter at
its default. Behind the rule: a method of bag means on fewer than 64 bags
of two classes takes at least 8 steps an epoch; EasyLLP keeps 8 bags a step.

One JSON line per fit (``_configs.run``), resumable; the table is rebuilt
from all of them, the bags a step of ``batch_size="auto"`` in bold.

    python benchmarks/studies/bags_a_step.py --cells adult-1024 --configs 3 --seeds 0 1
    python benchmarks/studies/bags_a_step.py --markdown-only
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _configs  # noqa: E402
from default_method import by_cell  # noqa: E402

STEM = "bags_a_step"
#: rows of the cell's median bag as batches are packed (at most ``max_bag_size``)
ROWS = {
    "adult-1024": 1024,
    "adult-512": 512,
    "adult-50-bags": 651,
    "adult-25-bags": 1024,
    "adult-10-bags": 1024,
    "adult-256": 256,
}
#: the bags a step ``batch_size="auto"`` packs now (n_bags // 8 for DLLP and
#: VAT on fewer than 64 bags); 8 elsewhere, and everywhere before
AUTO = {"adult-1024": "3", "adult-512": "7", "adult-50-bags": "6"}


CELLS = tuple(ROWS)
CONFIGS = ("1", "2", "4", "8")  # bags a step; any number, or "all"


def params(cell, config):
    """``batch_size`` of ``config`` bags a step ("all": one step an epoch;
    "dllp": DLLP at the default batch size)."""
    if config == "dllp":
        return {"method": "dllp"}
    rows = 40_000 if config == "all" else round(float(config) * ROWS[cell])
    return {"batch_size": rows}


def _label(cell, rows):
    """Bags a step of a batch of ``rows`` (a batch holds the bags whose first
    row falls in it: ``rows / ROWS`` on average)."""
    return "all" if rows >= 40_000 else f"{rows / ROWS[cell]:.1f}".removesuffix(".0")


def _order(label):
    return float("inf") if label == "all" else float(label)


HEADING = [
    "# Bags a step on few large bags (`benchmarks/studies/bags_a_step.py`)",
    "",
    "Adult, test accuracy / F1 of >50K / ROC AUC in %, mean over the seeds; "
    "every parameter at its default but `batch_size` (rows a step; bags a "
    "step is it over the median bag's rows, bags above 1,024 rows packed at "
    "1,024; `all`: one step an epoch); 100 epochs, 1 torch thread a fit, "
    "CPU. The method is `auto`'s, and DLLP where named. **Bold**: what "
    '`batch_size="auto"` packs '
    "now (for a method of bag means on fewer than 64 bags of two classes, "
    "at least 8 steps "
    "an epoch); before, it packed 8 bags a step for every method. Fits of 8 "
    "bags a step on seeds 0 / 1 are `default_method.jsonl`'s round-r48 "
    "`auto` fits (the same code path, bit for bit: seed 0 of adult-1024 and "
    "adult-50-bags rerun here gave the same numbers).",
]


def markdown(records, cells, configs, heading):
    """One row per (cell, bags a step), whatever configs were run."""
    lines = [
        *heading,
        "",
        "| cell | trained | bags a step | rows a step | steps a fit | seeds "
        "| accuracy / F1 / AUC |",
        "|---|---|---|---|---|---|---|",
    ]
    for cell, rows in by_cell(records, cells):
        groups = {(r["trained"], _label(cell, r["batch_size"])) for r in rows}
        for trained, label in sorted(groups, key=lambda g: (g[0], _order(g[1]))):
            runs = [
                r
                for r in rows
                if (r["trained"], _label(cell, r["batch_size"])) == (trained, label)
            ]
            text, steps, seeds = _configs.summary(runs)
            auto = AUTO.get(cell, "8") == label and trained == rows[0]["trained"]
            bold = "**" if auto else ""
            lines.append(
                f"| {cell} | {trained} | {bold}{label}{bold} | "
                f"{runs[0]['batch_size']:,} | {steps} | {seeds} | {bold}{text}{bold} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None):
    _configs.main(argv, sys.modules[__name__])


if __name__ == "__main__":
    main()
