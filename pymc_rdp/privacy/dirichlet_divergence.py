"""Exact Rényi divergences between Dirichlet distributions, and the exact histogram analysis.

Rényi divergence of two Dirichlets
----------------------------------
For u, v ∈ (0, ∞)ᴷ and an order λ > 1, with log B(u) = Σᵢ log Γ(uᵢ) − log Γ(Σᵢ uᵢ),

    D_λ(Dir(u) ‖ Dir(v)) = [log B(λu + (1−λ)v) − λ log B(u) + (λ−1) log B(v)] / (λ−1),

finite iff every coordinate of λu + (1−λ)v is > 0 (the integral of p_u^λ p_v^{1−λ} is a Dirichlet
normalising constant; Gil, Alajaji & Linder 2013, "Rényi divergence measures for commonly used
univariate continuous distributions", and Ponnoprat, TMLR 2023, proof of Theorem 1).

Exact worst case for histograms
-------------------------------
The Dirichlet mechanism releases Dir(r c + α) for a count vector c. One record contributes s = rΔ∞
(Δ∞ = 1 for counts) to one category. With

    A(x) = log Γ(x + (λ−1)s) − λ log Γ(x) + (λ−1) log Γ(x − s)      (x > s)
    B(y) = log Γ(y − (λ−1)s) − λ log Γ(y) + (λ−1) log Γ(y + s)      (y > (λ−1)s)

a replace-one pair (a record moves from category i to category j, totals equal) has
(λ−1)·D_λ = A(uᵢ) + B(uⱼ), u = r c + α, and an add/remove pair has (λ−1)·D_λ = B(uⱼ) − B(S) or
A(vⱼ) − A(S_v) (S the total concentration). A and B are non-increasing because ψ = (log Γ)′ is
concave: x is the convex combination (1/λ)(x + (λ−1)s) + ((λ−1)/λ)(x − s), so by Jensen
A′(x) = ψ(x + (λ−1)s) + (λ−1)ψ(x − s) − λψ(x) ≤ 0, and likewise for B. Both tend to 0 at +∞, so
both are ≥ 0. Hence, for a concentration α shared by every category,

    replace-one:  ε*(λ) = [A(α + s) + B(α)] / (λ−1)     (attained: count 1 → 0 at i, 0 → 1 at j)
    add/remove:   ε*(λ) = max(A(α + s), B(α)) / (λ−1)   (a supremum, approached as the total grows)

and +∞ where α ≤ (λ−1)s. This is the exact privacy curve of the mechanism for a count histogram;
it never exceeds Ponnoprat's Theorem 1, (λ r² Δ₂²/2) ψ′(α − (λ−1) r Δ∞). See ``docs/dirichlet.md``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import digamma, gammaln

from pymc_rdp._validation import check_orders, check_positive
from pymc_rdp.privacy.neighbours import NEIGHBOURS, check_neighbours

__all__ = [
    "NEIGHBOURS",
    "exact_add_remove_pieces",
    "exact_histogram_rdp",
    "log_beta",
    "renyi_divergence",
]


def log_beta(u: Any) -> np.ndarray:
    """log B(u) = Σᵢ log Γ(uᵢ) − log Γ(Σᵢ uᵢ) along the last axis."""
    u = np.asarray(u, dtype=np.float64)
    return gammaln(u).sum(axis=-1) - gammaln(u.sum(axis=-1))


def renyi_divergence(u: Any, v: Any, order: Any) -> np.ndarray:
    """D_λ(Dir(u) ‖ Dir(v)), vectorised over leading axes (categories on the last axis).

    Parameters
    ----------
    u, v : array_like
        Concentration vectors (> 0), broadcast against each other; the last axis is the category.
    order : array_like
        λ > 1, broadcast against the leading axes of ``u`` and ``v``.

    Returns
    -------
    numpy.ndarray
        The divergence; ``inf`` where some coordinate of λu + (1−λ)v is ≤ 0. Computed from
        ``scipy.special.gammaln``: subtractions of log Γ cost about 1e-9 relative accuracy for
        large arguments.
    """
    u = check_positive(u, "u")
    v = check_positive(v, "v")
    lam = np.asarray(check_orders(order, "order", allow_inf=False))
    u, v = np.broadcast_arrays(u, v)
    lam_e = lam[..., None]
    w = lam_e * u + (1.0 - lam_e) * v
    ok = np.all(w > 0, axis=-1)
    w_safe = np.where(w > 0, w, 1.0)
    num = log_beta(w_safe) - lam * log_beta(u) + (lam - 1.0) * log_beta(v)
    out = np.where(ok, num / (lam - 1.0), np.inf)
    return np.asarray(out, dtype=np.float64)


_U = 2.0**-53  # unit roundoff of float64
# |gammaln(x) − log Γ(x)| ≤ _G_ERR·u·(|log Γ(x)| + |x ψ(x)|) for scipy's gammaln on (0, ∞): measured
# against mpmath (40 digits) on 10⁴ points log-uniform in [1e-300, 1e300] and near the zeros 1
# and 2, the worst ratio was 5.7; 16 leaves a margin of about 3.
_G_ERR = 16.0
_ARG_ERR = 5.0  # an argument α + c·s is computed with ≤ 4 roundings: |error| ≤ 5u(α + |c|s)


def _lgamma_sum(base: np.ndarray, s: np.ndarray, lam: np.ndarray, shifts: tuple, coefs: tuple):
    """Σₖ cₖ log Γ(base + dₖ s) with a rigorous bound on its floating-point error.

    The error bound covers (i) the rounding of every argument base + dₖ s (relative to
    base + |dₖ| s, propagated through |ψ| on the interval it may lie in), (ii) the error of
    ``scipy.special.gammaln`` itself and (iii) the products cₖ·log Γ and their sum. Returns the
    value, the bound, and a mask of the settings where an argument interval reaches 0 (no bound).
    """
    total = np.zeros(np.shape(base))
    err = np.zeros(np.shape(base))
    mag = np.zeros(np.shape(base))
    lost = np.zeros(np.shape(base), dtype=bool)
    for d, c in zip(shifts, coefs, strict=True):
        dk = d(lam) if callable(d) else d
        ck = c(lam) if callable(c) else c
        x = base + dk * s
        e = _ARG_ERR * _U * (base + np.abs(dk) * s)
        lo = x - e
        lost |= ~(lo > 0)
        lo = np.where(lo > 0, lo, 1.0)
        g = gammaln(x)
        psi_max = np.maximum(np.abs(digamma(lo)), np.abs(digamma(x + e)))
        term = ck * g
        total = total + term
        mag = mag + np.abs(term)
        err = err + np.abs(ck) * (psi_max * e + _G_ERR * _U * (np.abs(g) + np.abs(x * digamma(x))))
    # products cₖ·g (1 rounding each, plus the rounding of λ − 1) and the running sum
    err = err + 8.0 * _U * mag
    return total, err * (1.0 + 16.0 * _U), lost


_A_SHIFTS = (lambda lam: lam, 1.0, 0.0)  # A(α + s): log Γ(α + λs), log Γ(α + s), log Γ(α)
_B_SHIFTS = (lambda lam: -(lam - 1.0), 0.0, 1.0)  # B(y): log Γ(y − (λ−1)s), log Γ(y), log Γ(y + s)
_COEFS = (1.0, lambda lam: -lam, lambda lam: lam - 1.0)


def _a_term(alpha, s, lam):
    """A(α + s) = log Γ(α + λs) − λ log Γ(α + s) + (λ−1) log Γ(α), its error bound, lost mask."""
    return _lgamma_sum(alpha, s, lam, _A_SHIFTS, _COEFS)


def _b_term(y, s, lam):
    """B(y) = log Γ(y − (λ−1)s) − λ log Γ(y) + (λ−1) log Γ(y + s), error bound, lost mask."""
    return _lgamma_sum(y, s, lam, _B_SHIFTS, _COEFS)


def _prepare(orders, r, alpha, linf_sensitivity, alpha_to):
    lam = check_orders(orders, "orders")
    rr = check_positive(r, "r")
    al = check_positive(alpha, "alpha")
    dinf = check_positive(linf_sensitivity, "linf_sensitivity")
    al_to = al if alpha_to is None else check_positive(alpha_to, "alpha_to")
    lam, rr, al, al_to, dinf = np.broadcast_arrays(lam, rr, al, al_to, dinf)
    s = rr * dinf
    finite = np.isfinite(lam)
    lam_s = np.where(finite, lam, 2.0)
    return lam, lam_s, finite, s, al, al_to


def _finish(val, err, lam_s, conservative):
    """(val + err)/(λ−1), rounded up: the sum, λ − 1, the division and the product by 1 + 8u
    cost at most four roundings."""
    if conservative:
        val = val + err
    eps = np.maximum(val, 0.0) / (lam_s - 1.0)
    return eps * (1.0 + 8.0 * _U) if conservative else eps


def exact_add_remove_pieces(
    orders: Any,
    r: Any,
    alpha: Any,
    linf_sensitivity: Any = 1.0,
    *,
    conservative: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Suprema of D_λ when one record leaves, or joins, one histogram (add/remove pieces).

    With s = rΔ∞ and α the concentration of the category that changes (the smallest one gives
    the supremum over categories),

        removal:  sup D_λ(Dir(u) ‖ Dir(u − s eᵢ)) = A(α + s)/(λ−1),
        addition: sup D_λ(Dir(u) ‖ Dir(u + s eⱼ)) = B(α)/(λ−1)   (+∞ if α ≤ (λ−1)s),

    (module docstring: (λ−1)D = A(uᵢ) − A(S) and B(uⱼ) − B(S), A and B non-increasing and ≥ 0;
    both suprema are approached as the total S grows). A record that moves between two
    independent histograms (two rows of a CPT) costs the removal in one plus the addition in
    the other: Rényi divergence adds over independent components.

    Parameters
    ----------
    orders, r, alpha, linf_sensitivity : array_like
        As in :func:`exact_histogram_rdp` (broadcast together).
    conservative : bool, default True
        Add the rigorous bound on the floating-point error (see :func:`exact_histogram_rdp`).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The removal and the addition piece; ``inf`` at λ = ∞, where the addition is unbounded,
        or where the rounding error cannot be bounded.
    """
    _, lam_s, finite, s, al, _ = _prepare(orders, r, alpha, linf_sensitivity, None)
    valid = finite & (al > (lam_s - 1.0) * s)
    y_safe = np.where(valid, al, (lam_s - 1.0) * s + 1.0)
    a_val, a_err, a_lost = _a_term(al, s, lam_s)
    b_val, b_err, b_lost = _b_term(y_safe, s, lam_s)
    rem = _finish(a_val, a_err, lam_s, conservative)
    add = _finish(b_val, b_err, lam_s, conservative)
    rem = np.where(finite & ~(a_lost & conservative), rem, np.inf)
    add = np.where(valid & ~(b_lost & conservative), add, np.inf)
    return np.asarray(rem, dtype=np.float64), np.asarray(add, dtype=np.float64)


