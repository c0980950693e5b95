"""Sphinx configuration of the sklearn-llp documentation.

Build (offline, warnings as errors; the gallery runs every example in its
reduced mode)::

    pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

``SKLEARN_LLP_GALLERY_FULL=1`` runs the examples in full instead (minutes).
"""

import re
import sys
from pathlib import Path

from sphinx.util import logging

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "sphinxext"))

import sklearn_llp  # noqa: E402

logger = logging.getLogger(__name__)

# -- Project -----------------------------------------------------------------
project = "sklearn-llp"
author = "sklearn-llp developers"
copyright = "sklearn-llp developers, BSD 3-Clause"
version = release = sklearn_llp.__version__

# -- General -----------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]
# No intersphinx: the build must work offline, and intersphinx fetches the
# other projects' inventories at build time.

templates_path = ["_templates"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "_templates",
    "sphinxext",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.md5",
    "auto_examples/*.zip",
    "auto_examples/*.json",
]
default_role = "literal"

# -- autodoc / autosummary / numpydoc ------------------------------------------
autosummary_generate = True
autodoc_typehints = "none"
# The classes' templates list their methods; numpydoc must not list them again.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# -- MyST (docs/malformed_inputs.md) -------------------------------------------
myst_heading_anchors = 2
suppress_warnings = [
    # MyST turns the table's cross-references to files that are not pages
    # (tests/..., docs/...) into plain text; nothing to resolve there.
    "myst.xref_missing",
]

# -- sphinx-gallery ----------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    # run every example, not only plot_*.py: each saves a PNG to --out
    "filename_pattern": r"\.py$",
    "ignore_pattern": r"__init__\.py",
    "within_subsection_order": "gallery_hooks.ExampleOrder",
    "reset_argv": "gallery_hooks.reset_argv",
    "image_scrapers": ("gallery_hooks.png_scraper",),
    "doc_module": ("sklearn_llp",),
    "backreferences_dir": "generated/backreferences",
    "min_reported_time": 0,
    "remove_config_comments": True,
    "show_memory": False,
    "plot_gallery": "True",
    "abort_on_example_error": False,
}

# -- HTML --------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn-llp {release}"
html_theme_options = {
    "navbar_end": ["navbar-icon-links"],
    "secondary_sidebar_items": ["page-toc"],
    "show_prev_next": False,
}
html_static_path = []
html_show_sourcelink = False


# -- API completeness ----------------------------------------------------------
PUBLIC_MODULES = [
    "bags",
    "core",
    "datasets",
    "exceptions",
    "linear",
    "methods",
    "methods.functional",
    "metrics",
    "model_selection",
    "modules",
    "neural",
    "plotting",
    "privacy",
]


def check_api_reference(app):
    """Warn (an error with ``-W``) when api.rst misses a public name.

    Every name in ``__all__`` of the public modules, and ``LLPClassifier``,
    must be listed in ``api.rst``; a new public function then cannot be left
    out of the reference silently.
    """
    import importlib
    import inspect

    text = (DOCS / "api.rst").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\s+([A-Za-z_][\w.]*)\s*$", text, flags=re.MULTILINE))
    missing = [] if "LLPClassifier" in listed else ["LLPClassifier"]
    # the subpackages named here and those the package exports
    modules = set(PUBLIC_MODULES) | {
        name
        for name in sklearn_llp.__all__
        if inspect.ismodule(getattr(sklearn_llp, name, None))
    }
    for module in sorted(modules):
        names = importlib.import_module(f"sklearn_llp.{module}").__all__
        missing += [
            f"{module}.{name}" for name in names if f"{module}.{name}" not in listed
        ]
    if missing:
        logger.warning(
            "api.rst does not list these public names (add them to an "
            "autosummary there): %s",
            ", ".join(missing),
        )


# -- Docstring fix-ups ----------------------------------------------------------
_SHAPE = re.compile(r"shape \(([^()]*)\)")
_TRAILING_UNDERSCORE = re.compile(r"\b([A-Za-z]\w*_)(?=\s*(?:,|$))")


def quote_shape_attributes(app, what, name, obj, options, lines):
    """Quote attribute names in shapes: ``(n_features_in_,)`` is a reference.

    In reST a word ending in ``_`` is a hyperlink reference, so a type such as
    ``ndarray of shape (n_features_in_,)`` fails the build ("Unknown target
    name"). scikit-learn writes ``(`n_features_in_`,)``; this quotes the
    names in docstrings that do not (LLPClassifier's ``feature_names_in_``).
    """
    for i, line in enumerate(lines):
        if "shape (" not in line:
            continue

        def quote(match, line=line):
            if line[: match.start()].count("``") % 2:  # inside a literal
                return match.group(0)
            inner = _TRAILING_UNDERSCORE.sub(r"`\1`", match.group(1))
            return f"shape ({inner})"

        lines[i] = _SHAPE.sub(quote, line)


def constant_docs(app, what, name, obj, options, lines):
    """The ``#:`` comment of a constant re-exported by a subpackage.

    autodoc reads ``#:`` comments from the module named in the directive
    (``sklearn_llp.core``), but the constants are defined in private modules
    (``sklearn_llp.core._read``); without this it shows the docstring
    of their type (``float``, ``tuple``).
    """
    if what != "data":
        return
    import importlib
    import pkgutil

    from sphinx.pycode import ModuleAnalyzer

    package_name, attr = name.rsplit(".", 1)
    package = importlib.import_module(package_name)
    for info in pkgutil.iter_modules(getattr(package, "__path__", [])):
        module = f"{package_name}.{info.name}"
        docs = ModuleAnalyzer.for_module(module).find_attr_docs()
        if ("", attr) in docs:
            lines[:] = list(docs[("", attr)])
            return
    lines[:] = []  # never the docstring of the value's type


def setup(app):
    app.connect("builder-inited", check_api_reference)
    # before numpydoc (priority 500) turns the sections into reST
    app.connect("autodoc-process-docstring", quote_shape_attributes, priority=400)
    app.connect("autodoc-process-docstring", constant_docs, priority=400)
