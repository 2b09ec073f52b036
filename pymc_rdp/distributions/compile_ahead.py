"""Compiling a chain's later kernels in a helper process while this one compiles the first.

Numba compiles one function at a time in a process (a global compiler lock). A chain's first
iteration therefore compiles its kernels one after another on one core while its other chains
wait for them: on Adult (the data-augmentation sampler's default moves, a fresh cache) that took
about 15 s of the first minute, the second core of a 2-core machine idle all along.

:func:`compile_ahead` takes the kernels a chain will call *after* its first move, with the
arguments it will call them with, and hands their argument types to a helper Python process.
The helper compiles them into numba's on-disk cache (every kernel here is ``cache=True``) while
this process compiles the first move's kernels. When this process first calls a later kernel,
numba finds it in the cache and loads it instead of compiling it. Kernels both need (the
per-record helpers) are compiled by whichever gets to them first and loaded by the other.

Before its first call of a later kernel the chain waits for the helper
(:meth:`AheadCompilation.wait`, at most ``_WAIT`` seconds), and while the helper is still on its
first job it compiles the jobs the helper has not started itself; the helper loads those from
the cache when it reaches them. Waiting is better than compiling a kernel the helper is on: the
helper has been compiling it for the whole of the first move, and a second compilation here
would finish later and hold numba's lock against the other chains. A chain that asks for
kernels another chain's helper is compiling waits for that helper too. Nothing the chain
computes depends on the helper: a kernel no one has compiled when it is called is compiled
there, and the same machine code runs either way. In the benchmark's process (``bench_da.py
--cold``, 2026-12-06), Adult's first 23 iterations of 2 chains took 9.5–9.7 s with a helper
the chain did not wait for, which took 1.1 s to import the package, and 7.5–7.7 s with the
waiting, the lighter import and a heat-bath kernel 1.7 s quicker to compile; 1.8–2.1 s with
every kernel cached. On a slower machine (2026-12-07) they took 11.9–12.7 s, and 9.6–10.2 s once
a helper that had started a kernel this process was compiling was stopped instead of waited for
and fewer helpers were compiled separately; 1.6–1.7 s cached.

The helper is started only for kernels neither compiled in this process nor already in the
cache, never twice for the same kernel at once, and not at all where this process may run on
one core only (the helper would only take turns with it), a process cannot be started,
``sys.executable`` is not a Python to start (an embedded or frozen interpreter) or numba's
compiler is switched off (``NUMBA_DISABLE_JIT``); the chain stops it after its first iteration,
when every move's kernel has run. The helper imports the kernels' modules with this process's
``sys.path``, so it finds the package wherever this process found it.
"""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import numba
from numba.core.registry import CPUDispatcher

__all__ = ["AheadCompilation", "compile_ahead"]

#: the kernels a helper is compiling, as (module, name, argument types) keys, and its process
_COMPILING: dict[tuple[str, str, str], subprocess.Popen] = {}
_LOCK = threading.Lock()

#: the longest a chain waits for helpers (s) before it compiles what they have not finished;
#: compiling every kernel of a chain took about 10 s on Adult
_WAIT = 120.0


