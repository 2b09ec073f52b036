"""Synthetic datasets from a private posterior, and Rubin's rules to analyse them.

:func:`synthesize` draws ``m`` synthetic datasets from a fitted
:class:`pymc_rdp.BayesianNetwork`'s posterior, one per posterior draw (the posterior predictive
of the records): post-processing of the releases, so it costs no privacy and leaves the ledger
unchanged. :func:`rubins_rules` combines one downstream estimate computed on each dataset.

This module imports NumPy, SciPy and pandas only (never PyMC).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RubinsRulesResult", "rubins_rules", "synthesize"]


def _positive_int(value: Any, name: str, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def synthesize(bn: Any, m: int, n: int | None = None, random_state: Any = None) -> list[Any]:
    """``m`` synthetic datasets, one per posterior draw of ``bn``'s last :meth:`sample`.

    Dataset ``i`` holds ``n`` records forward-sampled from the CPTs of posterior draw ``d_i``
    (the ``m`` draws evenly spaced over the chains and draws, all distinct):
    ``x ~ p(x | θ^{(d_i)})``, which makes the datasets draws of the posterior predictive
    (the construction that :func:`rubins_rules` assumes; Räisä, Jälkö, Kaski & Honkela 2023,
    "Noise-aware statistical inference with differentially private synthetic data", AISTATS).

    Parameters
    ----------
    bn : BayesianNetwork
        Fitted and sampled (``bn.sample()``; its :attr:`idata` is read).
    m : int
        Number of datasets (>= 1, at most the number of posterior draws).
    n : int, optional
        Records per dataset. Default: the draw's latent number of records ``n_records`` when the
        posterior holds one (an unknown ``N``), else ``bn.n_records`` (public, or estimated from
        the releases).
    random_state : int or numpy.random.Generator, optional
        Seed of the forward sampling (not privacy noise).

    Returns
    -------
    list of pandas.DataFrame
        One categorical column per node (categories = the declared states, in order).

    Raises
    ------
    RuntimeError
        ``bn`` has no posterior yet.
    ValueError
        Bad ``m`` or ``n``, more datasets than posterior draws, or no ``n`` and no known ``N``.
    """
    import pandas as pd

    from pymc_rdp.bn.structure import forward_sample

    bn._check_fitted()
    m = _positive_int(m, "m")
    if n is not None:
        n = _positive_int(n, "n", low=0)
    idata = bn.idata
    if idata is None:
        raise RuntimeError("the network has no posterior yet: call bn.sample() first")
    draws = {v: bn.cpt_draws(idata, v) for v in bn.nodes}
    total = next(iter(draws.values())).shape[0]
    if m > total:
        raise ValueError(
            f"m = {m} datasets need as many posterior draws, but the posterior has {total}"
        )
    post = idata["posterior"]
    n_draws = None
    if n is None and "n_records" in post.data_vars:
        n_draws = post["n_records"].transpose("chain", "draw").to_numpy().reshape(-1)
    elif n is None:
        if bn.n_records is None:
            raise ValueError(
                "n: the number of records is neither public nor in the posterior; pass n="
            )
        n = int(bn.n_records)
    rng = np.random.default_rng(random_state)
    picks = np.unique(np.linspace(0, total - 1, m).round().astype(np.int64))
    out = []
    for d in picks:
        size = int(n_draws[d]) if n_draws is not None else int(n)  # type: ignore[arg-type]
        cpts = {v: draws[v][d] for v in bn.nodes}
        codes = forward_sample(bn.structure, cpts, bn.cards, size, rng)
        out.append(
            pd.DataFrame(
                {
                    v: pd.Categorical.from_codes(codes[v], categories=list(bn.states[v]))
                    for v in bn.nodes
                }
            )
        )
    return out


@dataclass(frozen=True)
class RubinsRulesResult:
    """The combined estimate of :func:`rubins_rules` (arrays for vector estimates).

    Attributes
    ----------
    estimate : numpy.ndarray
        ``q̄ = Σ q_i / m``.
    variance : numpy.ndarray
        ``T = (1 + 1/m) b − ū`` (may be <= 0 when ``m`` is small; then no interval exists).
    df : numpy.ndarray
        Degrees of freedom ``ν = (m − 1) (1 − m ū / ((m + 1) b))²``.
    between, within : numpy.ndarray
        ``b`` and ``ū``.
    m : int
        Number of synthetic datasets.
    """

    estimate: np.ndarray
    variance: np.ndarray
    df: np.ndarray
    between: np.ndarray
    within: np.ndarray
    m: int

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Central ``level`` interval ``q̄ ± t_ν((1 + level)/2) √T``.

        Raises
        ------
        ValueError
            ``level`` outside (0, 1), or ``T <= 0`` for some entry (use more datasets).
        """
        from scipy import stats

        level = float(level)
        if not 0 < level < 1:
            raise ValueError(f"level must lie in (0, 1), got {level!r}")
        if np.any(self.variance <= 0):
            raise ValueError(
                "the combined variance T = (1 + 1/m) b − ū is <= 0 for some estimate: the "
                "between-dataset spread is too small to estimate it; use more datasets (m)"
            )
        half = stats.t.ppf(0.5 + level / 2, self.df) * np.sqrt(self.variance)
        return self.estimate - half, self.estimate + half


