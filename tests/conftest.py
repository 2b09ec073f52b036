"""Shared test configuration: the ``--runslow`` flag runs the studies marked ``slow``."""

from __future__ import annotations

import numpy as np
import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--runslow", action="store_true", default=False, help="also run tests marked slow"
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--runslow"):
        # `-m 'not slow'` in addopts deselects them by default; --runslow lifts that.
        config.option.markexpr = ""


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261129)