class AheadCompilation:
    """Helper processes compiling a chain's later kernels into numba's cache: this chain's own
    (``process``, compiling ``jobs``, (kernel, argument types) in turn; ``None`` when another
    chain's helper has all of them) and other chains' helpers compiling some of them
    (``others``). A context manager that stops its own helper on exit."""

    def __init__(
        self,
        process: subprocess.Popen | None,
        keys: list[tuple[str, str, str]],
        others: Sequence[subprocess.Popen] = (),
        jobs: Sequence[tuple[Any, tuple]] = (),
    ) -> None:
        self.process = process
        self.keys = keys
        self.others = list(others)
        self.jobs = list(jobs)
        self._started = -1  # the last job the helper has reported starting

    def _progress(self) -> int:
        """The index of the last job the helper has started (it writes each index to its
        stdout as it starts the job), -1 before the first or where it cannot be read."""
        pipe = None if self.process is None else self.process.stdout
        if pipe is None:
            return self._started
        try:
            os.set_blocking(pipe.fileno(), False)
            data = os.read(pipe.fileno(), 4096)
        except (BlockingIOError, OSError, ValueError):
            return self._started
        for token in data.split():  # anything else a compilation printed is not an index
            if token.isdigit():
                self._started = max(self._started, int(token))
        return self._started

    def _left_to_helper(self) -> int:
        """How many jobs only the running helper will have: from the one it is on, those this
        process has not compiled itself; -1 when no helper is running. A helper that started
        a job before this process had finished compiling it compiles it again, and the chain
        would wait for that (on Adult, 1.2 s of the first run: the pair moves' kernel compiled
        twice)."""
        if self.process is None or self.process.poll() is not None:
            return -1
        started = max(0, self._progress())  # the jobs before it are in the cache
        return sum(types not in kernel.overloads for kernel, types in self.jobs[started:])

    def wait(self, timeout: float | None = None) -> None:
        """Wait until every helper compiling this chain's kernels has finished, at most
        ``timeout`` seconds (default ``_WAIT``) in all; a kernel still unfinished is then
        compiled where it is first called.

        While its own helper is still busy on an earlier job, this process first compiles the
        jobs after the first that the helper has not started, the last first, rather than wait
        idle (the helper then loads them from the cache): on Adult, the pair moves' kernel while
        the helper compiles the subtree sweep. A helper left with nothing this process lacks (it
        started one of those jobs before this process had finished it) is stopped."""
        end = time.monotonic() + (_WAIT if timeout is None else timeout)
        for i in range(len(self.jobs) - 1, 0, -1):
            if self.process is None or self.process.poll() is not None or i <= self._progress():
                break
            kernel, types = self.jobs[i]
            if types not in kernel.overloads:
                kernel.compile(types)
        if self._left_to_helper() == 0:
            self.process.kill()  # type: ignore[union-attr]  # stop() reaps it
        for process in (self.process, *self.others):
            if process is None:
                continue
            try:
                process.wait(timeout=max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                return

    def stop(self) -> None:
        """Stop this chain's helper (kill it if it is still compiling) and wait for it;
        idempotent. A cache entry is written whole or not at all (numba writes a temporary file
        and renames it)."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            if self.process.stdout is not None:
                self.process.stdout.close()
        with _LOCK:
            for key in self.keys:
                _COMPILING.pop(key, None)
        self.keys = []
        self.others = []

    def __enter__(self) -> AheadCompilation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _NoHelper:
    """What :func:`compile_ahead` returns when no helper is needed or none could start."""

    def wait(self, timeout: float | None = None) -> None:
        pass

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
        Call ``.wait()`` before the first call of a kernel handed ahead, and stop it
        (``.stop()`` or leaving its ``with`` block) once the kernels are loaded here. It also
        waits for other chains' helpers compiling some of the kernels. The stand-in, returned
        when every kernel is compiled or cached or no process could start or numba's compiler
        is off, does nothing.

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
    jobs: list[tuple[tuple[str, str, str], tuple, Any]] = []
    others: dict[int, subprocess.Popen] = {}  # other chains' helpers compiling some of them
    with _LOCK:
        for kernel, args in calls:
            if kernel.overloads:
                # compiled here already: a chain calls each kernel with types its code fixes, so
                # this is the version it needs; reading the types costs about 0.3 ms a call, as
                # long as a whole iteration on a 4-node network (pm.sample's step runs one a draw)
                continue
            types = tuple(numba.typeof(a) for a in args)
            key = (kernel.py_func.__module__, kernel.py_func.__qualname__, str(types))
            if key in _COMPILING:
                others[id(_COMPILING[key])] = _COMPILING[key]
            elif _needs_compiling(kernel, types):
                jobs.append((key, types, kernel))
        process = None
        if jobs:
            try:
                process = subprocess.Popen(
                    [sys.executable, "-c", _HELPER],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
                assert process.stdin is not None
                process.stdin.write(pickle.dumps(list(sys.path)))
                process.stdin.write(pickle.dumps([(k[0], k[1], t) for k, t, _ in jobs]))
                process.stdin.close()
            except OSError:
                if process is not None:  # started, but its jobs could not be handed over
                    process.kill()
                    process.wait()
                process, jobs = None, []
        if process is None and not others:
            return _NoHelper()
        keys = [k for k, _, _ in jobs]
        _COMPILING.update(dict.fromkeys(keys, process))
    return AheadCompilation(
        process, keys, list(others.values()), [(kernel, t) for _, t, kernel in jobs]
    )


def _compile_jobs(jobs: list[tuple[str, str, tuple]]) -> None:
    """The helper's work: compile each (module, name, argument types) job in turn, writing its
    index to stdout as it starts it (a job the requesting process compiled meanwhile is loaded
    from the cache)."""
    for i, (module, name, types) in enumerate(jobs):
        print(i, flush=True)
        getattr(importlib.import_module(module), name).compile(types)


#: the packages the kernels' modules sit in, which the helper enters without running their
#: ``__init__``: the package's imports PyMC, and the helper took 1.1 s to import a kernel's
#: module where it takes about 0.2 s without
_PACKAGES = tuple(__name__.rsplit(".", i)[0] for i in range(__name__.count("."), 0, -1))

#: the helper's program: this process's sys.path first (the package may not be installed), then
#: each package in :data:`_PACKAGES` as a bare module with the package's path (its submodules
#: import from there), then the jobs (their argument types unpickle with numba, which the
#: kernels' modules import)
_HELPER = (
    "import importlib.util, pickle, sys, types; sys.path[:] = pickle.load(sys.stdin.buffer)\n"
    f"for name in {_PACKAGES!r}:\n"
    "    spec = importlib.util.find_spec(name)\n"
    "    package = types.ModuleType(name)\n"
    "    package.__path__ = list(spec.submodule_search_locations)\n"
    "    sys.modules[name] = package\n"
    f"from {__name__} import _compile_jobs\n"
    "_compile_jobs(pickle.load(sys.stdin.buffer))\n"
)
