"""The README's parameter table cannot drift from the code and docstring."""

import inspect
import re
from pathlib import Path

from sklearn_llp import LLPClassifier

README = Path(__file__).resolve().parents[1] / "README.md"


def _readme_table():
    text = README.read_text()
    table = text.split("<!-- parameters -->")[1].split("<!-- /parameters -->")[0]
    rows = {}
    for line in table.strip().splitlines()[2:]:
        names_cell, default_cell, _ = [c.strip() for c in line.strip("|").split("|", 2)]
        names = re.findall(r"`([a-z_]+)`", names_cell)
        defaults = [d.strip() for d in default_cell.split(",")]
        for i, name in enumerate(names):
            rows[name] = defaults[i] if len(defaults) == len(names) else None
    return rows


def _signature():
    parameters = inspect.signature(LLPClassifier.__init__).parameters
    return {
        name: p.default
        for name, p in parameters.items()
        if name != "self" and p.kind is not p.VAR_KEYWORD
    }


def _docstring_parameters():
    doc = LLPClassifier.__doc__
    section = doc.split("Parameters\n    ----------\n")[1].split("\n    Attributes")[0]
    names = set()
    for line in section.splitlines():
        match = re.match(r"    ([a-z_]+) :", line)
        if match:
            names.add(match.group(1))
    return names


def test_every_parameter_is_in_the_readme_table_and_the_docstring():
    signature = _signature()
    assert set(_readme_table()) == set(signature)
    assert _docstring_parameters() == set(signature)


def test_readme_defaults_match_the_signature():
    for name, default in _readme_table().items():
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
