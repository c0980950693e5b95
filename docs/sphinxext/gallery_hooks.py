"""sphinx-gallery hooks: run every example in its reduced mode, keep its PNG.

The examples are scripts with ``main(argv)``: they take ``--out DIR`` and save
their figure there as a PNG (closing the figure), and most have ``--quick``,
the reduced mode that ``tests/test_examples.py`` also uses. The docs build
runs each one with ``--out`` a folder of its own and, unless
``SKLEARN_LLP_GALLERY_FULL=1`` is set, in its reduced mode; the scraper then
moves the PNGs written there into the gallery.

sphinx-gallery names these by string in ``conf.py`` (so the configuration
stays picklable), which needs this folder on ``sys.path``.
"""

import os
import shutil
from pathlib import Path

from sphinx_gallery.scrapers import figure_rst

DOCS = Path(__file__).resolve().parents[1]
#: Where the examples write their PNGs during the build (one folder each).
PNG_ROOT = DOCS / "_build" / "gallery_png"

#: Order of the examples in the gallery: quickstart first, then by topic.
ORDER = [
    "census_quickstart.py",
    "digits_bags.py",
    "plot_two_moons.py",
    "plot_kmeans_bags.py",
    "plot_learning_curves.py",
    "grid_search_census.py",
    "dask_parquet_census.py",
    "plot_few_labels.py",
    "plot_aggregate_regression.py",
    "mnist_cnn.py",
]

#: Arguments of the reduced mode of every example; any example not listed
#: gets ``--quick``. Three need more to show their point: the two-moons toy
#: (consistency methods find the gap between the moons) needs its 600 epochs
#: and takes seconds; the learning curves' point (DLLP's held-out error rises
#: again after epoch ~30) needs its 100 epochs; the CNN's ``--quick`` is a
#: smoke test that learns nothing, 10 of its 20 epochs learn the digits.
REDUCED_ARGV = {
    "plot_two_moons.py": [],
    "plot_learning_curves.py": [],
    "mnist_cnn.py": ["--epochs", "10"],
}


def full_runs():
    """Whether ``SKLEARN_LLP_GALLERY_FULL`` asks for the full runs."""
    return os.environ.get("SKLEARN_LLP_GALLERY_FULL", "") not in ("", "0")


def png_dir(src_file):
    return PNG_ROOT / Path(src_file).stem


def reset_argv(gallery_conf, script_vars):
    """``sys.argv[1:]`` of an example: its reduced mode and its own ``--out``."""
    src_file = script_vars["src_file"]
    out = png_dir(src_file)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    name = Path(src_file).name
    mode = [] if full_runs() else REDUCED_ARGV.get(name, ["--quick"])
    return [*mode, "--out", str(out)]


def png_scraper(block, block_vars, gallery_conf, **kwargs):
    """Move the PNGs an example wrote to its ``--out`` folder into the gallery."""
    out = png_dir(block_vars["src_file"])
    if not out.is_dir():
        return ""
    images = []
    for png, target in zip(
        sorted(out.glob("*.png")), block_vars["image_path_iterator"]
    ):
        shutil.move(png, target)
        images.append(target)
    return figure_rst(images, gallery_conf["src_dir"])


class ExampleOrder:
    """``within_subsection_order``: the order of :data:`ORDER`, then by name."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        name = Path(filename).name
        return (ORDER.index(name) if name in ORDER else len(ORDER), name)
