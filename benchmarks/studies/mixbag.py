"""MixBag (issue 33 item 2): Adult in few random bags, DLLP and VAT with and
without mixed bags, against EasyLLP.

Every fit leaves every parameter at its default but ``method``, ``mixbag``,
``random_state``, ``verbose`` and ``n_threads=1``; the bags are those of
``default_method.py`` (``benchmarks/accuracy.py``'s ``count-<n>`` bagging).
One JSON line per fit, resumable; the table is rebuilt from all of them.

    python benchmarks/studies/mixbag.py --seeds 0 1 2
    python benchmarks/studies/mixbag.py --markdown-only
"""

import sys
from pathlib import Path

from sklearn_llp.methods import MixBag

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _configs  # noqa: E402

STEM = "mixbag"
CELLS = ("adult-10-bags", "adult-25-bags", "adult-50-bags")
#: name -> the parameters that differ from the defaults. ``x4-ci01``: four
#: mixed bags a bag at a 1 % interval (the best of a few tried on 10 bags);
#: ``350-epochs``/``500-epochs``: DLLP given that variant's optimizer steps
#: (700 on 10 bags) or more, without mixed bags.
CONFIGS = {
    "easyllp": dict(method="easyllp"),
    "dllp": dict(method="dllp"),
    "dllp+mixbag": dict(method="dllp", mixbag=True),
    "vat": dict(method="vat"),
    "vat+mixbag": dict(method="vat", mixbag=True),
    "dllp+mixbag-x4-ci01": dict(
        method="dllp", mixbag=MixBag(n_mixed=4.0, confidence=0.01)
    ),
    "dllp-350-epochs": dict(method="dllp", max_epochs=350),
    "dllp-500-epochs": dict(method="dllp", max_epochs=500),
}


HEADING = [
    "# MixBag on Adult in few random bags (`benchmarks/studies/mixbag.py`)",
    "",
    "Test accuracy / F1 of >50K in %, mean over the seeds (F1's range in "
    "brackets; a fit run on fewer seeds names them); every parameter at "
    "its default but those the column names "
    '(100 epochs, lr 1e-3, `batch_size="auto"`, `max_bag_size=1024`; '
    "`mixbag=True` is `MixBag(n_mixed=1.0, confidence=0.99)`). 1 torch "
    "thread, one fit at a time, CPU. Supervised F1 is about 67.",
]


def main(argv=None):
    _configs.main(argv, sys.modules[__name__])


if __name__ == "__main__":
    main()
