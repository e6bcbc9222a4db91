"""Self-contained HTML reports: one file with its style, script and data inline — no CDN, no
network — that opens from disk, as a CI artifact, or from ``openwop-eval view``.

The pages are Jinja2 templates (``templates/``); the data is embedded as JSON and every
value from the run is shown as text, never as markup. A report carries content (outputs,
arguments, results, rationales): it is a local artifact, not for another tenant.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from ... import __version__
from .page_data import report_data

__all__ = ["PAGE_HEADERS", "render_comparison", "render_page", "render_report", "report_data"]

PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline';"
    " script-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
"""What a served report page is answered with: nothing may load from anywhere else."""


@lru_cache(maxsize=1)
def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("openwop_eval.reports.html", "templates"),
        autoescape=select_autoescape(["html", "j2"], default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "sort_keys": False}
    return env


def _static(name: str) -> str:
    return (resources.files("openwop_eval.reports.html") / "static" / name).read_text("utf-8")


def _render(template: str, **context: Any) -> str:
    page = _env().get_template(template)
    return page.render(version=__version__, style=_static("report.css"), **context)


def render_page(template: str, **context: Any) -> str:
    """Any other page of the viewer (the run list, an error)."""
    return _render(template, **context)


def render_report(data: dict[str, Any]) -> str:
    """The report page of one run (``data`` from :func:`report_data`)."""
    return _render("report.html.j2", r=data, script=_static("report.js"))


def render_comparison(data: dict[str, Any]) -> str:
    """The page of a comparison (``data`` from ``compare.comparison_dict``)."""
    return _render("compare.html.j2", c=data)
