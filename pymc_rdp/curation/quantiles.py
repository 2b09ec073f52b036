"""Private quantiles and bin edges of a numeric column, charged: the curator's side of
:class:`~pymc_rdp.ExponentialQuantile` (Smith 2011, "Privacy-preserving statistical estimation
with optimal convergence rates", Sec. 3; the sampler and its privacy analysis are in
:mod:`pymc_rdp.privacy.mechanisms.quantiles`).

m quantiles are m releases of ε/m each (pure DP), composing sequentially to ε-DP (Mironov 2017,
"Rényi Differential Privacy", Prop. 1). They are one plan for
:func:`pymc_rdp.curation.charge.release_plan`: charged all or nothing before any is drawn.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pymc_rdp.curation.charge import PlannedRelease, release_plan
from pymc_rdp.privacy.accountant import Accountant
from pymc_rdp.privacy.mechanisms.base import check_positive_scalar
from pymc_rdp.privacy.mechanisms.noise import resolve_noise_source
from pymc_rdp.privacy.mechanisms.quantiles import ExponentialQuantile, check_values

__all__ = ["private_bins", "private_quantiles"]


def _check_accountant(accountant: Any) -> Accountant:
    if not isinstance(accountant, Accountant):
        raise TypeError(
            "accountant must be an Accountant (every private quantile is charged), got "
            f"{type(accountant).__name__}"
        )
    return accountant


def private_quantiles(
    values: Any,
    quantiles: Any,
    lower: float,
    upper: float,
    *,
    epsilon: float,
    accountant: Any,
    noise_source: Any = None,
    tag: str = "quantiles",
) -> np.ndarray:
    """Private quantiles of a numeric column, charged to ``accountant``.

    Each of the m quantiles is one :class:`ExponentialQuantile` release with ε/m (pure DP);
    the m releases compose sequentially to ε-DP, (α, m·min(ε/m, α(ε/m)²/2))-RDP. All m are
    charged (all or nothing) before any is drawn.

    Parameters
    ----------
    values : array_like
        1-D numbers, no NaN; clipped to ``[lower, upper]``.
    quantiles : array_like
        Quantiles in [0, 1].
    lower, upper : float
        Public bounds of the values (``lower < upper``).
    epsilon : float
        Total pure-DP budget ε > 0 of the m quantiles.
    accountant : Accountant
        Charged with the m releases (tags ``f"{tag}/q={q}"``).
    noise_source : NoiseSource, optional
        Default OS entropy; :class:`~pymc_rdp.UnsafeNoiseSeed` for reproducible tests only.

    Returns
    -------
    numpy.ndarray
        The released quantiles, in the order of ``quantiles`` (float64).

    Raises
    ------
    BudgetExceededError
        The m releases do not fit into the accountant's budget (nothing is charged or drawn).
    """
    x = check_values(values)
    q = np.atleast_1d(np.asarray(quantiles, dtype=np.float64))
    if q.ndim != 1 or q.size == 0:
        raise ValueError("quantiles must be a non-empty 1-D list of numbers in [0, 1]")
    if np.isnan(q).any() or (q < 0).any() or (q > 1).any():
        raise ValueError(f"quantiles must lie in [0, 1], got {q.tolist()}")
    eps = check_positive_scalar(epsilon, "epsilon")
    acc = _check_accountant(accountant)
    if not isinstance(tag, str) or not tag:
        raise TypeError(f"tag must be a non-empty string, got {tag!r}")
    source = resolve_noise_source(noise_source)
    plan = [
        PlannedRelease(
            ExponentialQuantile(eps / q.size, float(qq), lower, upper), x, f"{tag}/q={float(qq):g}"
        )
        for qq in q
    ]
    releases = release_plan(
        plan,
        acc,
        noise_source=source,
        refusal=f"the {q.size} private quantile(s) {tag!r} do not fit into the budget",
    )
    return np.asarray([float(r.values[0]) for r in releases], dtype=np.float64)


def private_bins(
    values: Any,
    n_bins: int,
    lower: float,
    upper: float,
    *,
    epsilon: float,
    accountant: Any,
    granularity: float | None = None,
    noise_source: Any = None,
    tag: str = "bins",
) -> list[float]:
    """Private cut points of ``n_bins`` equal-frequency bins: the quantiles ``k / n_bins``.

    :func:`private_quantiles` of ``k / n_bins`` for ``k = 1, ..., n_bins - 1`` (ε split equally),
    then post-processing: rounding to multiples of ``granularity`` (if given), sorting, and
    merging equal cut points (so fewer bins may result). The result is the ``cuts`` of a schema
    entry (:func:`pymc_rdp.curation.domains.bin_column`).

    Returns
    -------
    list of float
        Strictly increasing cut points (at least one).
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 2:
        raise ValueError(f"n_bins must be an integer >= 2, got {n_bins!r}")
    if granularity is not None:
        g = check_positive_scalar(granularity, "granularity")
    qs = np.arange(1, int(n_bins)) / int(n_bins)
    cuts = private_quantiles(
        values,
        qs,
        lower,
        upper,
        epsilon=epsilon,
        accountant=accountant,
        noise_source=noise_source,
        tag=tag,
    )
    if granularity is not None:
        cuts = np.round(cuts / g) * g
    return [float(c) for c in np.unique(cuts) if math.isfinite(c)]
