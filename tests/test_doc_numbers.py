"""The numbers the docs quote are those the examples printed in full runs.

``QUOTES`` renders, per quoting file, the phrases quoting ``examples/results/``
rounded as the text shows them. ``SKLEARN_LLP_CHECK_EXAMPLE_RESULTS=1`` re-runs
the examples in full (minutes) against the committed numbers; after changing
an example, re-run it with ``--out examples/results`` and update the quotes.
"""

import ast
import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
RESULTS = EXAMPLES / "results"
README = "README.md"
METHODS_PAGE = "docs/user_guide/methods.rst"
MODEL_SELECTION_PAGE = "docs/user_guide/model_selection.rst"
FEW_LABELS_PAGE = "docs/user_guide/few_labels.rst"


def flat(text):
    """``text`` with every run of whitespace one space (wrapped lines)."""
    return " ".join(text.split())


def results(name):
    return json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))


def f3(value):
    return f"{value:.3f}"


def pct(value):
    """A share as the docs write it: ``24.1 %``."""
    return f"{100 * value:.1f} %"


def census_quickstart(numbers):
    test, decision = numbers["test"], numbers["decision"]
    llp = test["LLP-VAT from group proportions"]
    supervised = test["same pipeline, individual labels"]
    majority = test["majority class"]
    held_out = numbers["held_out_hard_l1"]
    rule = (
        f"{pct(decision['predicted_positive'])} of test people called >50K "
        f"against {pct(decision['argmax_positive'])} at 0.5, and F1 "
        f"{f3(llp['F1 (>50K)'])} against {f3(decision['argmax_f1'])}"
    )
    return {
        "examples/census_quickstart.py": [
            f"test accuracy {f3(llp['accuracy'])}, F1 (>50K) "
            f"{f3(llp['F1 (>50K)'])}, ROC AUC {f3(llp['ROC AUC'])} from group "
            "proportions",
            f"against {f3(supervised['accuracy'])}, "
            f"{f3(supervised['F1 (>50K)'])}, {f3(supervised['ROC AUC'])} with "
            "individual labels",
            f"and {f3(majority['accuracy'])}, {f3(majority['F1 (>50K)'])}, "
            f"{f3(majority['ROC AUC'])} for the majority class",
            f"P(>50K) >= {f3(decision['threshold'])}, which calls "
            f"{pct(decision['predicted_positive'])} of the test people >50K "
            f"(F1 {f3(llp['F1 (>50K)'])}), against "
            f"{pct(decision['argmax_positive'])} (F1 "
            f"{f3(decision['argmax_f1'])}) at 0.5",
            f"On the {numbers['n_held_out_groups']} held-out groups",
            f"hard L1 error {f3(held_out['LLP-VAT'])} for LLP-VAT, "
            f"{f3(held_out['supervised'])} for the supervised model",
        ],
        README: [
            *[
                f"| {name} | {f3(s['accuracy'])} | {f3(s['F1 (>50K)'])} | "
                f"{f3(s['ROC AUC'])} |"
                for name, s in test.items()
            ],
            f"age band × sex × education: {numbers['n_groups']} groups",
        ],
        METHODS_PAGE: [f"P(>50K) >= {f3(decision['threshold'])}: {rule}"],
    }


def grid_search_census(numbers):
    cv, test = numbers["cv"], numbers["test"]
    errors = [scores["hard_l1"] for scores in cv.values()]
    vat = [scores["hard_l1"] for name, scores in cv.items() if "VAT" in name]
    best = cv["DLLP, 30 ep"]
    assert numbers["selected"] == "DLLP, 30 ep"
    assert cv["DLLP, 10 ep"]["hard_l1"] <= best["hard_l1"] + best["std"]
    llp = results("census_quickstart")["test"]["LLP-VAT from group proportions"]
    return {
        "examples/grid_search_census.py": [
            f"held-out hard L1 errors between {f3(min(errors))} and {f3(max(errors))}",
            f"selects DLLP for 30 epochs ({f3(best['hard_l1'])} +- "
            f"{f3(best['std'])}), DLLP for 10 epochs "
            f"({f3(cv['DLLP, 10 ep']['hard_l1'])})",
            f"LLP-VAT does worse on these small groups ({f3(min(vat))} to "
            f"{f3(max(vat))})",
            f"test accuracy {f3(test['accuracy'])}, F1 {f3(test['F1 (>50K)'])}, "
            f"ROC AUC {f3(test['ROC AUC'])}",
            # the quickstart's LLP-VAT, to two decimals
            f"({llp['accuracy']:.2f}, {llp['F1 (>50K)']:.2f}, {llp['ROC AUC']:.2f})",
        ],
        MODEL_SELECTION_PAGE: [
            f"on {numbers['n_train']:,} census people in {numbers['n_groups']} groups",
            f"selects DLLP, 30 epochs (held-out hard L1 {f3(best['hard_l1'])}); "
            f"test accuracy {f3(test['accuracy'])}, F1 {f3(test['F1 (>50K)'])}, "
            f"AUC {f3(test['ROC AUC'])}",
        ],
    }


