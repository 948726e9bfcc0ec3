"""Sphinx configuration of the skdpsynth documentation site (``bash docs/build.sh``).

The user guide is the Markdown of ``docs/`` (MyST), the API reference is generated from the docstrings
(autodoc + autosummary, numpydoc style) and the examples of ``examples/`` run at build time
(sphinx-gallery). Nothing is fetched from the network while building.
"""

from __future__ import annotations

import importlib
import inspect
import os
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import skdpsynth  # noqa: E402

HERE = Path(__file__).resolve().parent

project = "skdpsynth"
author = "skdpsynth developers"
copyright = "skdpsynth developers"  # noqa: A001
release = skdpsynth.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "api/generated/*.examples", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "auto_examples/*.codeobj.json",
                    "sg_execution_times.rst", "build.sh", "build_api.py"]
templates_path = ["_templates"]

# -- MyST (the user guide is plain Markdown that also reads well on a forge) ------------------------------
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
suppress_warnings = ["myst.xref_missing"] if os.environ.get("SKDPSYNTH_DOCS_LAX") else []

# -- API reference ---------------------------------------------------------------------------------------
#: the public modules, each one page; their names come from the module's ``__all__``
API_MODULES = {
    "skdpsynth": "Top level",
    "skdpsynth.synthesizers": "Synthesizers",
    "skdpsynth.schema": "Schemas: the public domain",
    "skdpsynth.privacy": "Privacy core: mechanisms and accounting",
    "skdpsynth.audit": "Audit (PEARL)",
    "skdpsynth.tstr": "Train on synthetic, test on real",
    "skdpsynth.exceptions": "Errors and warnings",
    "skdpsynth.datasets": "Datasets: loaders and simulators",
    "skdpsynth.metrics": "Metrics",
    "skdpsynth.models": "Task models the audit trains",
    "skdpsynth.utils": "Utilities",
    "skdpsynth.utils.estimator_checks": "Checks for a new synthesizer",
}
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"
autodoc_member_order = "groupwise"
autodoc_default_options = {
    "members": True,
    # inherited methods of skdpsynth's own classes, none of scikit-learn's mixins (documented there)
    "inherited-members": "BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin, MetaEstimatorMixin, "
                         "Exception, object",
    "show-inheritance": False,
    "exclude-members": "get_metadata_routing, set_output",
}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = False


def _public_names(modname: str) -> list[str]:
    """The documented names of a module: its ``__all__`` less private names and plain constants."""
    mod = importlib.import_module(modname)
    names = [n for n in getattr(mod, "__all__", []) if not n.startswith("_") and callable(getattr(mod, n))]
    return sorted(names, key=str.lower)


def _registry_table() -> list[str]:
    """The registered synthesizers as a list-table (``skdpsynth.all_synthesizers()``)."""
    from skdpsynth.synthesizers import all_synthesizers

    rows = [".. list-table:: Registered synthesizers (``all_synthesizers()``; ``--method``: the command line's name)",
            "   :header-rows: 1", "", "   * - synthesizer", "     - ``--method``", "     - data",
            "     - differentially private"]
    try:  # the command line's names, where the registry lists them
        from skdpsynth.synthesizers._registry import REGISTRY

        methods = {info.name: info.method for info in REGISTRY}
    except (ImportError, AttributeError):
        methods = {}
    private = {name for name, _ in all_synthesizers(private=True)}
    for name, _ in all_synthesizers():
        method = methods.get(name)
        rows += [f"   * - :class:`~skdpsynth.synthesizers.{name}`", f"     - ``{method}``" if method else "     -",
                 f"     - {_data_kind(name)}", f"     - {'yes' if name in private else 'no'}"]
    return [*rows, ""]


def _data_kind(name: str) -> str:
    from skdpsynth.synthesizers import all_synthesizers

    return next(kind for kind in ("table", "sequence") if name in dict(all_synthesizers(data=kind)))


def write_api_pages(out: Path = HERE / "api") -> None:
    """Write ``<out>/<module>.rst``: the module's docstring and an autosummary of its public names.

    Every object gets one page, under the first module of ``API_MODULES`` (after the top level) that exports
    it; the top-level page links the names it re-exports to those pages.
    """
    out = Path(out)
    out.mkdir(exist_ok=True)
    owner: dict[int, str] = {}
    order = [m for m in API_MODULES if m != "skdpsynth"] + ["skdpsynth"]
    pages = {}
    for modname in order:
        mod = importlib.import_module(modname)
        title = API_MODULES[modname]
        heading = f"``{modname}``: {title}"
        lines = [heading, "=" * len(heading), "", f".. module:: {modname}", "", inspect.getdoc(mod) or "", ""]
        if modname == "skdpsynth.synthesizers":
            lines += _registry_table()
        own, elsewhere = [], []
        for name in _public_names(modname):
            key = id(getattr(mod, name))
            if key in owner:
                elsewhere.append((name, owner[key]))
            else:
                owner[key] = f"{modname}.{name}"
                own.append(name)
        if own:
            lines += [".. autosummary::", "   :toctree: generated/", "   :nosignatures:", ""]
            lines += [f"   {name}" for name in own]
            lines.append("")
        if elsewhere:
            lines += ["Also importable from here (documented once, where they are defined for users):", ""]
            lines += [f"- ``{modname}.{name}``: :obj:`{target}`" for name, target in elsewhere]
            lines.append("")
        pages[modname] = "\n".join(lines) + "\n"
    for modname, text in pages.items():
        path = out / f"{modname}.rst"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def _skip_request_setters(app, what, name, obj, skip, options):
    """Skip scikit-learn's metadata-routing setters (``set_<method>_request``), generated on every estimator."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    # before Sphinx lists the source files (autosummary then writes a stub for every name of these pages)
    app.connect("config-inited", lambda app, config: write_api_pages())
    app.connect("autodoc-skip-member", _skip_request_setters)

# -- Examples gallery ------------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(HERE.parent / "examples"),
    "gallery_dirs": str(HERE / "auto_examples"),
    "filename_pattern": "/plot_",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "min_reported_time": 1,
    "show_memory": False,
    "matplotlib_animations": False,
    "write_computation_times": False,  # its page loads scripts from CDNs; the site is self-contained
}

# -- HTML ------------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"skdpsynth {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
}
html_static_path: list[str] = []
html_show_sourcelink = False
