"""What ``help()`` shows first: the example, then the key parameters; what
an import loads: only what is used."""

import pydoc
import subprocess
import sys

import pytest

from sklearn_llp import LLPClassifier, LLPRegressor

KEY_PARAMETERS = ("module", "method", "max_epochs", "lr", "batch_size", "random_state")


@pytest.mark.parametrize("estimator", [LLPClassifier, LLPRegressor])
def test_help_opens_with_the_example_and_the_key_parameters(estimator):
    lines = pydoc.render_doc(estimator, renderer=pydoc.plaintext).splitlines()
    text = [line.strip(" |") for line in lines]
    examples = text.index("Examples")
    parameters = text.index("Parameters")
    # the class's own docstring, not the 600 lines inherited from skorch
    assert examples < parameters < 60, (examples, parameters)
    names = [line.split(" :")[0] for line in text[parameters:] if " : " in line]
    assert tuple(names[: len(KEY_PARAMETERS)]) == KEY_PARAMETERS, names[:8]


def _public_objects():
    import importlib
    import inspect

    import sklearn_llp

    for package in ["", *sorted(p for p in sklearn_llp.__all__ if "." not in p)]:
        name = "sklearn_llp" + (f".{package}" if package else "")
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        yield name, module
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                yield f"{name}.{attr}", obj
                if inspect.isclass(obj):
                    for member, value in vars(obj).items():
                        if not member.startswith("_") and callable(value):
                            yield f"{name}.{attr}.{member}", value


def test_public_docstrings_point_to_nothing_an_installed_package_lacks():
    """``help()`` of a public object must not send an installed user to
    ``benchmarks/`` or ``examples/``, which only a clone of the repository
    has; the user guide carries the numbers."""
    seen, pointing = 0, []
    for name, obj in _public_objects():
        doc = getattr(obj, "__doc__", None) or ""
        seen += 1
        if "benchmarks/" in doc or "examples/" in doc:
            pointing.append(name)
    assert seen > 100
    assert pointing == []


def test_imports_load_no_optional_part_and_mean_map_no_torch():
    """``import sklearn_llp`` loads no subpackage, Mean Map no torch, and no
    estimator Dask, Accelerate or matplotlib before they are used."""
    names = ("torch", "pandas", "dask", "distributed", "accelerate", "matplotlib")
    seen = f"print(sorted(m for m in {names!r} if m in sys.modules))"
    script = f"""import sys, sklearn_llp; {seen}
from sklearn_llp.linear import MeanMapClassifier; {seen}
from sklearn_llp import LLPClassifier; {seen}"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.stdout.splitlines() == ["[]", "['pandas']", "['pandas', 'torch']"]
