"""Shared test configuration: the ``--runslow`` flag runs the studies marked ``slow``."""

from __future__ import annotations

import os

# NUTS and the small linear algebra of these tests run faster on one BLAS thread; threaded BLAS on
# a shared 2-core machine slows sampling by an order of magnitude. Subprocesses inherit the limit.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

threadpool_limits(limits=1)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--runslow", action="store_true", default=False, help="also run tests marked slow"
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--runslow"):
        # `-m 'not slow'` in addopts deselects them by default; --runslow lifts that.
        config.option.markexpr = ""


@pytest.fixture(scope="session", autouse=True)
def _temporary_files_under_pytest(tmp_path_factory: pytest.TempPathFactory):
    """Temporary files made without a directory go under pytest's base temporary directory (of
    which pytest keeps the last three runs), not the system's: pytensor's numba backend writes
    each generated function's source to such a file and leaves it there, about 8,700 in /tmp
    over a day's runs of this suite. ``TMPDIR`` points there too, so that the interpreters the
    tests start (which do not load this file) leave theirs there as well."""
    import tempfile

    where = str(tmp_path_factory.mktemp("tempfiles"))
    with pytest.MonkeyPatch.context() as patch:  # both restored after the session
        patch.setattr(tempfile, "tempdir", where)
        patch.setenv("TMPDIR", where)
        yield


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261129)
