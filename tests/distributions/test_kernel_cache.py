"""Cached kernels dropped when a source they depend on changes (``kernel_cache``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pymc_rdp.distributions import kernel_cache

_CALLEE = textwrap.dedent(
    """
    from numba import njit

    @njit(cache=True)
    def value():
        return {value}
    """
)
_CALLER = textwrap.dedent(
    """
    from numba import njit
    from callee import value

    @njit(cache=True)
    def twice():
        return 2 * value()
    """
)
#: the caller's kernel, run in a fresh process; with "drop", after drop_stale_kernels over the
#: two modules' directory and the caller's cache directory; prints the result, what was
#: removed, and whether the kernel came from the cache
_RUN = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pymc_rdp.distributions.kernel_cache import drop_stale_kernels
    import caller
    removed = 0
    if sys.argv[1] == "drop":
        removed = drop_stale_kernels(Path(sys.argv[2]), Path(caller.twice._cache._cache_path))
    result = caller.twice()
    print(result, removed, sum(caller.twice.stats.cache_hits.values()))
    """
)


def _run(src: Path, cache: Path, mode: str) -> tuple[int, int, int]:
    env = dict(
        os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=os.pathsep.join([str(src), *sys.path])
    )
    out = subprocess.run(
        [sys.executable, "-c", _RUN, mode, str(src)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    result, removed, hits = out.stdout.split()
    return int(result), int(removed), int(hits)


def test_a_changed_callee_is_not_run_from_a_stale_cache(tmp_path: Path) -> None:
    """The attack: a cached caller keeps the code of a callee in another file after the callee
    changes (numba keys the caller's cache on its own file only). With the digest of the
    directory's sources kept beside the cache, the caller is compiled again."""
    src, cache = tmp_path / "src", tmp_path / "cache"
    src.mkdir()
    (src / "callee.py").write_text(_CALLEE.format(value=1))
    (src / "caller.py").write_text(_CALLER)

    assert _run(src, cache, "drop") == (2, 0, 0)  # compiled, cached, the digest stored
    assert _run(src, cache, "drop") == (2, 0, 1)  # sources unchanged: loaded from the cache
    (src / "callee.py").write_text(_CALLEE.format(value=5))
    # without the check, numba loads the caller's stale machine code (numba issue 1833)
    assert _run(src, cache, "keep") == (2, 0, 1)
    result, removed, hits = _run(src, cache, "drop")
    assert (result, hits) == (10, 0)
    assert removed >= 2  # at least the caller's index and its entry
    assert _run(src, cache, "drop") == (10, 0, 1)


def test_only_this_directorys_kernels_are_removed(tmp_path: Path) -> None:
    src, cache = tmp_path / "src", tmp_path / "cache"
    src.mkdir()
    cache.mkdir()
    (src / "mod.py").write_text("X = 1\n")
    ours = [cache / "mod.f-3.py312.nbi", cache / "mod.f-3.py312.1.nbc"]
    theirs = [cache / "other.f-3.py312.nbi", cache / "mod.txt"]
    for path in ours + theirs:
        path.write_bytes(b"")
    assert kernel_cache.drop_stale_kernels(src, cache) == 2
    assert not any(path.exists() for path in ours)
    assert all(path.exists() for path in theirs)
    stamp = (cache / kernel_cache.STAMP_NAME).read_text().strip()
    assert stamp == kernel_cache.source_digest(src)
    ours[0].write_bytes(b"")
    assert kernel_cache.drop_stale_kernels(src, cache) == 0  # the digest matches: kept
    assert ours[0].exists()


def test_the_digest_follows_every_source(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("A = 1\n")
    (tmp_path / "b.py").write_text("B = 1\n")
    before = kernel_cache.source_digest(tmp_path)
    (tmp_path / "b.py").write_text("B = 2\n")  # same size, another byte
    changed = kernel_cache.source_digest(tmp_path)
    (tmp_path / "b.py").write_text("B = 1\n")
    assert kernel_cache.source_digest(tmp_path) == before != changed
    (tmp_path / "c.py").write_text("")  # a new module counts too
    assert kernel_cache.source_digest(tmp_path) != before


def test_the_package_stamps_its_cache_on_import() -> None:
    cache = kernel_cache.cache_directory()
    if cache is None:
        pytest.skip("numba does not cache here (NUMBA_DISABLE_JIT)")
    here = Path(kernel_cache.__file__).parent
    stamp = (cache / kernel_cache.STAMP_NAME).read_text().strip()
    assert stamp == kernel_cache.source_digest(here)
