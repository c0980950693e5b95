"""Tests of the plotting helpers (Agg backend, no display)."""

import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sklearn_llp.bags import UniformBagGenerator  # noqa: E402
from sklearn_llp.plotting import plot_bag_sizes  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def bar_heights(ax):
    return np.array([patch.get_height() for patch in ax.patches])


def test_counts_every_bag():
    bags = np.repeat(np.arange(6), [3, 3, 5, 8, 8, 8])
    ax = plot_bag_sizes(bags)
    assert isinstance(ax, matplotlib.axes.Axes)
    heights = bar_heights(ax)
    assert heights.sum() == 6
    assert sorted(heights[heights > 0].tolist()) == [1, 2, 3]
    assert ax.get_title() == "6 bags; size min 3, median 6.5, max 8"
    assert "size" in ax.get_xlabel().lower()
    assert "bags" in ax.get_ylabel().lower()


def test_dropped_rows_are_not_a_bag():
    X = np.zeros((105, 2))
    bags = UniformBagGenerator(10, random_state=0).fit_transform(X)
    ax = plot_bag_sizes(bags)
    assert bar_heights(ax).sum() == 10
    assert ax.get_title().startswith("10 bags; size min 10, median 10, max 10")


def test_many_sizes_and_string_ids():
    rng = np.random.RandomState(0)
    sizes = rng.randint(1, 500, size=40)
    bags = np.repeat([f"b{i}" for i in range(40)], sizes)
    ax = plot_bag_sizes(bags)
    assert bar_heights(ax).sum() == 40
    assert f"max {sizes.max()}" in ax.get_title()


def test_existing_axes_and_hist_kwargs():
    fig, ax = plt.subplots()
    out = plot_bag_sizes([0, 0, 1, 1, 1], ax=ax, bins=[0, 2.5, 10], color="red")
    assert out is ax
    assert bar_heights(ax).tolist() == [1, 1]
    assert ax.patches[0].get_facecolor()[:3] == (1.0, 0.0, 0.0)


def test_errors():
    with pytest.raises(ValueError, match="no bag"):
        plot_bag_sizes([-1, -1])
    with pytest.raises(ValueError, match="1-D"):
        plot_bag_sizes([[0, 1]])


def test_clear_error_without_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install sklearn-llp\[plot\]"):
        plot_bag_sizes([0, 0, 1])
