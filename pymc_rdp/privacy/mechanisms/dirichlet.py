"""The Dirichlet mechanism (Ponnoprat, TMLR 2023, "Dirichlet Mechanism for Differentially Private
KL Divergence Minimization").

Release one exact draw y ~ Dirichlet(r f(x) + α) for a non-negative query f (a count vector, or a
table of count rows). With ℓ2 and ℓ∞ sensitivities Δ₂, Δ∞ of f and α the smallest concentration,
it is (λ, ε(λ))-RDP with (Theorem 1)

    ε(λ) = (λ r² Δ₂² / 2) · ψ′(α − (λ−1) r Δ∞)    where α > (λ−1) r Δ∞,   +∞ otherwise,

ψ′ the trigamma function. For count histograms the exact worst-case divergence is available
(``analysis="exact"``, see :mod:`pymc_rdp.privacy.dirichlet_divergence`); a table of rows (a CPT) is
charged as a whole by :class:`~pymc_rdp.privacy.mechanisms.DirichletTableMechanism`.

Shapes
------
A mechanism may hold a *batch* of settings (as returned by :meth:`DirichletMechanism.calibrate`
on arrays): the batch shape B is the broadcast shape of ``r``, ``l2_sensitivity`` and
``linf_sensitivity``. ``alpha`` either broadcasts to B (one concentration shared by every
category) or has exactly one more axis than B, its last axis being the categories (a concentration
per category; length 1 means shared). ``rdp(orders)`` returns shape ``B + orders.shape``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy.special import logsumexp

from pymc_rdp._validation import as_float_array, check_positive
from pymc_rdp.privacy import _kernels
from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.dirichlet_divergence import exact_histogram_rdp
from pymc_rdp.privacy.mechanisms.base import Mechanism, resolve_orders
from pymc_rdp.privacy.mechanisms.noise import resolve_noise_source
from pymc_rdp.privacy.neighbours import check_neighbours

__all__ = ["DirichletMechanism"]

ANALYSES = ("theorem1", "exact")
SCHEMES = ("paper", "fixed-alpha")
_CALIBRATION_MARGIN = 1e-14  # the numpy path solves for ε(1 − margin), then checks the curve


def check_setting(analysis: str, neighbours: str) -> None:
    """ValueError unless ``analysis`` is in ``ANALYSES`` and ``neighbours`` a known relation."""
    if analysis not in ANALYSES:
        raise ValueError(f"analysis must be one of {ANALYSES}, got {analysis!r}")
    check_neighbours(neighbours)


def _to_json(arr: np.ndarray) -> float | list:
    return float(arr) if arr.ndim == 0 else arr.tolist()


class DirichletMechanism(Mechanism):
    """Release an exact draw from Dirichlet(r·counts + α).

    Parameters
    ----------
    r : float or array_like
        Scale of the counts, finite and > 0 (an array: a batch of settings).
    alpha : float or array_like
        Concentration α > 0: shared by every category (broadcasts to the batch shape) or per
        category (one more axis than the batch, categories last). For ``calibrate(...,
        scheme="paper")`` this is α₀ + 4(λ−1) r Δ∞, the α the calibration assumed.
    l2_sensitivity, linf_sensitivity : float or array_like
        Δ₂ and Δ∞ of the counts between neighbours, finite and > 0 (a count table: √2 and 1 for
        replace-one neighbours, 1 and 1 for add/remove).
    analysis : {"theorem1", "exact"}, default "theorem1"
        The curve reported by :meth:`rdp`: Ponnoprat's Theorem 1, or the exact worst case for
        count histograms (requires Δ₂ = √2·Δ∞ for replace-one, Δ₂ = Δ∞ for add/remove; one record
        adds Δ∞ to exactly one category). The exact curve is never above Theorem 1. It is the
        curve of ONE histogram (or of each setting of a batch on its own): for a table of rows
        (a CPT), where a record may move from one row to another, use
        :class:`~pymc_rdp.privacy.mechanisms.DirichletTableMechanism`, which also charges a removal
        in
        one row plus an addition in another.
    neighbours : {"replace-one", "add-remove"}, default "replace-one"
        The neighbour relation of the exact analysis (ignored by Theorem 1, whose relation is
        encoded in the sensitivities).

    Notes
    -----
    Theorem 1 of Ponnoprat (TMLR 2023): ε(λ) = (λ r² Δ₂²/2) ψ′(α_min − (λ−1) r Δ∞), +∞ when
    α_min ≤ (λ−1) r Δ∞, α_min the smallest concentration.
    """

    name: ClassVar[str] = "dirichlet"

    def __init__(
        self,
        r: Any,
        alpha: Any,
        l2_sensitivity: Any,
        linf_sensitivity: Any,
        analysis: str = "theorem1",
        neighbours: str = "replace-one",
    ) -> None:
        check_setting(analysis, neighbours)
        self.r = check_positive(r, "r")
        self.alpha = check_positive(alpha, "alpha")
        self.l2_sensitivity = check_positive(l2_sensitivity, "l2_sensitivity")
        self.linf_sensitivity = check_positive(linf_sensitivity, "linf_sensitivity")
        self.analysis = analysis
        self.neighbours = neighbours
        try:
            self.batch_shape: tuple[int, ...] = np.broadcast_shapes(
                self.r.shape, self.l2_sensitivity.shape, self.linf_sensitivity.shape
            )
        except ValueError as exc:
            raise ValueError(
                "r, l2_sensitivity and linf_sensitivity must broadcast together, got shapes "
                f"{self.r.shape}, {self.l2_sensitivity.shape}, {self.linf_sensitivity.shape}"
            ) from exc
        nb = len(self.batch_shape)
        if self.alpha.ndim > nb + 1:
            raise ValueError(
                f"alpha has shape {self.alpha.shape}: at most one axis (categories) more than "
                f"the batch shape {self.batch_shape} of r and the sensitivities"
            )
        self.per_category = self.alpha.ndim == nb + 1
        try:
            bshape = self.alpha.shape[:-1] if self.per_category else self.alpha.shape
            self.batch_shape = np.broadcast_shapes(self.batch_shape, bshape)
        except ValueError as exc:
            raise ValueError(
                f"alpha with shape {self.alpha.shape} does not broadcast with the batch shape "
                f"{self.batch_shape} of r and the sensitivities"
            ) from exc
        if analysis == "exact":
            ratio = math.sqrt(2.0) if neighbours == "replace-one" else 1.0
            if not np.allclose(self.l2_sensitivity, ratio * self.linf_sensitivity, rtol=1e-12):
                raise ValueError(
                    f"analysis='exact' is for count histograms: with neighbours={neighbours!r} "
                    f"l2_sensitivity must equal {ratio:.6g} * linf_sensitivity"
                )

    # ------------------------------------------------------------------------------------------
    # concentrations
    # ------------------------------------------------------------------------------------------
    def _two_smallest(self) -> tuple[np.ndarray, np.ndarray]:
        """The smallest and second-smallest concentration of each setting (batch shape)."""
        if not self.per_category:
            a = np.broadcast_to(self.alpha, self.batch_shape)
            return a, a
        k = self.alpha.shape[-1]
        if k == 1:
            a = np.broadcast_to(self.alpha[..., 0], self.batch_shape)
            return a, a
        part = np.partition(self.alpha, 1, axis=-1)
        return (
            np.broadcast_to(part[..., 0], self.batch_shape),
            np.broadcast_to(part[..., 1], self.batch_shape),
        )

    @property
    def alpha_min(self) -> np.ndarray:
        """The smallest concentration of each setting (batch shape)."""
        return self._two_smallest()[0]

    # ------------------------------------------------------------------------------------------
    # privacy curve
    # ------------------------------------------------------------------------------------------
    def rdp(self, orders: Any = None) -> np.ndarray:
        """ε(λ) at ``orders`` (default ``rdp.DEFAULT_ORDERS``); ``inf`` where unbounded.

        Returns an array of shape ``batch_shape + orders.shape`` (``orders.shape`` for a single
        setting), never NaN.
        """
        lam = resolve_orders(orders)
        expand = (Ellipsis,) + (None,) * lam.ndim
        a1, a2 = self._two_smallest()
        r = np.broadcast_to(self.r, self.batch_shape)[expand]
        d2 = np.broadcast_to(self.l2_sensitivity, self.batch_shape)[expand]
        dinf = np.broadcast_to(self.linf_sensitivity, self.batch_shape)[expand]
        theorem1 = _rdp.dirichlet(lam, r, a1[expand], d2, dinf)
        if self.analysis == "theorem1":
            return np.asarray(theorem1, dtype=np.float64)
        if self.neighbours == "replace-one":
            e1 = exact_histogram_rdp(lam, r, a1[expand], dinf, alpha_to=a2[expand])
            e2 = exact_histogram_rdp(lam, r, a2[expand], dinf, alpha_to=a1[expand])
            exact = np.maximum(e1, e2)
        else:
            exact = exact_histogram_rdp(lam, r, a1[expand], dinf, neighbours="add-remove")
        return np.asarray(np.minimum(theorem1, exact), dtype=np.float64)

    @classmethod
    def batch_rdp(cls, mechanisms: list[Mechanism], orders: np.ndarray) -> np.ndarray:
        """Curves of several single-setting Theorem-1 mechanisms as rows (vectorised)."""
        simple = all(
            isinstance(m, DirichletMechanism) and m.batch_shape == () and m.analysis == "theorem1"
            for m in mechanisms
        )
        if not simple or not mechanisms:
            return super().batch_rdp(mechanisms, orders)
        col = np.asarray([[float(m.r), float(m.alpha_min)] for m in mechanisms])
        sens = np.asarray(
            [[float(m.l2_sensitivity), float(m.linf_sensitivity)] for m in mechanisms]
        )
        return np.asarray(
            _rdp.dirichlet(
                np.asarray(orders, dtype=np.float64)[None, :],
                col[:, :1],
                col[:, 1:],
                sens[:, :1],
                sens[:, 1:],
            ),
            dtype=np.float64,
        )

    def params(self) -> dict[str, Any]:
        return {
            "r": _to_json(self.r),
            "alpha": _to_json(self.alpha),
            "l2_sensitivity": _to_json(self.l2_sensitivity),
            "linf_sensitivity": _to_json(self.linf_sensitivity),
            "analysis": self.analysis,
            "neighbours": self.neighbours,
        }

    # ------------------------------------------------------------------------------------------
    # release
    # ------------------------------------------------------------------------------------------
    def concentration(self, counts: Any) -> np.ndarray:
        """r·counts + α, checked and broadcast (categories on the last axis)."""
        c = as_float_array(counts, "counts")
        if c.ndim == 0:
            raise ValueError("counts must have a category axis (shape (K,) or (rows, K))")
        if (c < 0).any():
            raise ValueError("counts must be >= 0")
        k = c.shape[-1]
        if self.per_category and self.alpha.shape[-1] not in (1, k):
            raise ValueError(
                f"counts has {k} categories but alpha has {self.alpha.shape[-1]} "
                "(its last axis is the category axis)"
            )
        alpha = self.alpha if self.per_category else self.alpha[..., None]
        r = np.broadcast_to(self.r, self.batch_shape)[..., None]
        try:
            shape = np.broadcast_shapes(r.shape, alpha.shape, c.shape)
        except ValueError as exc:
            raise ValueError(
                f"counts with shape {c.shape} does not match the mechanism's batch shape "
                f"{self.batch_shape} (plus a category axis)"
            ) from exc
        return np.broadcast_to(r * c + alpha, shape)

    def release(self, value: Any, noise_source: Any = None) -> np.ndarray:
        """One exact draw from Dirichlet(r·counts + α) per row of ``counts``.

        Gamma variates normalised in log space: for a shape a < 1,
        log G(a) = log G(a+1) + log(U)/a with U ~ Uniform(0, 1] (Marsaglia & Tsang 2000), and the
        normalisation is a log-sum-exp, so tiny concentrations (e.g. r = 1e-4, α = 1e-2) never
        give NaN, an all-zero row or a row off the simplex.

        Parameters
        ----------
        value : array_like
            ``counts``: finite, ≥ 0, shape (K,) or (rows, K) (K categories on the last axis).
        noise_source : None or NoiseSource
            ``None``: randomness from the operating system's entropy. ``UnsafeNoiseSeed(k)``:
            reproducible and **not private** (tests only). An int or a NumPy generator is
            refused (TypeError).

        Returns
        -------
        numpy.ndarray
            Draws on the simplex (rows sum to 1), float64, of the broadcast shape of ``counts``
            with the mechanism's batch shape.
        """
        source = resolve_noise_source(noise_source)
        conc = self.concentration(value)
        gen = source.generator()
        small = conc < 1.0
        shape = np.where(small, conc + 1.0, conc)
        log_g = np.log(gen.standard_gamma(shape))
        if small.any():
            u = 1.0 - gen.random(conc.shape)  # in (0, 1]
            log_g = np.where(small, log_g + np.log(u) / conc, log_g)
        theta = np.exp(log_g - logsumexp(log_g, axis=-1, keepdims=True))
        return theta / theta.sum(axis=-1, keepdims=True)

    # ------------------------------------------------------------------------------------------
    # calibration
    # ------------------------------------------------------------------------------------------
    @classmethod
    def calibrate(
        cls,
        epsilon: Any,
        order: Any,
        l2_sensitivity: Any,
        linf_sensitivity: Any,
        alpha0: Any = 1.0,
        scheme: str = "paper",
        alpha: Any = None,
    ) -> DirichletMechanism:
        """The mechanism whose Theorem-1 curve equals ε at order λ (arrays broadcast).

        ``scheme="paper"`` (Ponnoprat TMLR 2023, Algorithm 1): r solves
        (λ r² Δ₂²/2) ψ′(α₀ + 3(λ−1) r Δ∞) = ε and the mechanism samples with
        α = α₀ + 4(λ−1) r Δ∞, so its curve at λ is exactly the calibrated ε.
        ``scheme="fixed-alpha"``: α (scalar, or per category on the last axis) is kept and r
        solves (λ r² Δ₂²/2) ψ′(α_min − (λ−1) r Δ∞) = ε on 0 < r < α_min/((λ−1)Δ∞).

        The roots come from the compiled safeguarded-Newton kernel shared with
        :func:`pymc_rdp.distributions.ops.calibrate_r`, run in parallel over the broadcast settings
        (10⁶ in
        well under a second). The target is met from below: r is solved for ε(1 − 1e-14) and
        then stepped down by ulps wherever the curve at λ still exceeds ε.

        Parameters
        ----------
        epsilon : array_like
            RDP target ε > 0 at ``order``.
        order : array_like
            λ > 1, finite.
        l2_sensitivity, linf_sensitivity : array_like
            Δ₂, Δ∞ > 0.
        alpha0 : array_like, default 1.0
            Base concentration α₀ > 0 (paper scheme).
        scheme : {"paper", "fixed-alpha"}
        alpha : array_like, optional
            The fixed concentration (fixed-alpha scheme only; required there). A scalar, or an
            array whose last axis is the categories (use ``alpha[..., None]`` for one shared
            concentration per setting).

        Returns
        -------
        DirichletMechanism
            One object; ``.r`` and ``.alpha`` are arrays of the broadcast shape for array input.
        """
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
        eps = check_positive(epsilon, "epsilon")
        lam = as_float_array(order, "order")
        if (lam <= 1).any():
            raise ValueError(f"order must be > 1, got min {lam.min()!r}")
        d2 = check_positive(l2_sensitivity, "l2_sensitivity")
        dinf = check_positive(linf_sensitivity, "linf_sensitivity")
        if scheme == "paper":
            if alpha is not None:
                raise ValueError("alpha is only used with scheme='fixed-alpha' (use alpha0)")
            base = check_positive(alpha0, "alpha0")
            cat_alpha = None
        else:
            if alpha is None:
                raise ValueError("alpha is required with scheme='fixed-alpha'")
            cat_alpha = check_positive(alpha, "alpha")
            base = cat_alpha if cat_alpha.ndim == 0 else cat_alpha.min(axis=-1)
        named = {
            "epsilon": eps,
            "order": lam,
            "alpha0" if scheme == "paper" else "alpha": base,
            "l2_sensitivity": d2,
            "linf_sensitivity": dinf,
        }
        try:
            shape = np.broadcast_shapes(*(v.shape for v in named.values()))
        except ValueError as exc:
            shapes = ", ".join(f"{k} {v.shape}" for k, v in named.items())
            raise ValueError(f"the arguments do not broadcast: {shapes}") from exc
        c = _kernels.SCHEME_COEFFICIENTS[scheme]
        r = _kernels.calibrate_many(eps * (1.0 - _CALIBRATION_MARGIN), lam, base, d2, dinf, c)
        r = np.broadcast_to(r, shape).copy()
        full = {k: np.broadcast_to(v, shape) for k, v in named.items()}
        lam_f, d2_f, dinf_f, eps_f = (
            full["order"],
            full["l2_sensitivity"],
            full["linf_sensitivity"],
            full["epsilon"],
        )
        base_f = full["alpha0" if scheme == "paper" else "alpha"]
        b = (lam_f - 1.0) * dinf_f

        def sampling_alpha(rr, bb, base_):
            return base_ + 4.0 * bb * rr if scheme == "paper" else base_

        # Meet the target from below on the curve the mechanism reports (rdp.dirichlet). The
        # compiled trigamma screens out the settings that are clearly below; only the rest are
        # evaluated by rdp.dirichlet and stepped down by ulps.
        with np.errstate(invalid="ignore"):
            x = sampling_alpha(r, b, base_f) - b * r
            fast = 0.5 * lam_f * (r * d2_f) ** 2 * _kernels.trigamma_ufunc(x)
        idx = np.flatnonzero(~(fast <= eps_f * (1.0 - 0.25 * _CALIBRATION_MARGIN)))
        for step in range(60):
            if idx.size == 0:
                break
            sub = np.unravel_index(idx, shape)
            rs = r[sub]
            curve = _rdp.dirichlet(
                lam_f[sub], rs, sampling_alpha(rs, b[sub], base_f[sub]), d2_f[sub], dinf_f[sub]
            )
            bad = curve > eps_f[sub]
            idx = idx[bad]
            rs = rs[bad]
            if step < 4:
                rs = np.nextafter(rs, 0.0)
            else:
                rs = rs * (1.0 - 2.0 ** (step - 4) * 1e-16)
            r[np.unravel_index(idx, shape)] = rs
        if scheme == "paper":
            mech_alpha = sampling_alpha(r, b, base_f)
        elif cat_alpha.ndim == 0:
            mech_alpha = cat_alpha
        else:
            mech_alpha = np.broadcast_to(cat_alpha, (*shape, cat_alpha.shape[-1]))
        return cls(r if r.ndim else float(r), mech_alpha, d2, dinf)
