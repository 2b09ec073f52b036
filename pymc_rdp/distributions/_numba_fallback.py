"""Numba object-mode fallback for Ops whose ``perform`` is numpy or LAPACK code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["register_object_mode"]


def register_object_mode(op_types: Sequence[type]) -> None:
    """Run the Ops' numpy ``perform`` from numba-compiled functions (numba object mode).

    The replay is many small numpy calls, which object mode runs at numpy speed; registering the
    fallback explicitly avoids the generic "will use object mode" warning for these Ops.
    """
    import warnings

    try:
        from pytensor.link.numba.dispatch.basic import generate_fallback_impl, numba_funcify
    except ImportError:  # pragma: no cover - numba backend unavailable
        return

    def funcify(op: Any, node: Any = None, storage_map: Any = None, **kwargs: Any) -> Any:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Numba will use object mode")
            return generate_fallback_impl(op, node, storage_map, **kwargs)

    for t in op_types:
        numba_funcify.register(t)(funcify)
