"""Records and a fitted :class:`pymc_rdp.BayesianNetwork`: held-out scores, synthetic records.

:func:`log_likelihood` is the body of :meth:`pymc_rdp.BayesianNetwork.log_likelihood` (the mean
test log-likelihood per record under the point CPTs) and :func:`sample_data` that of
:meth:`pymc_rdp.BayesianNetwork.sample_data` (forward sampling of the point CPTs). Both are
post-processing of the releases: no privacy cost.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pymc_rdp.bn.structure import (
    encode_frame,
    forward_sample,
    record_log_likelihood,
    validate_frame,
)

__all__ = ["log_likelihood", "sample_data"]


def log_likelihood(bn: Any, df: pd.DataFrame, unseen: str) -> float:
    """Mean log-likelihood per record of the held-out records ``df`` under ``bn``'s CPTs.

    .. math:: \\frac1n \\sum_{i=1}^n \\sum_v \\log \\hat\\theta_v[\\mathrm{pa}_i(v), x_{iv}]

    (Ponnoprat 2023, Sec. 6); ``unseen`` as in :meth:`pymc_rdp.BayesianNetwork.log_likelihood`.
    """
    bn._check_fitted()
    cpts = bn.cpts
    sub = validate_frame(df, bn.nodes)
    if unseen not in ("raise", "skip"):
        raise ValueError(f"unseen must be 'raise' or 'skip', got {unseen!r}")
    if unseen == "skip":
        keep = np.ones(len(sub), dtype=bool)
        for v in bn.nodes:
            keep &= np.asarray(sub[v].isin(list(bn.states[v])), dtype=bool)
        if not keep.any():
            raise ValueError("df: every record has a value outside the fitted states")
        sub = sub[keep]
    codes = encode_frame(sub, bn.states)
    return float(np.mean(record_log_likelihood(bn.structure, cpts, bn.cards, codes)))


def sample_data(bn: Any, n: int, random_seed: Any, random_state: Any) -> pd.DataFrame:
    """``n`` synthetic records forward-sampled from ``bn``'s CPTs, one categorical column per node.

    The arguments are those of :meth:`pymc_rdp.BayesianNetwork.sample_data` (``random_state``
    is the deprecated name of ``random_seed``).
    """
    bn._check_fitted()
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    if random_state is not None:
        import warnings

        if random_seed is not None:
            raise TypeError("give random_seed only (random_state is its deprecated name)")
        warnings.warn(
            "sample_data(random_state=...) is now sample_data(random_seed=...)",
            DeprecationWarning,
            stacklevel=3,  # the caller of BayesianNetwork.sample_data
        )
        random_seed = random_state
    rng = np.random.default_rng(random_seed)
    codes = forward_sample(bn.structure, bn.cpts, bn.cards, int(n), rng)
    return pd.DataFrame(
        {v: pd.Categorical.from_codes(codes[v], categories=list(bn.states[v])) for v in bn.nodes}
    )
