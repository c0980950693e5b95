"""Tests of the plotting helpers (Agg backend, no display)."""

import sys

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sklearn_llp.bags import UniformBagGenerator  # noqa: E402
from sklearn_llp.metrics import hard_l1_error, soft_l1_error  # noqa: E402
from sklearn_llp.plotting import plot_bag_calibration, plot_bag_sizes  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def bar_heights(ax):
    return np.array([patch.get_height() for patch in ax.patches])


def test_counts_every_bag():
    ax = plot_bag_sizes(np.repeat(np.arange(6), [3, 3, 5, 8, 8, 8]))
    assert isinstance(ax, matplotlib.axes.Axes)
    heights = bar_heights(ax)
    assert heights.sum() == 6
    assert sorted(heights[heights > 0].tolist()) == [1, 2, 3]
    assert ax.get_title() == "6 bags; size min 3, median 6.5, max 8"
    assert "size" in ax.get_xlabel().lower() and "bags" in ax.get_ylabel().lower()
    # rows of no bag are no bag
    bags = UniformBagGenerator(10, random_state=0).fit_transform(np.zeros((105, 2)))
    ax = plot_bag_sizes(bags, ax=plt.subplots()[1])
    assert bar_heights(ax).sum() == 10
    assert ax.get_title() == "10 bags; size min 10, median 10, max 10"
    # many sizes (automatic bins) and string ids
    sizes = np.random.RandomState(0).randint(1, 500, size=40)
    ax = plot_bag_sizes(np.repeat([f"b{i}" for i in range(40)], sizes))
    assert bar_heights(ax).sum() == 40 and f"max {sizes.max()}" in ax.get_title()


def test_existing_axes_and_hist_kwargs():
    fig, ax = plt.subplots()
    out = plot_bag_sizes([0, 0, 1, 1, 1], ax=ax, bins=[0, 2.5, 10], color="red")
    assert out is ax
    assert bar_heights(ax).tolist() == [1, 1]
    assert ax.patches[0].get_facecolor()[:3] == (1.0, 0.0, 0.0)


def test_clear_error_without_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install sklearn-llp\[plot\]"):
        plot_bag_sizes([0, 0, 1])
    with pytest.raises(ImportError, match=r"pip install sklearn-llp\[plot\]"):
        plot_bag_calibration([0, 0, 1], [0.5, 0.5, 1.0], [0.5, 0.5, 1.0])


# --- plot_bag_calibration
# Three bags of 2, 3 and 1 rows, two classes "no"/"yes"; every number below is
# worked out by hand.
CAL_BAGS = np.array(["a", "a", "b", "b", "b", "c"])
CAL_YES = np.array([0.5, 0.5, 1 / 3, 1 / 3, 1 / 3, 1.0])  # given P(yes) per row
CAL_PROPS = np.column_stack([1 - CAL_YES, CAL_YES])
CAL_P_YES = np.array([0.8, 0.4, 0.1, 0.7, 0.4, 0.3])  # predicted P(yes)
CAL_PROBA = np.column_stack([1 - CAL_P_YES, CAL_P_YES])
# bag a: mean P(yes) (0.8 + 0.4) / 2 = 0.6; predicted labels yes, no -> 1/2
# bag b: (0.1 + 0.7 + 0.4) / 3 = 0.4; labels no, yes, no -> 1/3
# bag c: 0.3; label no -> 0
CAL_SOFT = [0.6, 0.4, 0.3]
CAL_HARD = [0.5, 1 / 3, 0.0]
# L1 over both classes is twice the gap in P(yes): hard 2 * (0 + 0 + 1) / 3
CAL_SOFT_L1 = 2 * (0.1 + 1 / 15 + 0.7) / 3
CAL_HARD_L1 = 2 / 3


def offsets(collection):
    return np.asarray(collection.get_offsets(), dtype=float)


def test_calibration_points_match_hand_computation():
    kw = dict(classes=["no", "yes"], show_hard=True)
    ax = plot_bag_calibration(CAL_BAGS, CAL_PROPS, CAL_PROBA, **kw)
    assert isinstance(ax, matplotlib.axes.Axes)
    soft, hard = ax.collections
    # one point per bag, in the order of the sorted bag ids: (given, predicted)
    np.testing.assert_allclose(offsets(soft), np.c_[[0.5, 1 / 3, 1.0], CAL_SOFT])
    np.testing.assert_allclose(offsets(hard), np.c_[[0.5, 1 / 3, 1.0], CAL_HARD])
    # marker area grows with the bag size (2, 3, 1 rows), the largest biggest
    area = soft.get_sizes()
    assert area[1] > area[0] > area[2] > 0
    np.testing.assert_allclose(area[:2] / area[1], [2 / 3, 1.0])
    # the title's errors are the library's bag errors, and the hand values
    title = f"3 bags: soft L1 {CAL_SOFT_L1:.3f}, hard L1 {CAL_HARD_L1:.3f}"
    assert ax.get_title() == title
    assert f"{soft_l1_error(CAL_BAGS, CAL_PROPS, CAL_PROBA):.3f}" in ax.get_title()
    assert f"{hard_l1_error(CAL_BAGS, CAL_PROPS, CAL_PROBA):.3f}" in ax.get_title()
    assert "yes" in ax.get_xlabel() and "yes" in ax.get_ylabel()
    # the diagonal
    (diagonal,) = ax.lines
    np.testing.assert_allclose(diagonal.get_xydata(), [[0, 0], [1, 1]])
    assert ax.get_xlim()[0] < 0 < 1 < ax.get_xlim()[1]


