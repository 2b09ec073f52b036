"""The ``pymc-rdp`` command line."""

from pymc_rdp.cli.main import main

__all__ = ["main"]
