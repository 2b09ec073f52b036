"""Calibration: the least noise that meets a privacy budget, and splitting a budget over releases.

The least-noise search
----------------------
Every estimator and mechanism that calibrates its noise to a budget does it with
:func:`least_noise`: a predicate ``meets(x)`` (the privacy loss of noise parameter x, converted by
the tightest valid rule the caller uses, is at most the target) that is monotone in x is
bracketed by doubling/halving and bisected in log x down to a few ulp; the value returned always
meets the target. :func:`largest_target` is the same search for the largest per-release target
(a privacy parameter instead of a noise scale), and :func:`first_meeting` moves a closed-form or
root-finder value float by float onto the side that meets the target.

Splitting
---------
RDP composes additively at every order (Mironov 2017, "Rényi Differential Privacy",
Proposition 1), so k releases of a mechanism that is (λ, ε/k)-RDP are (λ, ε)-RDP. An (ε, δ)-DP
target is met at order λ by the accountant's conversion (:func:`pymc_rdp.privacy.rdp.to_dp`; by
default Balle et al. 2020, Theorem 21)

    ε_DP = ε_RDP(λ) + log((λ−1)/λ) − (log δ + log λ)/(λ−1),

so the per-release RDP target at λ is the largest x with to_dp(λ, k·x, δ) ≤ ε.

Dirichlet calibration to (ε, δ)
-------------------------------
For every candidate order λ the Dirichlet mechanism is calibrated (one vectorised call) to the
per-release RDP target at λ; the order giving the largest r (the least noise) wins. Its whole
curve, composed k times and converted with ``rdp.to_dp`` over all orders, is then at most ε.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from pymc_rdp._validation import as_float_array, check_count, check_scalar
from pymc_rdp.privacy import rdp as _rdp

if TYPE_CHECKING:
    from pymc_rdp.privacy.mechanisms.dirichlet import DirichletMechanism

__all__ = [
    "DPCalibration",
    "calibrate_dirichlet",
    "first_meeting",
    "largest_target",
    "least_noise",
    "split_budget",
]


def least_noise(
    meets: Callable[[float], bool],
    start: float,
    *,
    name: str = "epsilon",
    log: bool = True,
    rtol: float = 0.0,
) -> float:
    """The least noise parameter ``x > 0`` with ``meets(x)`` true, for ``meets`` monotone in x.

    ``meets(x)`` must be False for small ``x`` and True for large ``x``. The search brackets the
    threshold by doubling/halving from ``start`` and bisects (in ``log x`` when ``log``) until the
    bracket holds adjacent floats, its width is below 4 ulp or below ``rtol`` relative; the upper
    end, which meets the target, is returned.

    Raises
    ------
    ValueError
        Naming ``name``, if no finite x meets the target or every x down to 0 does.
    """
    hi = float(start)
    for _ in range(2100):
        if meets(hi):
            break
        hi *= 2.0
        if not math.isfinite(hi):
            break
    else:  # pragma: no cover - defensive
        hi = math.inf
    if not math.isfinite(hi) or not meets(hi):
        raise ValueError(f"{name} cannot be met by any finite amount of noise")
    lo = hi
    for _ in range(2100):
        lo /= 2.0
        if lo == 0.0:
            raise ValueError(f"{name} is met with vanishing noise; the target is too loose")
        if not meets(lo):
            break
    for _ in range(400):
        mid = math.sqrt(lo * hi) if log else 0.5 * (lo + hi)
        if not lo < mid < hi or hi - lo <= max(4 * math.ulp(hi), rtol * hi):
            break
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return hi


def largest_target(
    feasible: Callable[[float], bool],
    start: float,
    *,
    name: str = "epsilon",
    rtol: float = 0.0,
) -> float:
    """The largest ``x > 0`` with ``feasible(x)`` true, for ``feasible`` true for small x only.

    The same search as :func:`least_noise`, on y = 1/x (bisection in log y is bisection in log x);
    the value returned is one at which ``feasible`` was found true.
    """
    return 1.0 / least_noise(lambda y: feasible(1.0 / y), 1.0 / float(start), name=name, rtol=rtol)


def first_meeting(
    x: float,
    meets: Callable[[float], bool],
    *,
    toward: float,
    exact_steps: int = 10_000,
    max_steps: int = 10_000,
) -> float:
    """Move ``x`` float by float toward ``toward`` until ``meets(x)``; ``x`` if it already meets.

    For a value computed in closed form or by a root finder, a few rounding errors away from the
    boundary of the target. After ``exact_steps`` single-ulp steps, step k moves by the relative
    amount 2^k · 1e-16, so that far starts end in a bounded number of steps (``toward`` itself is
    returned if it is passed); after ``max_steps`` the last value is returned as it is (callers
    that need the target met check it).
    """
    down = toward < x
    for step in range(max_steps):
        if meets(x):
            break
        if step < exact_steps:
            x = math.nextafter(x, toward)
        else:
            factor = 2.0**step * 1e-16
            x = x * (1.0 - factor) if down else x * (1.0 + factor)
        if (x <= toward) if down else (x >= toward):
            return toward
    return x


def _conversion_offset(order: np.ndarray, delta: float, method: str) -> np.ndarray:
    """ε_DP − ε_RDP(λ) of the conversion at one order (ignoring the clamp at 0)."""
    if method == "bbghs":
        return np.log1p(-1.0 / order) - (math.log(delta) + np.log(order)) / (order - 1.0)
    if method == "mironov":
        return -math.log(delta) / (order - 1.0)
    raise ValueError(f"method must be 'bbghs' or 'mironov', got {method!r}")


def split_budget(
    epsilon: float,
    k: int,
    order: Any = None,
    delta: float | None = None,
    method: str = "bbghs",
    mechanism: str | None = None,
) -> Any:
    """The per-release privacy target that makes k sequential releases meet a total budget.

    Parameters
    ----------
    epsilon : float
        Total budget ε > 0: an RDP ε (at ``order``, or at every order when ``order`` is None) or,
        with ``delta``, an (ε, δ)-DP ε.
    k : int
        Number of releases, ≥ 1.
    order : float or array_like, optional
        Rényi order(s) λ > 1 (finite). Required with ``delta``.
    delta : float, optional
        δ in (0, 1) of an (ε, δ)-DP budget.
    method : {"bbghs", "mironov"}
        The conversion of :func:`pymc_rdp.privacy.rdp.to_dp` (only with ``delta``).
    mechanism : {None, "gaussian"}
        None: valid for any mechanism (the RDP conversion at each order). "gaussian" (with
        ``delta``): the releases are continuous Gaussian mechanisms, whose composition is exactly
        a Gaussian with μ² = Σ μᵢ² (Dong, Roth & Su 2019), so the budget is met exactly by μᵢ² =
        μ*²/k with μ* = :func:`pymc_rdp.privacy.gaussian_profile.gaussian_mu` (ε, δ) (Balle & Wang
        2018): the per-release target at λ is λ μ*²/(2k) · (1 − 1e-12) (the RDP curve of such a
        Gaussian, a margin against rounding), larger than the conversion's and only valid for
        Gaussian releases.

    Returns
    -------
    float or numpy.ndarray
        Without ``delta``: ε/k (RDP composes additively at each order, Mironov 2017, Prop. 1).
        With ``delta``: per order, the largest per-release RDP ε x with
        ``rdp.to_dp([λ], [k x], delta) <= epsilon``, shaped like ``order``; 0 where the
        conversion offset alone exceeds ε (the conversion's KL rule, which maps curves below about
        δ²/k to ε = 0, is not used for this negligible budget).
    """
    eps = check_scalar(epsilon, "epsilon")
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"epsilon must be finite and > 0, got {eps!r}")
    kk = check_count(k, "k")
    if delta is None:
        if order is not None:
            lam = as_float_array(order, "order")
            if (lam <= 1).any():
                raise ValueError("order must be > 1")
            return np.full(lam.shape, eps / kk) if lam.ndim else eps / kk
        return eps / kk
    d = check_scalar(delta, "delta")
    if not 0.0 < d < 1.0:
        raise ValueError(f"delta must lie in the open interval (0, 1), got {d!r}")
    if order is None:
        raise ValueError(
            "order is required with delta (the split of an (ε, δ) budget is per order)"
        )
    lam = as_float_array(order, "order")
    if (lam <= 1).any():
        raise ValueError("order must be > 1")
    if mechanism not in (None, "gaussian"):
        raise ValueError(f"mechanism must be None or 'gaussian', got {mechanism!r}")
    if mechanism == "gaussian":
        if not np.isfinite(lam).all():
            raise ValueError("order must be finite for Gaussian releases")
        from pymc_rdp.privacy.gaussian_profile import gaussian_mu

        mu = gaussian_mu(eps, d)
        x = lam * (mu * mu / (2.0 * kk)) * (1.0 - 1e-12)
        return x if lam.ndim else float(x)
    flat = lam.reshape(-1)
    x = np.maximum((eps - _conversion_offset(flat, d, method)) / kk, 0.0)
    for i in range(flat.size):
        grid = flat[i : i + 1]

        def meets(v: float, grid: np.ndarray = grid) -> bool:
            return _rdp.to_dp(grid, np.array([kk * v]), d, method=method)[0] <= eps

        x[i] = first_meeting(float(x[i]), meets, toward=0.0, exact_steps=8, max_steps=2**31)
    return x.reshape(lam.shape) if lam.ndim else float(x[0])


class DPCalibration(NamedTuple):
    """The result of :func:`calibrate_dirichlet`."""

    mechanism: DirichletMechanism
    order: float
    rdp_epsilon: float
    epsilon: float


def calibrate_dirichlet(
    epsilon: float,
    delta: float,
    l2_sensitivity: float,
    linf_sensitivity: float,
    alpha0: float = 1.0,
    scheme: str = "paper",
    alpha: Any = None,
    count: int = 1,
    orders: Any = None,
    method: str = "bbghs",
    objective: str = "pseudocount",
    refine: int = 3,
) -> DPCalibration:
    """Calibrate the Dirichlet mechanism so that ``count`` releases meet (ε, δ)-DP.

    For each order λ in ``orders`` the per-release RDP target is ``split_budget(epsilon, count,
    λ, delta)`` and r is calibrated to it at λ (``DirichletMechanism.calibrate``, vectorised over
    the orders); the order with the largest r wins. The returned mechanism's curve, composed
    ``count`` times, converts (``rdp.to_dp`` over ``orders``) to at most ``epsilon``.

    Parameters
    ----------
    epsilon, delta : float
        The (ε, δ)-DP target, ε > 0, δ ∈ (0, 1).
    l2_sensitivity, linf_sensitivity : float
        Δ₂, Δ∞ > 0.
    alpha0, scheme, alpha
        As in :meth:`DirichletMechanism.calibrate`.
    count : int, default 1
        Number of releases (draws) to be charged.
    orders : array_like, optional
        Candidate orders (default ``rdp.DEFAULT_ORDERS``; orders ≥ 1e5 and ``inf`` are skipped).
    method : {"bbghs", "mironov"}
    objective : {"pseudocount", "r"}, default "pseudocount"
        "pseudocount" minimises α_min / r, the prior's weight in records (a draw is
        Dir(r (c + α/r))): with the paper scheme α = α₀ + 4(λ−1)rΔ∞ grows with λ, so a large r
        alone can mean a draw dominated by the prior. "r" maximises r. Both agree for the
        fixed-α scheme.
    refine : int, default 3
        How many of the best screened orders are refined against the full converted curve.

    Returns
    -------
    DPCalibration
        ``(mechanism, order, rdp_epsilon, epsilon)``: the mechanism, the order it was calibrated
        at, the per-release RDP ε there and the (ε, δ)-DP ε of ``count`` releases (≤ target).
    """
    eps = check_scalar(epsilon, "epsilon")
    d = check_scalar(delta, "delta")
    if not 0.0 < d < 1.0:
        raise ValueError(f"delta must lie in the open interval (0, 1), got {d!r}")
    kk = check_count(count, "count")
    grid = (
        _rdp.DEFAULT_ORDERS if orders is None else as_float_array(orders, "orders", allow_inf=True)
    )
    grid = np.asarray(grid, dtype=np.float64).reshape(-1)
    if (grid <= 1).any():
        raise ValueError("orders must all be > 1")
    cand = grid[np.isfinite(grid) & (grid < 1e5)]
    if cand.size == 0:
        raise ValueError("orders has no finite order below 1e5 to calibrate at")
    per = np.asarray(split_budget(eps, kk, cand, d, method=method), dtype=np.float64)
    ok = per > 0
    if not ok.any():
        raise ValueError(
            f"epsilon = {eps!r} cannot be met at delta = {d!r} by any of the orders "
            "(the conversion alone exceeds it)"
        )
    cand, per = cand[ok], per[ok]
    kwargs: dict[str, Any] = {"alpha0": alpha0, "scheme": scheme}
    if alpha is not None:
        kwargs["alpha"] = alpha
    from pymc_rdp.privacy.mechanisms.dirichlet import DirichletMechanism

    batch = DirichletMechanism.calibrate(per, cand, l2_sensitivity, linf_sensitivity, **kwargs)
    if objective == "pseudocount":
        score = batch.alpha_min / batch.r
    elif objective == "r":
        score = -batch.r
    else:
        raise ValueError(f"objective must be 'pseudocount' or 'r', got {objective!r}")
    conv_orders = np.asarray(grid, dtype=np.float64)

    def build(x: float, lam: float) -> DirichletMechanism:
        return DirichletMechanism.calibrate(x, lam, l2_sensitivity, linf_sensitivity, **kwargs)

    def dp_eps(m: DirichletMechanism) -> float:
        return float(_rdp.to_dp(conv_orders, kk * m.rdp(conv_orders), d, method=method)[0])

    # The screen meets the target at one order; the whole curve may convert to less. Refine the
    # best few: the largest per-release target at λ whose full curve still converts to ≤ ε (the
    # curve increases with r at every order, so bisection in log x applies).
    results = []
    for i in np.argsort(score, kind="stable")[:refine]:
        lam = float(cand[i])
        lo = largest_target(
            lambda x, lam=lam: dp_eps(build(x, lam)) <= eps, float(per[i]), rtol=1e-13
        )
        m = build(lo, lam)
        s_val = float(m.alpha_min / m.r) if objective == "pseudocount" else -float(m.r)
        results.append((s_val, lam, lo, m))
    _, lam, x_best, mech = min(results, key=lambda t: t[0])
    total = dp_eps(mech)
    return DPCalibration(mech, lam, x_best, total)