def rubins_rules(estimates: Any, variances: Any) -> RubinsRulesResult:
    """Combine a downstream estimate across ``m`` synthetic datasets (Rubin's rules for
    synthetic data).

    With ``q_i`` the estimate and ``u_i`` its variance estimate on dataset ``i``:

    .. math::

        \\bar q = \\frac1m \\sum_i q_i, \\quad
        b = \\frac{1}{m - 1} \\sum_i (q_i - \\bar q)^2, \\quad
        \\bar u = \\frac1m \\sum_i u_i,

        T = \\Bigl(1 + \\frac1m\\Bigr) b - \\bar u, \\qquad
        \\nu = (m - 1) \\Bigl(1 - \\frac{m \\bar u}{(m + 1) b}\\Bigr)^2,

    and ``(θ − q̄) / √T`` is approximately Student-t with ``ν`` degrees of freedom: the rules
    of Raghunathan, Reiter & Rubin (2003, "Multiple imputation for statistical disclosure
    limitation", J. Official Statistics) for fully synthetic data, which Räisä, Jälkö, Kaski &
    Honkela (2023, "Noise-aware statistical inference with differentially private synthetic
    data", AISTATS; NAPSU-MQ) showed to give valid inference from differentially private
    synthetic data when every dataset is generated from a different draw of a noise-aware
    posterior (what :func:`synthesize` does). ``T`` can be negative for small ``m``; the
    intervals need ``T > 0``.

    Parameters
    ----------
    estimates, variances : array_like
        Shape ``(m, ...)``: one row per dataset (``m >= 2``); variances >= 0.

    Returns
    -------
    RubinsRulesResult

    Raises
    ------
    ValueError
        Fewer than 2 datasets, shapes that differ, non-finite values or negative variances.
    """
    q = np.asarray(estimates, dtype=np.float64)
    u = np.asarray(variances, dtype=np.float64)
    if q.ndim == 0 or q.shape[0] < 2:
        raise ValueError(f"estimates: need one estimate per dataset for m >= 2, got {q.shape}")
    if u.shape != q.shape:
        raise ValueError(f"variances has shape {u.shape}, estimates {q.shape}: they must agree")
    if not (np.isfinite(q).all() and np.isfinite(u).all()):
        raise ValueError("estimates and variances must be finite")
    if (u < 0).any():
        raise ValueError("variances must be >= 0")
    m = q.shape[0]
    qbar = q.mean(axis=0)
    b = q.var(axis=0, ddof=1)
    ubar = u.mean(axis=0)
    t = (1.0 + 1.0 / m) * b - ubar
    with np.errstate(divide="ignore", invalid="ignore"):
        nu = (m - 1) * (1.0 - m * ubar / ((m + 1) * b)) ** 2
    return RubinsRulesResult(qbar, t, nu, b, ubar, m)