def plot_few_labels(numbers):
    by_n = dict(zip(numbers["n_labelled"], numbers["bags + labelled rows"]))
    alone = dict(zip(numbers["n_labelled"], numbers["labelled rows only"]))
    assert numbers["n_labelled"] == [0, 10, 25, 50, 100]
    first_clean = numbers["n_labelled"][numbers["identifiability_warning"].index(False)]
    return {
        "examples/plot_few_labels.py": [
            f"bags alone reach {f3(by_n[0])} test accuracy; with 10, 25, 50 "
            f"and 100 labelled rows {f3(by_n[10])}, {f3(by_n[25])}, "
            f"{f3(by_n[50])} and {f3(by_n[100])}, against {f3(alone[10])}, "
            f"{f3(alone[25])}, {f3(alone[50])} and {f3(alone[100])} from the "
            "labelled rows alone",
            f"every training label gives {f3(numbers['supervised, every label'])}",
            f"the ``IdentifiabilityWarning`` of the bags alone stops at "
            f"{first_clean} labelled rows",
            f"10 labelled rows add {by_n[10] - by_n[0]:.2f} to the bags",
            f"cut into random bags of 128 ({numbers['n_bags']} bags",
        ],
        FEW_LABELS_PAGE: [
            f"{n} {f3(by_n[n])} {'--' if alone[n] is None else f3(alone[n])}"
            for n in by_n
        ],
    }


def plot_aggregate_regression(numbers):
    r2 = numbers["test_r2"]
    return {
        "examples/plot_aggregate_regression.py": [
            f"test R² {f3(r2['LLPRegressor from group means'])} from group means, "
            f"{f3(r2['group-average lookup'])} for the group-average lookup and "
            f"{f3(r2['same pipeline, individual hours'])} with individual hours",
            f"on the {numbers['held_out_groups']} held-out groups the predicted "
            f"means have R² {f3(numbers['held_out_bag_r2'])}",
        ]
    }


#: Examples whose printed numbers are committed, and what quotes them where.
QUOTES = {
    "census_quickstart": census_quickstart,
    "grid_search_census": grid_search_census,
    "plot_few_labels": plot_few_labels,
    "plot_aggregate_regression": plot_aggregate_regression,
}
QUOTED = list(QUOTES)


def quoting(where):
    """The text of a file that quotes numbers: an example's docstring (its
    gallery page), else the whole file."""
    text = (ROOT / where).read_text(encoding="utf-8")
    if where.startswith("examples/"):
        text = ast.get_docstring(ast.parse(text))
    return flat(text)


@pytest.mark.parametrize("name", QUOTED)
def test_the_docs_quote_the_committed_full_run(name):
    numbers = results(name)
    assert numbers["quick"] is False, f"{name}.json holds a --quick run"
    for where, phrases in QUOTES[name](numbers).items():
        missing = [phrase for phrase in phrases if flat(phrase) not in quoting(where)]
        assert not missing, f"{where} does not quote (update it): {missing}"


# ------------------------------------------------------------- opt-in
def rounded(value):
    """Numbers to the three decimals the docs show; other values as they are."""
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [rounded(item) for item in value]
    if isinstance(value, float):
        return round(value, 3)
    return value


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("SKLEARN_LLP_CHECK_EXAMPLE_RESULTS", "") in ("", "0"),
    reason="re-runs the examples in full (minutes); "
    "SKLEARN_LLP_CHECK_EXAMPLE_RESULTS=1 turns it on",
)
@pytest.mark.parametrize("name", QUOTED)
def test_full_runs_print_the_committed_numbers(name, tmp_path, load_example):
    pytest.importorskip("matplotlib")
    load_example(name).main(["--out", str(tmp_path)])
    printed = json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))
    committed = results(name)
    for numbers in (printed, committed):  # wall time is the machine's, not a result
        numbers.pop("seconds", None)
    assert rounded(printed) == rounded(committed)
