"""Compiling a chain's later kernels in a helper process: the helper writes them into numba's
on-disk cache without compiling them here, starts only for kernels neither compiled nor cached
nor already in a helper's hands, and the chain hands it the kernels and argument types it then
calls."""

from __future__ import annotations

import math
import os
import pickle
import subprocess
import sys
import textwrap
import time

import numba
import numpy as np
import pytest

from pymc_rdp.distributions import _augmentation_kernels as kernels
from pymc_rdp.distributions import compile_ahead as ahead
from pymc_rdp.distributions.data_augmentation import DataAugmentation
from pymc_rdp.privacy.mechanisms import GaussianMechanism

STRUCTURE = {"a": [], "b": ["a"], "c": ["b"], "d": ["a", "b"]}
STATES = {"a": [0, 1, 2], "b": [0, 1], "c": [0, 1, 2], "d": [0, 1]}
SHAPES = {"a": (3,), "b": (3, 2), "c": (2, 3), "d": (6, 2)}
N = 60


def _sampler(moves: tuple[str, ...] | None) -> DataAugmentation:
    """The sampler of N known with ``moves``, or of N unknown (``moves=None``)."""
    g = GaussianMechanism(3.0, math.sqrt(2))
    rng = np.random.default_rng(0)
    releases = {v: (rng.normal(N / math.prod(s), 2, s), g) for v, s in SHAPES.items()}
    if moves is None:
        return DataAugmentation(STRUCTURE, STATES, releases, None, n_prior=np.ones(2 * N))
    return DataAugmentation(STRUCTURE, STATES, releases, N, moves=moves)


