r"""The privacy profile of the Gaussian mechanism: δ(ε) of μ-GDP, and its inverses.

A Gaussian mechanism with ℓ2 sensitivity Δ and noise σ, or a composition of them with
μ² = Σ kᵢΔᵢ²/σᵢ² (Dong, Roth & Su 2019, "Gaussian Differential Privacy", Corollary 3.3), is
(ε, δ)-DP exactly for

.. math:: \delta(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2)
          - e^{\varepsilon}\,\Phi(-\varepsilon/\mu - \mu/2)

(Balle & Wang 2018, "Improving the Gaussian Mechanism for Differential Privacy", Theorem 8),
evaluated in log space with ``log_ndtr``. The inverses (ε for δ, the largest μ, the least σ) are
found by Brent's method and then moved float by float onto the side that meets the target
(:func:`pymc_rdp.privacy.calibration.first_meeting`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize, special

from pymc_rdp.privacy.calibration import first_meeting

__all__ = [
    "check_delta_scalar",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_mu",
    "gaussian_sigma",
]


def check_delta_scalar(delta: Any) -> float:
    """δ as a Python float in the open interval (0, 1)."""
    d = float(delta)
    if not 0.0 < d < 1.0:
        raise ValueError(f"delta must lie in the open interval (0, 1), got {delta!r}")
    return d


def _check_mu(mu: Any) -> float:
    m = float(mu)
    if not m >= 0.0:  # also NaN
        raise ValueError(f"mu must be >= 0, got {mu!r}")
    return m


def _log_delta(eps: float, mu: float) -> float:
    """log δ_μ(ε), −inf where the difference rounds to ≤ 0."""
    la = float(special.log_ndtr(-eps / mu + mu / 2.0))
    lb = eps + float(special.log_ndtr(-eps / mu - mu / 2.0))
    if not lb < la:
        return -math.inf
    return la + math.log1p(-math.exp(lb - la))


def gaussian_delta(epsilon: float, mu: float) -> float:
    r"""δ(ε) of a μ-GDP (Gaussian) mechanism.

    .. math:: \delta(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2)
              - e^{\varepsilon}\Phi(-\varepsilon/\mu - \mu/2)

    (Balle & Wang 2018, Theorem 8; Dong, Roth & Su 2019, Corollary 2.13), in log space.

    Parameters
    ----------
    epsilon : float
        ε ≥ 0.
    mu : float
        μ = Δ/σ ≥ 0 (for a composition √Σ kᵢΔᵢ²/σᵢ²).
    """
    eps = float(epsilon)
    if not eps >= 0.0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    m = _check_mu(mu)
    if m == 0.0:
        return 0.0
    if math.isinf(m):
        return 1.0
    return math.exp(_log_delta(eps, m))


def gaussian_epsilon(delta: float, mu: float) -> float:
    """The least ε with δ_μ(ε) ≤ δ for a μ-GDP mechanism (0 when δ_μ(0) ≤ δ).

    Brent's method on ``log δ_μ(ε) − log δ`` (decreasing in ε) in a bracket [0, hi], hi from
    ε ≤ μ²/2 + μ√(2 log(1/δ)) (doubled until it brackets), to an absolute tolerance of 1e-13;
    the root is then moved up float by float until it meets δ, so the result is a valid ε
    within about 1e-12 of the exact one.
    """
    d = check_delta_scalar(delta)
    m = _check_mu(mu)
    if m == 0.0:
        return 0.0
    if math.isinf(m):
        return math.inf
    log_d = math.log(d)

    def f(e: float) -> float:
        return _log_delta(e, m) - log_d

    if f(0.0) <= 0.0:
        return 0.0
    hi = m * m / 2.0 + m * math.sqrt(2.0 * -log_d) + 1e-12
    while f(hi) > 0.0:
        hi *= 2.0
        if not math.isfinite(hi):  # pragma: no cover - defensive
            return math.inf
    eps = float(optimize.brentq(f, 0.0, hi, xtol=1e-13, rtol=8.9e-16, maxiter=500))
    return first_meeting(eps, lambda e: f(e) <= 0.0, toward=math.inf)


def gaussian_mu(epsilon: float, delta: float) -> float:
    """The largest μ with δ_μ(ε) ≤ δ: the most sensitivity per noise an (ε, δ) target allows.

    δ_μ(ε) increases with μ; Brent's method on ``log δ_μ(ε) − log δ`` in log μ, then moved down
    float by float until it meets δ.
    """
    eps = float(epsilon)
    if not (eps > 0.0 and math.isfinite(eps)):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    d = check_delta_scalar(delta)
    log_d = math.log(d)

    def g(log_mu: float) -> float:
        return _log_delta(eps, math.exp(log_mu)) - log_d

    lo, hi = -1.0, 1.0
    while g(lo) > 0.0:
        lo -= 2.0
    while g(hi) <= 0.0:
        hi += 2.0
    mu = math.exp(float(optimize.brentq(g, lo, hi, xtol=1e-15, rtol=8.9e-16, maxiter=500)))
    return first_meeting(mu, lambda m: _log_delta(eps, m) <= log_d, toward=0.0)


def gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0, count: int = 1) -> float:
    """The least σ such that ``count`` Gaussian releases of ℓ2 sensitivity Δ meet (ε, δ) exactly.

    σ = Δ √count / μ*(ε, δ) (:func:`gaussian_mu`), moved up float by float until
    ``gaussian_epsilon(δ, √(count Δ²/σ²)) <= ε`` with μ computed as the ledger computes it.
    """
    sens = float(sensitivity)
    if not (sens > 0 and math.isfinite(sens)):
        raise ValueError(f"sensitivity must be finite and > 0, got {sensitivity!r}")
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(f"count must be an integer >= 1, got {count!r}")
    eps = float(epsilon)
    mu = gaussian_mu(eps, delta)
    sigma = sens * math.sqrt(int(count)) / mu

    def meets(s: float) -> bool:
        return gaussian_epsilon(delta, math.sqrt(int(count) * (sens / s) ** 2)) <= eps

    return first_meeting(sigma, meets, toward=math.inf)
