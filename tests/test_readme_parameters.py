"""The README stays a front page whose links work, and the user guide's
parameter table of LLPClassifier cannot drift from the code and docstring."""

import inspect
import re
from pathlib import Path

from sklearn_llp import LLPClassifier
from sklearn_llp.methods import available_methods

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PARAMETERS_PAGE = ROOT / "docs" / "user_guide" / "estimators.rst"


def _list_table_rows(text):
    """The rows of an rST ``list-table``: one list of cells (whitespace
    collapsed) per ``* -`` item."""
    rows, row_indent = [], None
    for line in text.splitlines():
        stripped, indent = line.strip(), len(line) - len(line.lstrip())
        if stripped.startswith("* -"):
            row_indent = indent
            rows.append([stripped[3:].strip()])
        elif rows and indent == row_indent + 2 and stripped.startswith("-"):
            rows[-1].append(stripped[1:].strip())
        elif rows and stripped:
            rows[-1][-1] = f"{rows[-1][-1]} {stripped}".strip()
    return rows


def _parameter_table():
    text = PARAMETERS_PAGE.read_text(encoding="utf-8")
    table = text.split(".. parameters-table")[1].split(".. /parameters-table")[0]
    rows = {}
    header, *body = _list_table_rows(table)
    assert header == ["parameter", "default", "meaning"]
    for names_cell, default_cell, _ in body:
        names = re.findall(r"``([a-z_]+)``", names_cell)
        defaults = [d.strip() for d in default_cell.split(",")]
        for i, name in enumerate(names):
            rows[name] = defaults[i] if len(defaults) == len(names) else None
    return rows


def _signature():
    parameters = inspect.signature(LLPClassifier.__init__).parameters
    keep = [n for n, p in parameters.items() if p.kind is not p.VAR_KEYWORD]
    return {name: parameters[name].default for name in keep if name != "self"}


def _docstring_parameters():
    doc = LLPClassifier.__doc__
    section = doc.split("Parameters\n    ----------\n")[1].split("\n    Attributes")[0]
    return set(re.findall(r"^    ([a-z_]+) :", section, flags=re.M))


def test_every_parameter_is_in_the_guide_table_and_the_docstring():
    signature = _signature()
    assert set(_parameter_table()) == set(signature)
    assert _docstring_parameters() == set(signature)


def test_every_method_name_is_in_the_method_row_and_the_methods_table():
    text = PARAMETERS_PAGE.read_text(encoding="utf-8")
    (row,) = [r for r in _list_table_rows(text) if r[0] == "``method``"]
    methods = (PARAMETERS_PAGE.parent / "methods.rst").read_text(encoding="utf-8")
    for name in available_methods():
        assert f'``"{name}"``' in row[2] and f'* - ``"{name}"``' in methods, name


def test_guide_table_defaults_match_the_signature():
    table = _parameter_table()
    assert sum(default is not None for default in table.values()) >= 20
    for name, default in table.items():
        actual = _signature()[name]
        if default is None:
            continue
        shown = default.strip("`").split(" ")[0].strip("`")
        if name == "optimizer":
            assert actual.__name__ == shown
        elif isinstance(actual, str):
            assert shown == f'"{actual}"', name
        else:
            assert shown == str(actual) or float(shown) == actual, name


def test_the_readme_is_a_short_front_page_whose_links_exist():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for marker in ("main-command", "test-command"):
        assert text.count(f"<!-- {marker} -->") == 1
        assert text.count(f"<!-- /{marker} -->") == 1
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert len(local) >= 10  # the user guide pages, the picture, ...
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README links to missing files: {missing}"
