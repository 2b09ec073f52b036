"""Budget helpers: split a privacy budget over k releases, calibrate the Dirichlet mechanism to an
(ε, δ)-DP target.

Splitting
---------
RDP composes additively at every order (Mironov 2017, "Rényi Differential Privacy",
Proposition 1), so k releases of a mechanism that is (λ, ε/k)-RDP are (λ, ε)-RDP. An (ε, δ)-DP
target is met at order λ by the accountant's conversion (:func:`pymc_rdp.privacy.rdp.to_dp`; by
default
Balle et al. 2020, Theorem 21)

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
from typing import Any, NamedTuple

import numpy as np

from pymc_rdp._validation import as_float_array, check_count
from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.mechanisms.dirichlet import DirichletMechanism

__all__ = ["DPCalibration", "calibrate_dirichlet", "split_budget"]


def _scalar(value: Any, name: str) -> float:
    arr = as_float_array(value, name)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    return float(arr)


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
        μ*²/k with μ* = :func:`pymc_rdp.privacy.tight_accounting.gaussian_mu` (ε, δ) (Balle & Wang
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
    eps = _scalar(epsilon, "epsilon")
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
    d = _scalar(delta, "delta")
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
        from pymc_rdp.privacy.tight_accounting import gaussian_mu

        mu = gaussian_mu(eps, d)
        x = lam * (mu * mu / (2.0 * kk)) * (1.0 - 1e-12)
        return x if lam.ndim else float(x)
    flat = lam.reshape(-1)
    x = np.maximum((eps - _conversion_offset(flat, d, method)) / kk, 0.0)
    for i in range(flat.size):
        grid = flat[i : i + 1]

        def meets(v: float, grid: np.ndarray = grid) -> bool:
            return _rdp.to_dp(grid, np.array([kk * v]), d, method=method)[0] <= eps

        v = float(x[i])
        steps = 0
        while v > 0.0 and not meets(v):
            v = math.nextafter(v, 0.0) if steps < 8 else v * (1.0 - 2.0**steps * 1e-16)
            steps += 1
        x[i] = v
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
    eps = _scalar(epsilon, "epsilon")
    d = _scalar(delta, "delta")
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
        lam, lo = float(cand[i]), float(per[i])
        hi = lo * 2.0
        while dp_eps(build(hi, lam)) <= eps and hi < 1e6 * lo:
            lo, hi = hi, hi * 2.0
        for _ in range(60):
            mid = math.sqrt(lo * hi)
            if not lo < mid < hi or hi / lo - 1.0 < 1e-13:
                break
            if dp_eps(build(mid, lam)) <= eps:
                lo = mid
            else:
                hi = mid
        m = build(lo, lam)
        s_val = float(m.alpha_min / m.r) if objective == "pseudocount" else -float(m.r)
        results.append((s_val, lam, lo, m))
    _, lam, x_best, mech = min(results, key=lambda t: t[0])
    total = dp_eps(mech)
    return DPCalibration(mech, lam, x_best, total)
