"""Numba's on-disk cache of the sampler's kernels, dropped whenever one of their sources changes.

Why
---
Numba keys a cached function on its own source file's time stamp and size, and on nothing else
(numba's documentation, "Cache invalidation"; numba issue 1833, open since 2016). A cached kernel
holds the machine code of every function it calls, so when a callee in *another* file changes,
the kernel keeps running the callee's old code; a module-level constant it reads keeps its old
value the same way. The sampler's kernels call across the modules of this directory: the subtree
moves of :mod:`.augmentation_subtree` call the pair proposals of :mod:`.augmentation_moves` and
the table terms of :mod:`._augmentation_kernels`. After an upgrade in place (an editable install
of a newer checkout, or a ``git pull`` under one), a kernel whose own file did not change would
run its callees' old code: a Hastings ratio corrected in one module would stay uncorrected in the
moves of another, and the posterior would be wrong with no error. This was seen here on
2026-12-06: after ``weighted_row_proposal`` changed, the subtree moves kept the cached code until
the cache directory was fresh.

What it does
------------
One digest of every Python source in this directory (:func:`source_digest`) is kept beside the
cached kernels, in the file ``STAMP_NAME`` of the directory numba caches them in. When the digest
differs from the sources', :func:`drop_stale_kernels` removes every cached kernel of this
directory's modules and writes the new digest; numba then compiles each kernel afresh, once.
``pymc_rdp.distributions`` calls it when it is imported, before any kernel can be loaded. The
digest covers every module here, not only those with kernels, since a kernel may read a constant
of any of them; no kernel calls code outside this directory.

Concurrent processes that find the same stale digest each remove the files; a kernel removed
while another process loads it is compiled again there (numba treats a missing file as a miss),
so a race costs compilation time, never a wrong kernel.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from numba import njit

__all__ = ["STAMP_NAME", "cache_directory", "drop_stale_kernels", "source_digest"]

#: the file, in numba's cache directory, that holds the digest of the sources cached there
STAMP_NAME = "pymc_rdp-kernel-sources.sha256"

#: the endings of numba's cache files: the index of a function's entries, and one entry
_CACHE_ENDINGS = (".nbi", ".nbc")

_HERE = Path(__file__).resolve().parent


@njit(cache=True)
def _probe() -> int:  # pragma: no cover - never called
    """Never called: decorating it makes numba choose the cache directory of this directory's
    kernels (next to the sources where that is writable, else numba's user-wide one, or under
    ``NUMBA_CACHE_DIR`` when that is set)."""
    return 0


def source_digest(directory: Path) -> str:
    """The SHA-256 digest of every ``*.py`` file directly in ``directory``: each file's name and
    bytes, in the order of their names."""
    digest = hashlib.sha256()
    for path in sorted(Path(directory).glob("*.py")):
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def cache_directory() -> Path | None:
    """The directory numba caches this directory's kernels in, or None where numba does not
    cache (``NUMBA_DISABLE_JIT``, or a numba whose dispatchers no longer say where)."""
    path = getattr(getattr(_probe, "_cache", None), "_cache_path", None)
    return None if path is None else Path(path)


def drop_stale_kernels(directory: Path | None = None, cache_dir: Path | None = None) -> int:
    """Remove the cached kernels of ``directory``'s modules from ``cache_dir`` unless the digest
    stored there (``STAMP_NAME``) is that of ``directory``'s sources now, and store it.

    Parameters
    ----------
    directory : pathlib.Path, optional
        The sources (default: this package's ``distributions`` directory).
    cache_dir : pathlib.Path, optional
        Where numba caches their kernels (default: :func:`cache_directory`).

    Returns
    -------
    int
        The number of cache files removed (0 when the digest matched, or where nothing can be
        read or written: the kernels are then whatever numba finds, as without this check).
    """
    directory = _HERE if directory is None else Path(directory)
    cache_dir = cache_directory() if cache_dir is None else Path(cache_dir)
    if cache_dir is None:
        return 0
    digest = source_digest(directory)
    stamp = cache_dir / STAMP_NAME
    try:
        if stamp.read_text().strip() == digest:
            return 0
    except OSError:
        pass  # no digest yet: whatever is cached predates this check
    stems = {path.stem for path in directory.glob("*.py")}
    removed = 0
    try:
        for path in cache_dir.iterdir() if cache_dir.is_dir() else ():
            if path.name.endswith(_CACHE_ENDINGS) and path.name.split(".", 1)[0] in stems:
                path.unlink(missing_ok=True)
                removed += 1
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".stamp-")
        with os.fdopen(fd, "w") as f:
            f.write(digest + "\n")
        os.replace(tmp, stamp)
    except OSError:
        pass  # a cache directory that is not ours to change: numba's own checks stand
    return removed