def test_the_helper_compiles_into_the_cache_and_not_here(tmp_path):
    """In a process with an empty cache: the helper starts, a second request for the same kernel
    while it runs starts none and waits for the first's helper, the kernel lands in the cache
    without being compiled in the requesting process, and once cached it starts none."""
    script = textwrap.dedent(
        """
        import numba
        from pymc_rdp.distributions import _augmentation_kernels as k
        from pymc_rdp.distributions import compile_ahead as ca
        from pymc_rdp.distributions.compile_ahead import AheadCompilation, compile_ahead

        ca._usable_cores = lambda: 2  # the helper's own work, on a machine of any size

        helper = compile_ahead([(k._log_choose, (5, 2))])
        assert isinstance(helper, AheadCompilation), helper
        follower = compile_ahead([(k._log_choose, (7, 3))])  # the same types: no second helper
        assert follower.process is None and follower.others == [helper.process]
        follower.wait(timeout=240)  # waits for the first chain's helper
        assert helper.process.poll() == 0
        helper.stop()
        assert k._log_choose.signatures == [], k._log_choose.signatures
        types = (numba.int64, numba.int64)
        assert k._log_choose._cache.load_overload(types, k._log_choose.targetctx) is not None
        assert not isinstance(compile_ahead([(k._log_choose, (5, 2))]), AheadCompilation)
        print("checked")
        """
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "checked"
    assert any(p.suffix == ".nbi" for p in tmp_path.rglob("*")), "nothing was cached"


def test_a_kernel_compiled_here_starts_no_helper():
    kernels.seed(1)
    helper = ahead.compile_ahead([(kernels.seed, (1,))])
    assert not isinstance(helper, ahead.AheadCompilation)
    with helper:  # the stand-in is a context manager too
        pass


def test_a_cache_lookup_that_fails_reads_as_not_cached():
    """The lookup uses numba's private cache API: if it fails, the kernel counts as needing a
    helper (which costs time, never a draw), and one already compiled here still does not."""

    class Broken:
        def load_overload(self, types, context):
            raise AttributeError("renamed in some numba release")

    class Kernel:
        def __init__(self):
            self.overloads = {(numba.int64,): object()}
            self._cache = Broken()
            self.targetctx = None

    assert ahead._needs_compiling(Kernel(), (numba.float64,))
    assert not ahead._needs_compiling(Kernel(), (numba.int64,))


def test_a_kernel_compiled_here_is_skipped_without_reading_its_arguments():
    """The check a chain makes before every call of ``run_chain`` (``pm.sample`` runs one per
    step) does not type the arguments of kernels compiled in this process."""
    kernels.seed(1)
    helper = ahead.compile_ahead([(kernels.seed, (object(),))])  # numba cannot type object()
    assert not isinstance(helper, ahead.AheadCompilation)


def _start_with(monkeypatch, popen):
    """``compile_ahead`` of a kernel never compiled, read as not cached, ``Popen`` replaced."""

    @numba.njit
    def never_compiled(a, b):
        return a + b

    monkeypatch.setattr(ahead, "_needs_compiling", lambda kernel, types: True)
    monkeypatch.setattr(ahead.subprocess, "Popen", popen)
    return ahead.compile_ahead([(never_compiled, (5, 2))])


def test_no_helper_where_no_process_can_start(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("no processes here")

    assert not isinstance(_start_with(monkeypatch, refuse), ahead.AheadCompilation)
    assert not ahead._COMPILING  # nothing is left marked as being compiled


def test_no_helper_on_one_core(monkeypatch):
    """With one core the helper would only take turns with this process."""

    def must_not_start(*args, **kwargs):
        raise AssertionError("a helper was started")

    monkeypatch.setattr(ahead, "_usable_cores", lambda: 1)
    assert not isinstance(_start_with(monkeypatch, must_not_start), ahead.AheadCompilation)


def test_the_usable_cores_are_counted():
    assert 1 <= ahead._usable_cores() <= (os.cpu_count() or 1)


@pytest.mark.parametrize(
    "executable, frozen", [("", False), (sys.executable, True)], ids=["embedded", "frozen"]
)
def test_no_helper_where_the_interpreter_cannot_be_started(monkeypatch, executable, frozen):
    """An embedded interpreter (no ``sys.executable``) or a frozen application (whose
    executable is the application itself) starts no helper."""

    def must_not_start(*args, **kwargs):
        raise AssertionError("a helper was started")

    monkeypatch.setattr(ahead.sys, "executable", executable)
    monkeypatch.setattr(ahead.sys, "frozen", frozen, raising=False)
    assert not isinstance(_start_with(monkeypatch, must_not_start), ahead.AheadCompilation)


def test_a_function_numba_did_not_compile_is_refused():
    with pytest.raises(TypeError, match="not a numba-compiled function"):
        ahead.compile_ahead([(math.lgamma, (2.0,))])


def test_no_helper_with_numba_switched_off(monkeypatch):
    """With ``NUMBA_DISABLE_JIT`` the kernels are plain Python functions: nothing to compile."""
    monkeypatch.setattr(ahead.numba.config, "DISABLE_JIT", True)
    assert not isinstance(ahead.compile_ahead([(math.lgamma, (2.0,))]), ahead.AheadCompilation)


def test_the_helper_imports_with_this_process_path(tmp_path):
    """Kernels whose module this process found through its own ``sys.path`` (a directory that is
    neither installed nor on ``PYTHONPATH``) are compiled by the helper all the same."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "local_kernels.py").write_text(
        "from numba import njit\n\n\n@njit(cache=True)\ndef add(a, b):\n    return a + b\n"
    )
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(src)!r})
        import local_kernels
        from pymc_rdp.distributions import compile_ahead as ca
        from pymc_rdp.distributions.compile_ahead import compile_ahead

        ca._usable_cores = lambda: 2  # the helper's own work, on a machine of any size

        helper = compile_ahead([(local_kernels.add, (5, 2))])
        print(helper.process.wait(timeout=240))
        helper.stop()
        assert local_kernels.add.signatures == []
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"
    cached = [p.name for p in (tmp_path / "cache").rglob("*.nbi")]
    assert any(name.startswith("local_kernels.add") for name in cached), cached


@pytest.mark.parametrize(
    "moves, expected",
    [
        (("gibbs", "gibbs", "subtree"), {"subtree_sweep", "predictive_logs", "draw_theta"}),
        (
            ("gibbs", "subtree", "child_row"),
            {"subtree_sweep", "child_row_sweep", "predictive_logs", "draw_theta"},
        ),
        (
            ("gibbs", "subtree", "pooled_row"),
            {"subtree_sweep", "child_row_sweep", "predictive_logs", "draw_theta"},
        ),
        (("record", "subtree"), {"subtree_sweep", "predictive_logs"}),
        (("subtree", "gibbs"), {"draw_theta"}),  # the first move's tables are made at once
        (None, {"birth_death"}),  # N unknown: the record sweep, then birth/death moves
    ],
)
def test_the_chain_hands_ahead_the_kernels_and_types_it_calls(monkeypatch, moves, expected):
    """Every kernel the chain hands to the helper is one it then calls with those argument
    types (compiled here for them after the chain), so the helper's work is the work the
    chain needs."""
    handed = []

    def record(calls):
        handed.extend(calls)
        return ahead._NoHelper()

    monkeypatch.setattr(ahead, "compile_ahead", record)
    sampler = _sampler(moves)
    if moves is None:
        from pymc_rdp.distributions.unknown_total import run_chain_unknown_total

        run_chain_unknown_total(sampler, draws=2, tune=1, seed=3)
    else:
        sampler.run_chain(draws=2, tune=1, seed=3)
    assert {kernel.py_func.__name__ for kernel, _ in handed} == expected
    for kernel, args in handed:
        types = tuple(numba.typeof(a) for a in args)
        assert types in kernel.overloads, (kernel.py_func.__name__, types)


def test_the_helper_imports_the_kernels_without_the_package_imports():
    """The helper enters the packages as bare modules: every kernel module a chain hands ahead
    imports without the package's ``__init__`` (which imports PyMC), so the helper starts
    compiling within a fraction of a second."""
    program = ahead._HELPER.split("from ")[0]  # the helper's set-up, before its jobs
    script = program + textwrap.dedent(
        """
        import importlib
        for name in ("_augmentation_kernels", "augmentation_subtree", "unknown_total"):
            importlib.import_module("pymc_rdp.distributions." + name)
        print(sorted(m for m in ("pymc", "pytensor", "arviz") if m in sys.modules))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=pickle.dumps(list(sys.path)),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "[]"


def test_waiting_is_bounded_and_leaves_the_helper_to_stop():
    """``wait`` returns after its timeout with the helper still running (the kernel is then
    compiled where it is called); ``stop`` kills it."""
    slow = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    lacking = (numba.float64, numba.float64)  # a job this process has not compiled
    helper = ahead.AheadCompilation(slow, [], jobs=[(kernels._log_choose, lacking)])
    start = time.monotonic()
    helper.wait(timeout=0.2)
    assert time.monotonic() - start < 5 and slow.poll() is None
    helper.stop()
    assert slow.poll() is not None


def test_a_helper_left_with_nothing_this_process_lacks_is_stopped():
    """A helper on a job this process has compiled meanwhile, with none after it that this
    process lacks, is stopped instead of waited for (it would compile the job a second time)."""
    kernels._log_choose(5, 2)  # compiled here for (int64, int64)
    here = (numba.int64, numba.int64)
    fake = subprocess.Popen(  # reports starting jobs 0 and 1, then "compiles" job 1
        [sys.executable, "-c", "print(0); print(1, flush=True); import time; time.sleep(60)"],
        stdout=subprocess.PIPE,
    )
    helper = ahead.AheadCompilation(fake, [], jobs=[(kernels._log_choose, here)] * 2)
    try:
        start = time.monotonic()
        while helper._progress() < 1 and time.monotonic() - start < 60:
            time.sleep(0.01)
        assert helper._left_to_helper() == 0
        start = time.monotonic()
        helper.wait(timeout=30)
        assert time.monotonic() - start < 5 and fake.poll() is not None
        assert helper._left_to_helper() == -1
    finally:
        helper.stop()


def test_the_chain_waits_for_the_helper_before_its_first_later_move(monkeypatch):
    """The chain's first move compiles here while the helper compiles the later kernels; it
    waits for the helper before the first move that calls one of them (not before the second
    heat-bath sweep, whose kernel it has)."""
    from pymc_rdp.distributions import augmentation_gibbs as kg
    from pymc_rdp.distributions import augmentation_subtree as kt

    events = []

    class Recorder(ahead._NoHelper):
        def wait(self, timeout=None):
            events.append("wait")

    def record(kernel, name):
        def call(*args):
            events.append(name)
            return kernel(*args)

        return call

    monkeypatch.setattr(ahead, "compile_ahead", lambda calls: Recorder())
    monkeypatch.setattr(kg, "gibbs_sweep", record(kg.gibbs_sweep, "gibbs"))
    monkeypatch.setattr(kt, "subtree_sweep", record(kt.subtree_sweep, "subtree"))
    _sampler(("gibbs", "gibbs", "subtree")).run_chain(draws=1, tune=1, seed=3)
    assert events[:4] == ["gibbs", "gibbs", "wait", "subtree"]
    assert events.count("wait") == 2  # and at the end of the first iteration


def test_waiting_compiles_here_the_jobs_the_helper_has_not_started(tmp_path):
    """While the helper compiles a slow first kernel, ``wait`` compiles the later one here
    instead of waiting idle; the helper leaves the first to no one else and loads the second
    from the cache."""
    src = tmp_path / "src"
    src.mkdir()
    body = "".join(f"    x = x * 1.0001 + {i}\n" for i in range(400))
    (src / "two_kernels.py").write_text(
        "from numba import njit\n\n\n@njit(cache=True)\ndef slow(x):\n"
        + body
        + "    return x\n\n\n@njit(cache=True)\ndef quick(a, b):\n    return a + b\n"
    )
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(src)!r})
        import two_kernels as tk
        from pymc_rdp.distributions import compile_ahead as ca

        ca._usable_cores = lambda: 2  # the helper's own work, on a machine of any size

        helper = ca.compile_ahead([(tk.slow, (1.0,)), (tk.quick, (5, 2))])
        start = time.monotonic()
        while helper._progress() < 0 and time.monotonic() - start < 60:
            time.sleep(0.01)  # the helper has started the slow kernel
        helper.wait(timeout=240)
        assert helper.process.poll() == 0
        helper.stop()
        print(len(tk.quick.signatures), len(tk.slow.signatures))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1 0"  # quick compiled here, slow only by the helper
    cached = {p.name.split("-")[0] for p in (tmp_path / "cache").rglob("*.nbi")}
    assert {"two_kernels.slow", "two_kernels.quick"} <= cached, cached
