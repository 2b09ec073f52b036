r"""Differentially private quantiles and bin edges: the exponential mechanism of Smith (2011).

Smith (2011), "Privacy-preserving statistical estimation with optimal convergence rates"
(STOC), Sec. 3: clip the n values to a public range ``[lower, upper]`` and sort them,
``lower = z_0 <= z_1 <= ... <= z_n <= z_{n+1} = upper``. Every point y of the interval
``I_i = [z_i, z_{i+1}]`` has rank ``i`` (``i`` values below it); its score for the quantile q is

.. math:: u(y) = -\,|i - q n|.

The mechanism draws interval ``i`` with probability

.. math:: p_i \propto (z_{i+1} - z_i)\, \exp(-\varepsilon\, |i - q n| / 2)

and then a point uniformly in it: the exponential mechanism (McSherry & Talwar 2007) with the
Lebesgue measure on ``[lower, upper]`` as base measure, whose density at y is
``exp(ε u(y) / 2) / Z``.

Privacy. The score has sensitivity 1: replacing one record moves the rank of any fixed y by at
most one; adding or removing one record moves the rank by at most one and the target ``q n`` by
``q``, in the same direction, so ``|i - q n|`` changes by at most ``max(q, 1 - q) <= 1``. Hence
the density ratio between neighbours is at most ``e^{ε/2} · e^{ε/2} = e^ε``: the release is pure
ε-DP, and (α, min(ε, α ε²/2))-RDP (Bun & Steinke 2016, Prop. 3.3;
:func:`pymc_rdp.privacy.rdp.pure_dp`).
Several quantiles are released one by one, each with its share of the budget, and compose
sequentially (Mironov 2017, Prop. 1).

Floating point. The interval weights are evaluated in float64 (log space, relative error about
1e-15 per weight, so the probability ratio bound holds up to that factor), the interval is chosen by
inverse transform of a 53-bit uniform drawn from the
:class:`~pymc_rdp.privacy.mechanisms.noise.NoiseSource`
(probabilities below 2⁻⁵³ are rounded), and the point inside the interval is
``z_i + v (z_{i+1} - z_i)`` for a 53-bit uniform v, rounded to the nearest float. A continuous
output represented in floating point can reveal, through its low-order bits, which floats were
reachable (Mironov 2012, "On significance of the least significant bits for differential
privacy"), and those depend on the data values ``z_i``. Rounding the released cut points to a
coarse public grid (``private_bins(..., granularity=...)``) removes that channel up to the
probability of the interval endpoints that straddle a grid point; the guarantee above is for the
ideal continuous mechanism.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy.special import logsumexp

from pymc_rdp._validation import check_positive_scalar, check_scalar
from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.calibration import least_noise
from pymc_rdp.privacy.mechanisms.base import CalibrationTarget, Mechanism
from pymc_rdp.privacy.mechanisms.noise import NoiseSource, resolve_noise_source

__all__ = ["ExponentialQuantile", "private_bins", "private_quantiles"]

_UNIT = 2.0**-53


def _uniform(source: NoiseSource) -> float:
    """A uniform float in [0, 1) on the grid of 2⁻⁵³ from the source's random bits."""
    return source.randbits(53) * _UNIT


def _values(values: Any, name: str = "values") -> np.ndarray:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a 1-D array of numbers, got a string")
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a 1-D array of numbers") from None
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {x.shape}")
    if np.isnan(x).any():
        raise ValueError(f"{name} has missing values (NaN); drop or impute them first")
    return x


