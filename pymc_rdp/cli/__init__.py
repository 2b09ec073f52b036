"""The ``pymc-rdp`` command line, and its pipeline as library functions.

:func:`main` is the console script; :func:`run_fit` and :func:`run_demo` run what ``pymc-rdp
fit`` and ``pymc-rdp demo`` run, from Python, with the settings in a :class:`FitConfig`.
"""

from pymc_rdp.cli.config import FitConfig, FitResult
from pymc_rdp.cli.main import main
from pymc_rdp.cli.pipeline import run_demo, run_fit

__all__ = ["FitConfig", "FitResult", "main", "run_demo", "run_fit"]