def exact_histogram_rdp(
    orders: Any,
    r: Any,
    alpha: Any,
    linf_sensitivity: Any = 1.0,
    neighbours: str = "replace-one",
    *,
    alpha_to: Any = None,
    conservative: bool = True,
) -> np.ndarray:
    """The exact RDP curve of the Dirichlet mechanism on a count histogram.

    ε*(λ) = [A(α + s) + B(α′)]/(λ−1) for replace-one neighbours (a record leaves a category of
    concentration α and joins one of concentration α′ = ``alpha_to``), and
    ε*(λ) = max(A(α + s), B(α))/(λ−1) for add/remove neighbours, s = r·Δ∞ (module docstring; the
    proof is in ``docs/dirichlet.md``). Replace-one with a per-category α is the maximum over
    ordered pairs of distinct categories, i.e. of the two smallest concentrations in either role.

    Parameters
    ----------
    orders : array_like
        λ > 1 (``inf`` allowed, giving ``inf``).
    r : array_like
        Scale r > 0.
    alpha : array_like
        Concentration (> 0) of the category that loses the record (replace-one) or of the
        category that changes (add/remove).
    linf_sensitivity : array_like, default 1.0
        Weight Δ∞ > 0 of one record in its category (1 for counts).
    neighbours : {"replace-one", "add-remove"}
    alpha_to : array_like, optional
        Replace-one only: concentration of the category that receives the record (default
        ``alpha``).
    conservative : bool, default True
        Add a rigorous bound on the floating-point error, so that the returned value is never
        below the exact one (evaluated for the given float inputs): for every log Γ term the
        rounding of its argument α + c·s (at most 5u(α + |c|s), u = 2⁻⁵³, propagated through
        max |ψ| on the interval it may lie in), the error of ``scipy.special.gammaln``
        (at most 16u(|log Γ(x)| + |xψ(x)|); measured worst case 5.7u against mpmath) and 8u·Σ|cₖ
        log Γ| for the products and sums; the result is then rounded up. Where an argument's
        interval reaches 0 (α within rounding of (λ−1)s) the value is ``inf``.

    Returns
    -------
    numpy.ndarray
        ε*(λ) of the broadcast shape; ``inf`` where α′ ≤ (λ−1)s (replace-one) or α ≤ (λ−1)s.
    """
    check_neighbours(neighbours)
    _, lam_s, finite, s, al, al_to = _prepare(orders, r, alpha, linf_sensitivity, alpha_to)
    y = al_to if neighbours == "replace-one" else al
    valid = finite & (y > (lam_s - 1.0) * s)
    y_safe = np.where(valid, y, (lam_s - 1.0) * s + 1.0)
    a_val, a_err, a_lost = _a_term(al, s, lam_s)
    b_val, b_err, b_lost = _b_term(y_safe, s, lam_s)
    if neighbours == "replace-one":
        eps = _finish(a_val + b_val, a_err + b_err, lam_s, conservative)
    else:
        eps = np.maximum(
            _finish(a_val, a_err, lam_s, conservative), _finish(b_val, b_err, lam_s, conservative)
        )
    if conservative:
        valid = valid & ~a_lost & ~b_lost
    return np.asarray(np.where(valid, eps, np.inf), dtype=np.float64)
