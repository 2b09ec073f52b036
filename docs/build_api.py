"""Write the API reference (docs/api.md) from the package's docstrings.

Run ``python docs/build_api.py`` (or ``--out PATH``); it imports the package and documents every
public name of ``pymc_rdp`` and of its public modules, with signatures and full docstrings.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
from pathlib import Path

import pymc_rdp

MODULES = [
    "pymc_rdp.privacy.rdp",
    "pymc_rdp.privacy.neighbours",
    "pymc_rdp.privacy.mechanisms",
    "pymc_rdp.privacy.accountant",
    "pymc_rdp.privacy.tight_accounting",
    "pymc_rdp.privacy.gaussian_profile",
    "pymc_rdp.privacy.filters",
    "pymc_rdp.privacy.dp_events",
    "pymc_rdp.privacy.calibration",
    "pymc_rdp.curation.counting",
    "pymc_rdp.curation.counting.files",
    "pymc_rdp.privacy.dirichlet_divergence",
    "pymc_rdp.distributions.ops",
    "pymc_rdp.distributions",
    "pymc_rdp.models.bayesian_network",
    "pymc_rdp.distributions.joint_likelihood",
    "pymc_rdp.distributions.simplex_transform",
    "pymc_rdp.models.naive_bayes",
    "pymc_rdp.datasets",
    "pymc_rdp.plots",
]


def _signature(obj: object) -> str:
    try:
        return str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""


def _public_names(module: object) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n
            for n, v in vars(module).items()
            if not n.startswith("_")
            and getattr(v, "__module__", None) == module.__name__  # type: ignore[attr-defined]
            and (inspect.isfunction(v) or inspect.isclass(v))
        ]
    return sorted(names)


def _document(name: str, obj: object, level: str = "###") -> list[str]:
    kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "constant"
    sig = _signature(obj) if callable(obj) else ""
    lines = [f"{level} `{name}{sig}`", "", f"*{kind}*", ""]
    doc = inspect.getdoc(obj) if (callable(obj) or inspect.ismodule(obj)) else None
    if doc:
        lines += ["```text", doc, "```", ""]
    if inspect.isclass(obj):
        for attr, member in sorted(vars(obj).items()):
            if attr.startswith("_"):
                continue
            func = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
            if isinstance(func, property):
                func = func.fget
            if not callable(func) or not inspect.getdoc(func):
                continue
            lines += [f"#### `{name}.{attr}{_signature(func)}`", ""]
            lines += ["```text", inspect.getdoc(func) or "", "```", ""]
    return lines


def build() -> str:
    out = [
        "# API reference",
        "",
        "Generated from the docstrings by `python docs/build_api.py`; do not edit by hand.",
        "",
        "## `pymc_rdp` (top level)",
        "",
        "| name | defined in |",
        "|---|---|",
    ]
    for name in sorted(pymc_rdp.__all__):
        obj = getattr(pymc_rdp, name)
        where = obj.__name__ if inspect.ismodule(obj) else getattr(obj, "__module__", "")
        out.append(f"| `{name}` | `{where}` |")
    out.append("")
    for modname in MODULES:
        module = importlib.import_module(modname)
        out += [f"## `{modname}`", ""]
        if module.__doc__:
            out += [inspect.cleandoc(module.__doc__), ""]
        for name in _public_names(module):
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                continue
            out += _document(name, obj)
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("api.md"))
    args = parser.parse_args(argv)
    args.out.write_text(build(), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
