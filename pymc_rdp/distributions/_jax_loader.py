"""Load :mod:`pymc_rdp.distributions.jax_dispatch` when PyTensor's JAX backend is loaded.

JAX is optional. Like PyTensor, which imports ``jax`` only when a function is compiled with the
JAX linker (``pytensor.link.jax.dispatch``), this package never imports it eagerly: importing jax
costs about a second and switches JAX to 64-bit floats globally. :func:`register_jax_when_loaded`
registers the package's JAX implementations at once if PyTensor's JAX dispatch is already loaded;
otherwise, when jax is installed, it places a finder on :data:`sys.meta_path` that runs the
registration right after the first import of ``pytensor.link.jax.dispatch`` (by the JAX linker,
``pm.sample(nuts_sampler="numpyro")`` or nutpie's JAX backend) and then removes itself.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

__all__ = ["JAX_DISPATCH", "register_jax_when_loaded"]

#: the module whose import triggers the registration
JAX_DISPATCH = "pytensor.link.jax.dispatch"
_REGISTRATIONS = "pymc_rdp.distributions.jax_dispatch"


def _register() -> None:
    try:
        importlib.import_module(_REGISTRATIONS)
    except Exception as exc:  # pragma: no cover - a broken jax installation
        warnings.warn(
            f"pymc_rdp's JAX implementations could not be registered ({exc!r}); graphs with "
            "its custom Ops will not compile under JAX",
            RuntimeWarning,
            stacklevel=2,
        )


class _ThenRegister(importlib.abc.Loader):
    """Delegates to the real loader, then registers the JAX implementations."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        module.__spec__.loader = self.inner
        module.__loader__ = self.inner
        _register()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _AfterJaxDispatch(importlib.abc.MetaPathFinder):
    """Finds ``pytensor.link.jax.dispatch`` through the other finders and wraps its loader."""

    def __init__(self) -> None:
        self._busy = False

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != JAX_DISPATCH or self._busy:
            return None
        self._busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _ThenRegister(spec.loader)
        return spec


def register_jax_when_loaded() -> None:
    """Register the JAX implementations now or on the first import of PyTensor's JAX dispatch.

    Does nothing when jax is not installed; never imports jax itself.
    """
    if JAX_DISPATCH in sys.modules:
        _register()
        return
    if any(isinstance(f, _AfterJaxDispatch) for f in sys.meta_path):
        return
    # a module already in sys.modules may be a lazy placeholder (ArviZ puts one there for jax):
    # find_spec would read its __spec__ and so import jax, about a second
    if "jax" not in sys.modules:
        try:
            if importlib.util.find_spec("jax") is None:
                return
        except (ImportError, ValueError):  # a blocked jax
            return
    elif sys.modules["jax"] is None:  # import blocked through sys.modules
        return
    sys.meta_path.insert(0, _AfterJaxDispatch())
