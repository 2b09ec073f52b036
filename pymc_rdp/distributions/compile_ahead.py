"""Compiling a chain's later kernels in a helper process while this one compiles the first.

Numba compiles one function at a time in a process (a global compiler lock). A chain's first
iteration therefore compiles its kernels one after another on one core while its other chains
wait for them: on Adult (the data-augmentation sampler's default moves, a fresh cache) that took
about 15 s of the first minute, the second core of a 2-core machine idle all along.

:func:`compile_ahead` takes the kernels a chain will call *after* its first move, with the
arguments it will call them with, and hands their argument types to a helper Python process.
The helper compiles them into numba's on-disk cache (every kernel here is ``cache=True``) while
this process compiles the first move's kernels. When this process first calls a later kernel,
numba finds it in the cache and loads it instead of compiling it (on Adult the first iteration
took about 5 s less).

Nothing the chain computes depends on the helper: a kernel the helper has not finished is compiled
here, as without the helper, and the same machine code runs either way. The helper is started
only for kernels neither compiled in this process nor already in the cache, never twice for the
same kernel at once, and not at all where this process may run on one core only (the helper
would only take turns with it), a process cannot be started, ``sys.executable`` is not a Python
to start (an embedded or frozen interpreter) or numba's compiler is switched off
(``NUMBA_DISABLE_JIT``); the chain stops it after its first iteration, when every
move's kernel has run. The helper imports the kernels' modules with this process's
``sys.path``, so it finds the package wherever this process found it.
"""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any

import numba
from numba.core.registry import CPUDispatcher

__all__ = ["AheadCompilation", "compile_ahead"]

#: the kernels a helper is compiling, as (module, name, argument types) keys
_COMPILING: set[tuple[str, str, str]] = set()
_LOCK = threading.Lock()


class AheadCompilation:
    """A running helper process compiling kernels into numba's cache; a context manager that
    stops it on exit."""

    def __init__(self, process: subprocess.Popen, keys: list[tuple[str, str, str]]) -> None:
        self.process = process
        self.keys = keys

    def stop(self) -> None:
        """Stop the helper (kill it if it is still compiling) and wait for it; idempotent. A cache
        entry is written whole or not at all (numba writes a temporary file and renames it)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        with _LOCK:
            _COMPILING.difference_update(self.keys)
        self.keys = []

    def __enter__(self) -> AheadCompilation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _NoHelper:
    """What :func:`compile_ahead` returns when no helper is needed or none could start."""

    def stop(self) -> None:
        pass

    def __enter__(self) -> _NoHelper:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system reports it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _needs_compiling(kernel: Any, types: tuple) -> bool:
    """Whether ``kernel`` has no machine code for ``types`` in this process or in the cache."""
    if types in kernel.overloads:
        return False
    # numba's own lookup, as Dispatcher.compile makes it before compiling (a missing entry costs
    # a read of the cache's index); numba's private API, so any failure reads as "not cached":
    # a helper then starts and finds the kernel cached, which costs time but changes nothing
    try:
        return kernel._cache.load_overload(types, kernel.targetctx) is None
    except Exception:
        return True


def compile_ahead(calls: Sequence[tuple[Any, tuple]]) -> AheadCompilation | _NoHelper:
    """Compile ``calls`` in a helper process, into numba's on-disk cache, while this process
    goes on (module notes).

    Parameters
    ----------
    calls : sequence of (kernel, args)
        Numba-compiled functions (``cache=True``, module-level) and the arguments they will be
        called with; only the arguments' types are used, and only the helper reads them.

    Returns
    -------
    AheadCompilation or a stand-in
        Stop it (``.stop()`` or leaving its ``with`` block) once the kernels are loaded here.
        The stand-in, returned when every kernel is compiled or cached, is being compiled by
        another helper, no process could start or numba's compiler is off, does nothing.

    Raises
    ------
    TypeError
        A kernel is not a numba-compiled function (with the compiler on).
    """
    if numba.config.DISABLE_JIT:  # the "kernels" are plain Python functions
        return _NoHelper()
    for kernel, _ in calls:
        if not isinstance(kernel, CPUDispatcher):
            raise TypeError(f"compile_ahead: {kernel!r} is not a numba-compiled function")
    if not sys.executable or getattr(sys, "frozen", False):
        # an embedded or frozen interpreter: sys.executable is not a Python to start
        return _NoHelper()
    if _usable_cores() < 2:  # nothing to compile on meanwhile
        return _NoHelper()
    jobs = []
    with _LOCK:
        for kernel, args in calls:
            if kernel.overloads:
                # compiled here already: a chain calls each kernel with types its code fixes, so
                # this is the version it needs; reading the types costs about 0.3 ms a call, as
                # long as a whole iteration on a 4-node network (pm.sample's step runs one a draw)
                continue
            types = tuple(numba.typeof(a) for a in args)
            key = (kernel.py_func.__module__, kernel.py_func.__qualname__, str(types))
            if key in _COMPILING or not _needs_compiling(kernel, types):
                continue
            jobs.append((key, types))
        if not jobs:
            return _NoHelper()
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", _HELPER],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            assert process.stdin is not None
            process.stdin.write(pickle.dumps(list(sys.path)))
            process.stdin.write(pickle.dumps([(k[0], k[1], t) for k, t in jobs]))
            process.stdin.close()
        except OSError:
            return _NoHelper()
        keys = [k for k, _ in jobs]
        _COMPILING.update(keys)
    return AheadCompilation(process, keys)


def _compile_jobs(jobs: list[tuple[str, str, tuple]]) -> None:
    """The helper's work: compile each (module, name, argument types) job in turn."""
    for module, name, types in jobs:
        getattr(importlib.import_module(module), name).compile(types)


#: the helper's program: this process's sys.path first (the package may not be installed), then
#: the jobs (their argument types unpickle with numba, which the kernels' modules import)
_HELPER = (
    "import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); "
    "from pymc_rdp.distributions.compile_ahead import _compile_jobs; "
    "_compile_jobs(pickle.load(sys.stdin.buffer))"
)