def test_calibration_class_label_and_table_props():
    index = pd.Index(["a", "b", "c"], name="bag")
    table = pd.DataFrame({"no": [0.5, 2 / 3, 0.0], "yes": [0.5, 1 / 3, 1.0]}, index)
    kw = dict(classes=["no", "yes"], class_index="no")
    (soft,) = plot_bag_calibration(CAL_BAGS, table, CAL_PROBA, **kw).collections
    expected = np.c_[[0.5, 2 / 3, 0.0], 1 - np.array(CAL_SOFT)]
    np.testing.assert_allclose(offsets(soft), expected)
    assert "no" in soft.axes.get_xlabel()
    # a positive-class fraction and 1-D probabilities: classes 0 and 1
    ax = plot_bag_calibration(CAL_BAGS, CAL_YES, CAL_P_YES, ax=plt.subplots()[1])
    np.testing.assert_allclose(offsets(ax.collections[0])[:, 1], CAL_SOFT)


def test_calibration_sample_weight():
    weight = np.array([3.0, 1.0, 1.0, 1.0, 2.0, 5.0])
    kw = dict(sample_weight=weight, show_hard=True)
    ax = plot_bag_calibration(CAL_BAGS, CAL_PROPS, CAL_PROBA, **kw)
    soft, hard = ax.collections
    # bag a: (3 * 0.8 + 0.4) / 4 = 0.7; bag b: (0.1 + 0.7 + 2 * 0.4) / 4 = 0.4
    np.testing.assert_allclose(offsets(soft)[:, 1], [0.7, 0.4, 0.3])
    # hard: bag a 3/4 predicted yes; bag b 1/4
    np.testing.assert_allclose(offsets(hard)[:, 1], [0.75, 0.25, 0.0])
    expected = soft_l1_error(CAL_BAGS, CAL_PROPS, CAL_PROBA, sample_weight=weight)
    assert f"soft L1 {expected:.3f}" in ax.get_title()


def test_calibration_multiclass_and_overlapping_bags():
    # overlapping bags as row lists with one row of proportions per bag
    lists = [np.array([0, 1]), np.array([1, 2, 3])]
    props = np.array([[0.5, 0.5, 0.0], [0.0, 1 / 3, 2 / 3]])
    proba = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8], [0.1, 0.3, 0.6]]
    proba = np.array(proba)
    ax = plot_bag_calibration(lists, props, proba, classes=["x", "y", "z"])
    # every class of every bag: one scatter per class, one point per bag
    assert len(ax.collections) == 3
    expected = [[0.4, 0.4, 0.2], [(0.2 + 0.1 + 0.1) / 3, 1 / 3, (0.2 + 0.8 + 0.6) / 3]]
    for k, collection in enumerate(ax.collections):
        expected_k = np.c_[props[:, k], np.array(expected)[:, k]]
        np.testing.assert_allclose(offsets(collection), expected_k)
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert labels == ["x", "y", "z"]
    kw = dict(classes=["x", "y", "z"], class_index="z")
    ax = plot_bag_calibration(lists, props, proba, **kw)
    assert len(ax.collections) == 1


def test_calibration_hard_estimates_from_given_labels():
    bags = [0, 0, 0, 1, 1, 1]
    props = [[0.5, 0.5]] * 6
    y_proba = [[0.6, 0.4]] * 6  # argmax: class 0 everywhere
    ax = plot_bag_calibration(bags, props, y_proba, show_hard=True)
    assert ax.get_title().endswith("hard L1 1.000")
    y_pred = [0, 1, 1, 1, 0, 0]
    ax = plot_bag_calibration(bags, props, y_proba, show_hard=True, y_pred=y_pred)
    # bag 0: 2/3 predicted 1 (error 1/3), bag 1: 1/3 (error 1/3)
    assert ax.get_title().endswith("hard L1 0.333")
    with pytest.raises(ValueError, match="y_pred must hold one label"):
        plot_bag_calibration(bags, props, y_proba, y_pred=[0, 1, 2, 1, 0, 0])