class ExponentialQuantile(Mechanism):
    """One private quantile by Smith's (2011) exponential mechanism: pure ε-DP.

    Parameters
    ----------
    epsilon : float
        The pure-DP parameter ε > 0 of this one quantile.
    quantile : float
        The quantile q in [0, 1].
    lower, upper : float
        The public range (finite, ``lower < upper``); values are clipped to it.

    Notes
    -----
    RDP curve: ε(α) = min(ε, α ε²/2) (pure ε-DP, Bun & Steinke 2016, Prop. 3.3).
    """

    name: ClassVar[str] = "exponential_quantile"

    def __init__(self, epsilon: float, quantile: float, lower: float, upper: float) -> None:
        self.epsilon = check_positive_scalar(epsilon, "epsilon")
        q = check_scalar(quantile, "quantile")
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile must lie in [0, 1], got {q!r}")
        self.quantile = q
        lo = check_scalar(lower, "lower")
        hi = check_scalar(upper, "upper")
        if not lo < hi:
            raise ValueError(f"lower must be < upper, got lower={lo!r}, upper={hi!r}")
        self.lower, self.upper = lo, hi

    def rdp(self, orders: Any = None) -> np.ndarray:
        from pymc_rdp.privacy.mechanisms.base import resolve_orders

        return _rdp.pure_dp(resolve_orders(orders), self.epsilon)

    def params(self) -> dict[str, Any]:
        return {
            "epsilon": self.epsilon,
            "quantile": self.quantile,
            "lower": self.lower,
            "upper": self.upper,
        }

    def _log_weights(self, values: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sorted clipped values, interval end points z and log(length · exp(ε u / 2))."""
        x = np.sort(np.clip(_values(values), self.lower, self.upper))
        n = x.size
        z = np.concatenate([[self.lower], x, [self.upper]])
        score = -np.abs(np.arange(n + 1, dtype=np.float64) - self.quantile * n)
        with np.errstate(divide="ignore"):
            logw = np.log(np.diff(z)) + 0.5 * self.epsilon * score
        return x, z, logw

    def intervals(self, values: Any) -> tuple[np.ndarray, np.ndarray]:
        """The interval end points ``z`` (n + 2) and the log-probabilities (n + 1) of the draw.

        ``log p_i = log(z_{i+1} - z_i) - ε |i - q n| / 2 - log Z`` (``-inf`` for an empty
        interval): the exact law of the interval the mechanism draws (in float64).
        """
        _, z, logw = self._log_weights(values)
        return z, logw - logsumexp(logw)

    def log_density(self, values: Any, y: Any) -> np.ndarray:
        """Log-density of the output at the points ``y``: ``ε u(y) / 2 - log Z``.

        ``u(y) = -|#{x_j < y} - q n|`` with the clipped values ``x_j``.
        """
        x, _, logw = self._log_weights(values)
        yy = np.asarray(y, dtype=np.float64)
        rank = np.searchsorted(x, yy.reshape(-1), side="left")
        out = -0.5 * self.epsilon * np.abs(rank - self.quantile * x.size) - logsumexp(logw)
        return out.reshape(yy.shape)

    def release(self, value: Any, noise_source: Any = None) -> float:
        """One private quantile of the values ``value`` (a 1-D array of numbers).

        The interval is drawn by inverse transform of one 53-bit uniform from ``noise_source``
        (default :class:`~pymc_rdp.privacy.mechanisms.noise.SystemNoise`), the point by another.
        """
        source = resolve_noise_source(noise_source)
        z, logp = self.intervals(value)
        cdf = np.cumsum(np.exp(logp))
        u = _uniform(source) * cdf[-1]
        # cdf[i-1] <= u < cdf[i]: an empty interval (cdf flat) is never chosen
        i = int(np.searchsorted(cdf, u, side="right"))
        i = min(i, int(np.flatnonzero(np.isfinite(logp))[-1]))  # rounding at the top end
        lo, hi = float(z[i]), float(z[i + 1])
        return min(lo + _uniform(source) * (hi - lo), hi)

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        quantile: float,
        lower: float,
        upper: float,
        order: float | None = None,
        delta: float | None = None,
        *,
        orders: Any = None,
    ) -> ExponentialQuantile:
        """The largest pure ε whose RDP curve meets a target (ε at ``order``, or (ε, δ))."""
        target = CalibrationTarget(epsilon, order, delta, orders)

        def meets(inverse: float) -> bool:
            return target.met_by(_rdp.pure_dp(target.orders, 1.0 / inverse))

        inverse = least_noise(meets, 1.0 / target.epsilon)
        return cls(1.0 / inverse, quantile, lower, upper)


def _check_accountant(accountant: Any) -> Any:
    from pymc_rdp.privacy.accountant import Accountant

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
    x = _values(values)
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
    mechs = [ExponentialQuantile(eps / q.size, float(qq), lower, upper) for qq in q]
    acc.spend_batch(mechs, tags=[f"{tag}/q={float(qq):g}" for qq in q])  # charge first
    return np.asarray([m.release(x, source) for m in mechs], dtype=np.float64)


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
