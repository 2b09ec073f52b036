"""Noise-aware log-likelihoods of privatized count tables, as PyTensor graphs.

A table of counts ``s`` (K cells, one row or a batch of rows) is released as ``y = s + w`` with
independent noise ``w_k`` in each cell (Gaussian or Laplace), possibly rounded to integers and/or
clamped at zero. These functions give log p(y | n, p) with the latent counts marginalised out:

* :func:`exact_logp` — the exact sum over every integer count vector with total ``n``
  (``s ~ Multinomial(n, p)``); feasible for small ``n`` and few cells, and the reference the other
  modes are measured against.
* :func:`convolution_logp` — cells treated as independent, each count approximated by a normal
  with its marginal moments (binomial for a known total, Poisson for a Poissonised total
  ``N ~ Poisson(μ)``), convolved in closed form with the noise of the cell: a Gaussian for
  Gaussian noise, the normal–Laplace distribution for Laplace noise.
* :func:`mvnormal_logp` — the central-limit approximation of the multinomial convolved with
  Gaussian noise, ``y ~ MvNormal(n p, n (diag p − p pᵀ) + diag σ²)`` (Bernstein & Sheldon 2018,
  "Differentially Private Bayesian Inference for Exponential Families"; Räisä et al. 2023,
  "Noise-Aware Statistical Inference with Differentially Private Synthetic Data"), in closed
  form through the Sherman–Morrison formula (linear in the cells).

Censoring
---------
A cell released rounded to an integer is interval-censored: the unrounded value lies in
``[y − ½, y + ½)``. A cell released clamped at zero with value 0 is left-censored: the unclamped
value is ``≤ 0`` (``≤ ½`` when also rounded). Every function takes the two flags ``clamped`` and
``rounded`` and replaces the noise density of such cells by the probability of the interval.

Every function here builds a graph from tensors; the NumPy helpers :func:`compositions` and
:func:`log_multinomial_coefficients` precompute the constants of the exact sum.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.compile.mode import Mode
from pytensor.graph.basic import Constant
from pytensor.graph.op import HasInnerGraph
from pytensor.graph.traversal import ancestors, graph_inputs
from pytensor.tensor.special import logsumexp
from scipy.special import gammaln

__all__ = [
    "cell_logp",
    "compositions",
    "constant_value",
    "convolution_logp",
    "discrete_gaussian_family",
    "discrete_gaussian_log_normaliser",
    "discrete_laplace_family",
    "exact_logp",
    "laplace_family",
    "log_multinomial_coefficients",
    "mvnormal_logp",
    "normal_family",
    "normal_laplace_family",
    "normal_laplace_logcdf",
    "normal_laplace_logpdf",
    "number_of_compositions",
]

_LOG_2PI = math.log(2.0 * math.pi)
_LOG_HALF = math.log(0.5)
_LOG_QUARTER = math.log(0.25)
_SQRT2 = math.sqrt(2.0)

#: A symmetric noise family: (log density at z, log CDF at z for z ≤ 0, a width W such that
#: F(z − W) / F(z) < 1e-26 for every z — standing in for −∞ in left-censored intervals).
Family = tuple[Callable[[Any], Any], Callable[[Any], Any], Any]


def _f64(x: Any) -> Any:
    """A float64 tensor: Python scalars would otherwise become float32/int8 constants."""
    if isinstance(x, pt.Variable):
        return x if x.dtype == "float64" else pt.cast(x, "float64")
    return pt.constant(np.asarray(x, dtype=np.float64))


def constant_value(x: Any) -> np.ndarray | None:
    """The value of ``x`` when it depends on constants alone, else ``None``.

    Such a subgraph would be constant-folded when the model is compiled, and PyTensor folds an
    inner-graph Op (its ``logsumexp``, for one) by compiling the inner graph with its C linker:
    one C module per Op on a cold cache, about a second each. Evaluated here by each Op's Python
    code instead (no rewrites, no C), and only for graphs without inner-graph Ops.
    """
    if not isinstance(x, pt.Variable):
        return np.asarray(x, dtype=np.float64)
    if isinstance(x, Constant):
        return np.asarray(x.data)
    if not all(isinstance(v, Constant) for v in graph_inputs([x])):
        return None
    nodes = [v.owner for v in ancestors([x]) if v.owner is not None]
    if any(isinstance(node.op, HasInnerGraph) for node in nodes):
        return None
    fn = pytensor.function([], x, mode=Mode(linker="py", optimizer=None))
    return np.asarray(fn())


def _folded(x: Any) -> Any:
    """``x`` as one constant when it depends on constants alone (see :func:`constant_value`)."""
    value = constant_value(x)
    return x if value is None else pt.constant(value.astype(x.dtype, copy=False))


# ---------------------------------------------------------------------------------------------
# Enumeration constants (NumPy)
# ---------------------------------------------------------------------------------------------


def number_of_compositions(n: int, k: int) -> int:
    """The number of vectors of ``k`` non-negative integers summing to ``n``: C(n+k−1, k−1)."""
    return math.comb(int(n) + int(k) - 1, int(k) - 1)


def compositions(n: int, k: int) -> np.ndarray:
    """Every vector of ``k`` non-negative integers summing to ``n``, as an int64 array (M, k).

    Built by "stars and bars": the cut points of ``n`` stars into ``k`` groups are the
    (k−1)-subsets of ``n + k − 1`` positions.
    """
    n = int(n)
    k = int(k)
    if n < 0 or k < 1:
        raise ValueError(f"need n >= 0 and k >= 1, got n={n}, k={k}")
    if k == 1:
        return np.array([[n]], dtype=np.int64)
    from itertools import combinations

    m = number_of_compositions(n, k)
    cuts = np.fromiter(
        (c for comb in combinations(range(n + k - 1), k - 1) for c in comb),
        dtype=np.int64,
        count=m * (k - 1),
    ).reshape(m, k - 1)
    edges = np.concatenate(
        [np.full((m, 1), -1, dtype=np.int64), cuts, np.full((m, 1), n + k - 1, dtype=np.int64)],
        axis=1,
    )
    return np.diff(edges, axis=1) - 1


def log_multinomial_coefficients(counts: np.ndarray) -> np.ndarray:
    """log(n! / Π s_k!) for each row of ``counts`` (float64)."""
    counts = np.asarray(counts, dtype=np.float64)
    return gammaln(counts.sum(axis=-1) + 1.0) - gammaln(counts + 1.0).sum(axis=-1)


# ---------------------------------------------------------------------------------------------
# Symmetric noise families: log density and log CDF on the negative half-line
# ---------------------------------------------------------------------------------------------


def _log_ndtr(x: Any) -> Any:
    """log Φ(x) in float64, stable in the lower tail (via erfcx below x = −1)."""
    x = _f64(x)
    u = x / _SQRT2
    return pt.switch(
        pt.lt(x, -1.0),
        pt.log(0.5 * pt.erfcx(-pt.minimum(u, 0.0))) - pt.sqr(pt.minimum(x, -1.0)) / 2.0,
        pt.log1p(-0.5 * pt.erfc(pt.maximum(u, -1.0 / _SQRT2))),
    )


def laplace_family(b: Any) -> Family:
    """Laplace(0, b): log f(z) = −|z|/b − log 2b; F(z) = ½ e^{z/b} for z ≤ 0."""
    b = _f64(b)

    def logpdf(z: Any) -> Any:
        return -pt.abs(z) / b - pt.log(2.0 * b)

    def logcdf_neg(z: Any) -> Any:
        return _LOG_HALF + z / b

    return logpdf, logcdf_neg, 60.0 * b


def _no_censoring(z: Any) -> Any:
    raise ValueError("censored (clamped or rounded) cells are not supported with discrete noise")


def discrete_laplace_family(t: Any) -> Family:
    """Discrete Laplace of scale t on ℤ: log q(z) = log tanh(1/(2t)) − |z|/t (z integer)."""
    t = _f64(t)

    def logpmf(z: Any) -> Any:
        return pt.log(pt.tanh(0.5 / t)) - pt.abs(z) / t

    return logpmf, _no_censoring, 60.0 * t


def discrete_gaussian_log_normaliser(sigma: Any) -> Any:
    """log Σ_{x∈ℤ} e^{−x²/(2σ²)} for σ > 0, to about 1e-16 relative.

    For σ < 1 the direct sum over |x| ≤ 12 (the omitted terms are below e^{−72}); for σ ≥ 1
    its Poisson-summation form √(2π) σ Σ_k e^{−2π²σ²k²} with |k| ≤ 3 (the omitted terms are
    below e^{−300}).
    """
    sigma = _f64(sigma)
    x = pt.constant(np.arange(-12, 13, dtype=np.float64))
    small_s = pt.minimum(sigma, 1.0)
    # the largest term is e⁰ (x = 0): the plain log of the sum is as stable as a log-sum-exp,
    # and leaves no inner-graph Op, so a known σ folds to one constant here
    direct = pt.log(pt.exp(-pt.sqr(x) / (2.0 * pt.sqr(small_s[..., None]))).sum(axis=-1))
    big_s = pt.maximum(sigma, 1.0)
    k = pt.constant(np.arange(1, 4, dtype=np.float64))
    tail = pt.exp(-2.0 * math.pi**2 * pt.sqr(big_s[..., None]) * pt.sqr(k)).sum(axis=-1)
    poisson = 0.5 * _LOG_2PI + pt.log(big_s) + pt.log1p(2.0 * tail)
    return _folded(pt.switch(pt.lt(sigma, 1.0), direct, poisson))


def discrete_gaussian_family(sigma: Any) -> Family:
    """Discrete Gaussian N_ℤ(0, σ²): log q(z) = −z²/(2σ²) − log Σ_x e^{−x²/(2σ²)}."""
    sigma = _f64(sigma)
    log_z = discrete_gaussian_log_normaliser(sigma)

    def logpmf(z: Any) -> Any:
        return -0.5 * pt.sqr(z / sigma) - log_z

    return logpmf, _no_censoring, 12.0 * sigma


def normal_family(sigma: Any) -> Family:
    """Normal(0, σ²): log density and the log CDF (stable in the lower tail)."""
    sigma = _f64(sigma)

    def logpdf(z: Any) -> Any:
        return -0.5 * pt.sqr(z / sigma) - pt.log(sigma) - 0.5 * _LOG_2PI

    def logcdf_neg(z: Any) -> Any:
        return _log_ndtr(_f64(z) / sigma)

    return logpdf, logcdf_neg, 12.0 * sigma


def _normal_laplace_terms(z: Any, v: Any, b: Any) -> tuple[Any, Any]:
    """The two log terms t₁, t₂ of the normal–Laplace density, each stable for every z.

    t₁ = v/(2b²) − z/b + log erfc(a₁),  a₁ = (v/b − z)/√(2v),
    t₂ = v/(2b²) + z/b + log erfc(a₂),  a₂ = (v/b + z)/√(2v).
    For a ≥ 0 the identity erfc(a) = erfcx(a) e^{−a²} turns each into log erfcx(a) − z²/(2v);
    for a < 0, erfc(a) ∈ (1, 2] and the direct form is used. Both branches get clipped arguments so
    that neither produces an infinity (nor a NaN gradient) where it is not selected.
    """
    z, v, b = _f64(z), _f64(v), _f64(b)
    c = pt.sqrt(2.0 * v)
    half_z2_over_v = 0.5 * pt.sqr(z) / v
    shift = 0.5 * v / pt.sqr(b)
    a1 = (v / b - z) / c
    a2 = (v / b + z) / c
    t1 = pt.switch(
        pt.ge(a1, 0.0),
        pt.log(pt.erfcx(pt.maximum(a1, 0.0))) - half_z2_over_v,
        shift - z / b + pt.log(pt.erfc(pt.minimum(a1, 0.0))),
    )
    t2 = pt.switch(
        pt.ge(a2, 0.0),
        pt.log(pt.erfcx(pt.maximum(a2, 0.0))) - half_z2_over_v,
        shift + z / b + pt.log(pt.erfc(pt.minimum(a2, 0.0))),
    )
    return t1, t2


def normal_laplace_logpdf(z: Any, v: Any, b: Any) -> Any:
    """Log density of X + W with X ~ Normal(0, v) and W ~ Laplace(0, b).

    .. math::

        f(z) = \\frac{1}{4b} e^{v/(2b^2)} \\Big[ e^{-z/b}\\,
               \\operatorname{erfc}\\Big(\\frac{v/b - z}{\\sqrt{2v}}\\Big)
             + e^{z/b}\\, \\operatorname{erfc}\\Big(\\frac{v/b + z}{\\sqrt{2v}}\\Big) \\Big]

    (the symmetric case of the normal–Laplace distribution of Reed & Jorgensen 2004, "The
    Double Pareto-Lognormal Distribution", derived by completing the square in the convolution
    integral), evaluated in log space.
    """
    t1, t2 = _normal_laplace_terms(z, v, b)
    return pt.logaddexp(t1, t2) - pt.log(4.0 * _f64(b))


def normal_laplace_logcdf(z: Any, v: Any, b: Any) -> Any:
    """Log CDF of X + W (X ~ Normal(0, v), W ~ Laplace(0, b)) for z ≤ 0.

    Conditioning on X and integrating the Laplace CDF gives

    .. math::

        F(z) = \\Phi(z/\\sqrt v) - \\tfrac12 e^{v/(2b^2) - z/b}\\,
               \\Phi\\Big(\\frac{z - v/b}{\\sqrt v}\\Big)
             + \\tfrac12 e^{v/(2b^2) + z/b}\\, \\Phi\\Big(-\\frac{z + v/b}{\\sqrt v}\\Big),

    whose last two terms are ¼ e^{t₁} and ¼ e^{t₂} with the terms of the density. For z ≤ 0 the
    sum is dominated by the positive terms, so it is computed as log(e^{A} + e^{C} − e^{B}).
    Use :func:`cell_logp` for z > 0 (it applies the symmetry F(z) = 1 − F(−z)).
    """
    t1, t2 = _normal_laplace_terms(z, v, b)
    log_a = _log_ndtr(_f64(z) / pt.sqrt(_f64(v)))
    log_pos = pt.logaddexp(log_a, _LOG_QUARTER + t2)
    log_neg = _LOG_QUARTER + t1
    return log_pos + pt.log1mexp(pt.minimum(log_neg - log_pos, -1e-300))


def normal_laplace_family(v: Any, b: Any) -> Family:
    """The normal–Laplace family (cell variance ``v``, Laplace scale ``b``)."""
    v = _f64(v)
    b = _f64(b)
    return (
        lambda z: normal_laplace_logpdf(z, v, b),
        lambda z: normal_laplace_logcdf(z, v, b),
        60.0 * (pt.sqrt(v) + b),
    )


# ---------------------------------------------------------------------------------------------
# One cell: density, interval or left-censored
# ---------------------------------------------------------------------------------------------


def _log_cdf(family: Family, z: Any) -> Any:
    """log F(z) for any z, by the symmetry F(z) = 1 − F(−z): one evaluation at −|z| ≤ 0."""
    _, logcdf_neg, _ = family
    tail = logcdf_neg(-pt.abs(z))
    return pt.switch(pt.le(z, 0.0), tail, pt.log1mexp(pt.minimum(tail, -1e-300)))


def _log_interval(family: Family, lo: Any, hi: Any) -> Any:
    """log P(lo < Z ≤ hi) for a symmetric Z and finite lo < hi, without cancellation.

    The interval is first reflected (lo, hi) → (−hi, −lo) when its centre is positive, which
    leaves the probability unchanged. Then lo < centre ≤ 0, so F(lo) ≤ ½ and
    P = F(hi) − F(lo) = F(hi) (1 − e^{log F(lo) − log F(hi)}) loses no precision.
    """
    _, logcdf_neg, _ = family
    flip = pt.gt(lo + hi, 0.0)
    lo_r = pt.switch(flip, -hi, lo)
    hi_r = pt.switch(flip, -lo, hi)
    log_hi = _log_cdf(family, hi_r)
    log_lo = logcdf_neg(pt.minimum(lo_r, 0.0))
    return log_hi + pt.log1mexp(pt.minimum(log_lo - log_hi, -1e-300))


def cell_logp(family: Family, y: Any, mean: Any, *, clamped: bool, rounded: bool) -> Any:
    """Log-likelihood of released cells ``y`` whose unrounded, unclamped value is mean + Z.

    Parameters
    ----------
    family : (logpdf, logcdf_neg)
        The symmetric distribution of Z.
    y : tensor
        Released values.
    mean : tensor
        The centre of each cell (broadcast against ``y``).
    clamped : bool
        The release was clamped at zero: a 0 means the value was ≤ 0 (≤ ½ if also rounded).
    rounded : bool
        The release was rounded to integers: a value v means the value lay in [v − ½, v + ½).

    Returns
    -------
    tensor
        Elementwise log density (uncensored cells) or log probability (censored cells).
    """
    logpdf, _, width = family
    z = y - mean
    if not clamped and not rounded:
        return logpdf(z)
    left = pt.le(y, 0.0) if clamped else None
    if rounded:
        hi = z + 0.5
        lo = z - 0.5
        if clamped:
            # (−∞, ½] for a released 0: the width W makes the lower end −∞ to 1e-26 relative
            lo = pt.switch(left, hi - width, lo)
        return _log_interval(family, lo, hi)
    return pt.switch(left, _log_cdf(family, z), logpdf(z))


# ---------------------------------------------------------------------------------------------
# Full likelihoods
# ---------------------------------------------------------------------------------------------


def _safe_xlogp(s: Any, logp_cells: Any) -> Any:
    """s · log p with 0 · log 0 = 0 (s is a non-negative integer constant)."""
    return pt.switch(pt.eq(s, 0), 0.0, s * logp_cells)


def exact_logp(
    y: Any,
    n: Any,
    p: Any,
    noise: str,
    scale: Any,
    *,
    clamped: bool = False,
    rounded: bool = False,
    k: int | None = None,
) -> Any:
    """Exact log p(y | n, p) = log Σ_s Multinomial(s; n, p) Π_k q(y_k | s_k), summed over s.

    Parameters
    ----------
    y : tensor (..., K)
        Released values; the leading axes are rows.
    n : int or array of int
        Known totals, one per row (broadcast against the rows of ``y``). Must be concrete
        integers: the set of count vectors is enumerated at graph-construction time.
    p : tensor (..., K)
        Cell probabilities of each row.
    noise : {"laplace", "gaussian", "discrete_laplace", "discrete_gaussian"}
        The noise of each cell; ``scale`` is the Laplace scale b or the Gaussian σ (for the
        discrete laws: their scale t or σ, and the cell term is the noise pmf at y − s, which
        needs integer ``y``: then the sum is the exact probability of the released table).
    scale : tensor, broadcastable to (..., K)
    clamped, rounded : bool
        Censoring of the release, see :func:`cell_logp`.
    k : int, optional
        The number of cells, when the static shapes of ``y`` and ``p`` do not say it.

    Returns
    -------
    tensor (...)
        One log-likelihood per row.

    Notes
    -----
    The sum has C(n+K−1, K−1) terms per row (stars and bars); it is evaluated with a
    log-sum-exp. Rows with different totals are grouped by total.
    """
    y = _f64(y)
    p = _f64(p)
    scale = _f64(scale)
    n_arr = np.asarray(n)
    if not np.issubdtype(n_arr.dtype, np.integer):
        if not np.all(np.equal(np.mod(n_arr, 1), 0)):
            raise ValueError("n must hold whole numbers for the exact likelihood")
        n_arr = n_arr.astype(np.int64)
    if k is None:
        k = y.type.shape[-1] if y.type.shape[-1] is not None else p.type.shape[-1]
    if k is None:
        raise ValueError("the number of cells K must be known statically for the exact likelihood")
    if scale.ndim == 0:
        scale = scale * pt.ones((k,), dtype="float64")
    families = {
        "laplace": laplace_family,
        "gaussian": normal_family,
        "discrete_laplace": discrete_laplace_family,
        "discrete_gaussian": discrete_gaussian_family,
    }
    if noise not in families:
        raise ValueError(f"noise must be one of {tuple(families)}, got {noise!r}")
    if noise.startswith("discrete") and (clamped or rounded):
        raise ValueError(
            "censored (clamped or rounded) releases are not supported with discrete noise"
        )
    family_of = families[noise]

    def one_total(total: int, y_rows: Any, p_rows: Any, scale_rows: Any) -> Any:
        states = compositions(total, k)
        s = pt.constant(states.astype(np.float64))
        log_coef = pt.constant(log_multinomial_coefficients(states))
        fam = family_of(scale_rows[..., None, :])
        cells = cell_logp(fam, y_rows[..., None, :], s, clamped=clamped, rounded=rounded)
        # the coefficients and the noise terms are known when y and the scale are: one constant
        known = _folded(log_coef + cells.sum(axis=-1))
        terms = known + _safe_xlogp(s, pt.log(p_rows[..., None, :])).sum(axis=-1)
        return logsumexp(terms, axis=-1)

    uniq = np.unique(n_arr)
    if uniq.size == 1:
        return one_total(int(uniq[0]), y, p, scale)

    # Rows with different totals: flatten the rows, evaluate each group, restore the order.
    batch_shape = n_arr.shape
    n_flat = n_arr.reshape(-1)
    rows = n_flat.size
    y2 = pt.broadcast_to(y, (*batch_shape, k)).reshape((rows, k))
    p2 = pt.broadcast_to(p, (*batch_shape, k)).reshape((rows, k))
    s2 = pt.broadcast_to(scale, (*batch_shape, k)).reshape((rows, k))
    pieces = []
    order = []
    for total in uniq:
        idx = np.flatnonzero(n_flat == total)
        order.append(idx)
        pieces.append(one_total(int(total), y2[idx], p2[idx], s2[idx]))
    inverse = np.argsort(np.concatenate(order))
    return pt.concatenate(pieces)[inverse].reshape(batch_shape)


def convolution_logp(
    y: Any,
    n: Any,
    p: Any,
    noise: str,
    scale: Any,
    *,
    poissonised: bool = False,
    clamped: bool = False,
    rounded: bool = False,
    extra_variance: Any = None,
) -> Any:
    """Per-cell log p(y | n, p) with the cells treated as independent, summed over cells.

    Each count is approximated by a normal with its marginal moments, s_k ≈ Normal(n p_k, v_k),
    and convolved in closed form with the noise of its cell:

    * known total ``n`` (``poissonised=False``): the binomial marginal, v_k = n p_k (1 − p_k);
    * Poissonised total (``poissonised=True``, ``n`` read as the mean μ of N ~ Poisson(μ)):
      v_k = μ p_k, and the cells are then exactly independent Poisson(μ p_k) counts;
    * Gaussian noise σ: y_k ~ Normal(n p_k, v_k + σ²);
    * Laplace noise b: y_k ~ NormalLaplace(n p_k, v_k, b) (:func:`normal_laplace_logpdf`).

    With a known total the cells are in truth negatively correlated (they sum to n); treating
    them as independent is accurate when the noise variance dominates the count variance
    (measured against :func:`exact_logp` in the documentation).

    ``extra_variance`` (broadcast to the cells) is added to the Gaussian variance: the scale
    mixture of Laplace noise passes the latent mixing variances ω_k there with σ = 0.

    Returns
    -------
    tensor (...)
        One log-likelihood per row (the sum over the K cells).
    """
    y = _f64(y)
    n = _f64(n)
    p = _f64(p)
    scale = _f64(scale)
    mean = n[..., None] * p if n.ndim > 0 else n * p
    var = mean if poissonised else mean * (1.0 - p)
    var = pt.maximum(var, 1e-10)
    if noise == "laplace":
        fam = normal_laplace_family(var, scale)
    elif noise == "gaussian":
        total = var + pt.sqr(scale)
        if extra_variance is not None:
            total = total + _f64(extra_variance)
        fam = normal_family(pt.sqrt(total))
    else:
        raise ValueError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
    return cell_logp(fam, y, mean, clamped=clamped, rounded=rounded).sum(axis=-1)


def mvnormal_logp(y: Any, n: Any, p: Any, variance: Any) -> Any:
    r"""log MvNormal(y; n p, n (diag p − p pᵀ) + diag(variance)), one value per row.

    The central-limit approximation of Multinomial(n, p) plus independent Gaussian noise of the
    given per-cell variance (σ², or the mixing variances ω_k of the Laplace scale mixture).
    The covariance is singular without noise (its rows sum to zero); the added variance makes it
    positive definite.

    Notes
    -----
    The covariance is a diagonal matrix minus a rank-one term, ``Σ = D − n p pᵀ`` with
    ``D = diag(n p + variance)``, so the Sherman–Morrison formula and the matrix determinant lemma
    (Golub & Van Loan 2013, "Matrix Computations", Sec. 2.1.4) give the density in O(K) per row
    instead of a Cholesky factor's O(K³):

    .. math:: \log|\Sigma| = \sum_k \log d_k + \log c, \qquad
              r^\top \Sigma^{-1} r = \sum_k r_k^2 / d_k + n\,(\textstyle\sum_k p_k r_k /
              d_k)^2 / c,

    with ``r = y − n p`` and ``c = 1 − n Σ_k p_k² / d_k``, evaluated without cancellation as
    ``c = (1 − Σ_k p_k) + Σ_k p_k v_k / d_k`` (``v`` the noise variance; ``c > 0`` whenever
    ``v > 0``).
    """
    y = _f64(y)
    p = _f64(p)
    n = _f64(n)
    n_ = n[..., None] if n.ndim > 0 else n
    mean = n_ * p
    var = _f64(variance) + pt.zeros_like(mean)
    d = mean + var
    diff = y - mean
    w = p / d
    c = (1.0 - p.sum(axis=-1)) + (w * var).sum(axis=-1)
    s = (w * diff).sum(axis=-1)
    quad = (pt.sqr(diff) / d).sum(axis=-1) + n * pt.sqr(s) / c
    log_det = pt.log(d).sum(axis=-1) + pt.log(c)
    k = pt.cast(p.shape[-1], "float64")
    return -0.5 * (quad + log_det + k * _LOG_2PI)
