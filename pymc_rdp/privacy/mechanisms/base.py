"""The common interface of every privacy mechanism, and the registry that rebuilds them.

A mechanism is a randomised function of a dataset. Its privacy is stated as a Rényi differential
privacy (RDP) curve: the mechanism M is (α, ε(α))-RDP when

    D_α(M(D) ‖ M(D′)) ≤ ε(α)   for every pair of neighbouring datasets D, D′ and every order α > 1

(Mironov 2017, "Rényi Differential Privacy", Definition 4).

Neighbours and sensitivity
--------------------------
A mechanism does not know what a "neighbouring dataset" is: that is the caller's choice (add/remove
one record, or replace one record). The caller states it through the *sensitivity* argument, the
largest change of the released query between two neighbours under the chosen relation (ℓ2 for the
Gaussian mechanism, ℓ1 for the Laplace mechanism). For a table of counts, replace-one neighbours
give Δ₁ = 2 and Δ₂ = √2, add/remove neighbours give Δ₁ = Δ₂ = 1. Randomized response has no
sensitivity argument: it privatises one record's bit, and its curve is for a change of that bit.
The curve a mechanism reports is exactly as strong as the sensitivity it was given.

Registry
--------
Every concrete subclass that defines a class attribute ``name`` is registered under that name
when the class is created, so that :func:`mechanism_from_dict` rebuilds it from ``to_dict()``.
A class can also be registered explicitly with :func:`register_mechanism`.
"""

from __future__ import annotations

import abc
import math
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from pymc_rdp._validation import (
    as_float_array,
    check_orders,
    check_positive_scalar,
    check_scalar,
)
from pymc_rdp.privacy.calibration import least_noise

__all__ = [
    "Mechanism",
    "mechanism_from_dict",
    "register_mechanism",
    "registered_mechanisms",
]

_REGISTRY: dict[str, type[Mechanism]] = {}


def register_mechanism(cls: type[Mechanism]) -> type[Mechanism]:
    """Register ``cls`` under ``cls.name`` (usable as a class decorator).

    Raises
    ------
    TypeError
        If ``cls`` is not a :class:`Mechanism` subclass or has no string ``name``.
    ValueError
        If another class is already registered under the same name.
    """
    if not (isinstance(cls, type) and issubclass(cls, Mechanism)):
        raise TypeError(f"cls must be a Mechanism subclass, got {cls!r}")
    name = cls.__dict__.get("name")
    if not isinstance(name, str) or not name:
        raise TypeError(f"cls must define a non-empty string class attribute 'name', got {name!r}")
    other = _REGISTRY.get(name)
    if other is not None and other is not cls and other.__qualname__ != cls.__qualname__:
        raise ValueError(f"name {name!r} is already registered by {other.__qualname__}")
    _REGISTRY[name] = cls
    return cls


def registered_mechanisms() -> dict[str, type[Mechanism]]:
    """A copy of the registry: mechanism name -> class."""
    return dict(_REGISTRY)


def mechanism_from_dict(d: dict[str, Any]) -> Mechanism:
    """Rebuild a mechanism from the dictionary returned by :meth:`Mechanism.to_dict`.

    Parameters
    ----------
    d : dict
        ``{"name": <registered name>, **params}``.

    Raises
    ------
    TypeError
        If ``d`` is not a dictionary.
    ValueError
        If ``d`` has no ``name`` or the name is not registered.
    """
    if not isinstance(d, dict):
        raise TypeError(f"d must be a dict as returned by Mechanism.to_dict(), got {type(d)!r}")
    if "name" not in d:
        raise ValueError("d has no 'name' key")
    name = d["name"]
    cls = _REGISTRY.get(name) if isinstance(name, str) else None
    if cls is None:
        known = ", ".join(sorted(_REGISTRY))
        raise ValueError(f"d['name'] = {name!r} is not a registered mechanism (known: {known})")
    params = {k: v for k, v in d.items() if k != "name"}
    return cls.from_params(params)


_TRUSTED_ORDERS: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


def trust_orders(orders: np.ndarray) -> np.ndarray:
    """Mark a read-only, already validated array of orders so that curves skip re-checking it."""
    if orders.flags.writeable:
        raise ValueError("only read-only arrays of orders can be trusted")
    _TRUSTED_ORDERS[id(orders)] = orders
    return orders


def resolve_orders(orders: Any) -> np.ndarray:
    """``None`` -> the package's default orders; anything else is checked (every order > 1)."""
    if orders is None:
        from pymc_rdp.privacy import rdp

        return rdp.DEFAULT_ORDERS
    if _TRUSTED_ORDERS.get(id(orders)) is orders:
        return orders
    return check_orders(orders, "orders")


class Mechanism(abc.ABC):
    """A privacy mechanism with a known RDP curve.

    Subclasses define the class attribute ``name`` (the registry key), :meth:`rdp`,
    :meth:`params` (the constructor's keyword arguments, JSON-serialisable) and :meth:`release`.
    """

    name: ClassVar[str]

    #: The norm of the query sensitivity its curve is stated for (``"l1"`` or ``"l2"``), or
    #: ``None`` for a mechanism without a sensitivity argument (randomized response, quantiles).
    sensitivity_norm: ClassVar[str | None] = None
    #: Whether it releases integer queries with exactly sampled integer noise, so that a count
    #: table may be released by it (:func:`pymc_rdp.curation.release.privatize`).
    for_counts: ClassVar[bool] = False
    #: Whether its output is a table of probabilities (rows on the simplex) rather than noisy
    #: counts; an estimator uses such a release as its parameter directly.
    releases_probabilities: ClassVar[bool] = False
    #: The noise it adds, in words, for reports (``"discrete Gaussian"``); None if not additive.
    noise_label: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            register_mechanism(cls)

    @abc.abstractmethod
    def rdp(self, orders: Any = None) -> np.ndarray:
        """The RDP curve ε(α) at ``orders`` (default: ``rdp.DEFAULT_ORDERS``), float64."""

    @abc.abstractmethod
    def params(self) -> dict[str, Any]:
        """The parameters, JSON-serialisable, such that ``type(self)(**params())`` rebuilds it."""

    @abc.abstractmethod
    def release(self, value: Any, noise_source: Any = None) -> np.ndarray:
        """Apply the mechanism to ``value``.

        ``noise_source`` is ``None`` (noise from the operating system's entropy, the only private
        choice) or a :class:`~pymc_rdp.privacy.mechanisms.noise.NoiseSource` such as
        ``UnsafeNoiseSeed(k)`` (reproducible, not private). An int seed or a NumPy generator is
        refused with a TypeError (:func:`~pymc_rdp.privacy.mechanisms.noise.resolve_noise_source`).
        """

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Mechanism:
        """Rebuild from :meth:`params` (override when the constructor differs)."""
        return cls(**params)

    @classmethod
    def batch_rdp(cls, mechanisms: list[Mechanism], orders: np.ndarray) -> np.ndarray:
        """The curves of several mechanisms of this class as rows of a 2-D array.

        The default evaluates them one by one; subclasses vectorise it.
        """
        out = np.empty((len(mechanisms), orders.size), dtype=np.float64)
        for i, m in enumerate(mechanisms):
            out[i] = m.rdp(orders)
        return out

    def sensitivity_checks(self, need: dict[str, float]) -> list[tuple[str, float, float]]:
        """``(what, have, want)`` for every sensitivity a query of sensitivities ``need`` requires.

        ``need`` maps ``"l1"``, ``"l2"`` and ``"linf"`` to the query's Δ₁, Δ₂ and Δ∞
        (:func:`pymc_rdp.curation.release.table_sensitivity` for a count table). The RDP curve
        holds for queries of at most the stated sensitivity (Mironov 2017, Propositions 6–7), so
        a caller refuses the mechanism when some ``have < want``. The default compares the
        ``sensitivity`` attribute with ``need[sensitivity_norm]``.

        Raises
        ------
        TypeError
            The mechanism has no sensitivity argument (``sensitivity_norm`` is ``None``).
        """
        norm = self.sensitivity_norm
        if norm is None:
            raise TypeError(
                f"{type(self).__name__} has no sensitivity argument: it does not release a "
                "query of bounded sensitivity such as a count table"
            )
        label = {"l1": "ℓ1", "l2": "ℓ2"}.get(norm, norm)
        return [(f"sensitivity ({label})", float(self.sensitivity), float(need[norm]))]

    def counts_refusal(self) -> str:
        """Why this mechanism may not release a count table (used when ``for_counts`` is False)."""
        return (
            "mechanism must be a DiscreteGaussianMechanism or DiscreteLaplaceMechanism (integer "
            "noise on counts, for_counts=True); the Dirichlet mechanism releases through "
            f"DirichletRelease and release_dirichlet(), got {type(self).__name__}"
        )

    def to_dict(self) -> dict[str, Any]:
        """``{"name": name, **params()}``, rebuilt by :func:`mechanism_from_dict`."""
        return {"name": self.name, **self.params()}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mechanism):
            return NotImplemented
        return type(self) is type(other) and self.params() == other.params()

    def __hash__(self) -> int:
        return hash((self.name, repr(sorted(self.params().items()))))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"


class CalibrationTarget:
    """A privacy target for ``calibrate``: ε at one order λ, or (ε, δ) through ``rdp.to_dp``.

    Exactly one of ``order`` and ``delta`` must be given. With ``delta`` the curve is converted on
    ``orders`` (default ``rdp.DEFAULT_ORDERS``) by :func:`pymc_rdp.privacy.rdp.to_dp`.
    """

    def __init__(
        self,
        epsilon: Any,
        order: Any = None,
        delta: Any = None,
        orders: Any = None,
        *,
        allow_inf_order: bool = True,
    ) -> None:
        self.epsilon = check_positive_scalar(epsilon, "epsilon")
        if (order is None) == (delta is None):
            raise ValueError(
                "give exactly one of order and delta (the target is ε at an order "
                "or an (ε, δ) pair)"
            )
        self.order: float | None = None
        self.delta: float | None = None
        if order is not None:
            lam = check_scalar(order, "order", allow_inf=True)
            if not lam > 1:
                raise ValueError(f"order must be > 1, got {lam!r}")
            if math.isinf(lam) and not allow_inf_order:
                raise ValueError("order must be finite for this mechanism (its curve is unbounded)")
            if orders is not None:
                raise ValueError("orders is only used with delta; give either order or delta")
            self.order = lam
            self.orders = np.array([lam], dtype=np.float64)
        else:
            d = check_scalar(delta, "delta")
            if not 0 < d < 1:
                raise ValueError(f"delta must lie in the open interval (0, 1), got {d!r}")
            self.delta = d
            self.orders = resolve_orders(orders).ravel()

    def value(self, curve: np.ndarray) -> float:
        """The privacy loss that the target compares with ε."""
        if self.order is not None:
            return float(curve[0])
        from pymc_rdp.privacy import rdp

        return float(rdp.to_dp(self.orders, curve, self.delta)[0])

    def met_by(self, curve: np.ndarray) -> bool:
        """Whether a curve evaluated on ``self.orders`` meets the target."""
        return self.value(curve) <= self.epsilon

    def least_gaussian_sigma(
        self, curve: Callable[[np.ndarray, float, float], np.ndarray], sensitivity: float
    ) -> float:
        """The least σ with ``curve(self.orders, σ, sensitivity)`` meeting the target.

        For curves ε(α) = αΔ₂²/(2σ²) (the Gaussian mechanism, Mironov 2017, Proposition 7, and
        the discrete Gaussian, Canonne, Kamath & Steinke 2020): at one order λ the closed form
        σ = Δ₂ √(λ/(2ε)) adjusted to the last ulp so that the curve meets ε; with δ the least σ
        by :func:`least_noise` (bisection in log σ) from Δ₂/ε.
        """

        def meets(sigma: float) -> bool:
            return self.met_by(curve(self.orders, sigma, sensitivity))

        if self.order is None:
            return least_noise(meets, sensitivity / self.epsilon)
        sigma = sensitivity * math.sqrt(self.order / (2.0 * self.epsilon))
        while not meets(sigma):
            sigma = math.nextafter(sigma, math.inf)
        while meets(down := math.nextafter(sigma, 0.0)):
            sigma = down
        return sigma


class CustomCurve(Mechanism):
    """A fixed RDP curve given on a set of orders, for charging an analysis done elsewhere.

    Parameters
    ----------
    orders : array_like
        1-D orders, each > 1 (``inf`` allowed), distinct.
    rdp : array_like
        ε at each order, ≥ 0 (``inf`` allowed), the same shape as ``orders``.
    label : str, default "custom"
        A free-form description shown in ledgers.

    Notes
    -----
    At an order α not in ``orders`` the curve is read at the smallest given order α′ ≥ α, and is
    ``inf`` above the largest: the Rényi divergence is non-decreasing in its order (van Erven &
    Harremoës 2014, "Rényi Divergence and Kullback-Leibler Divergence", Theorem 3), so
    ε(α) ≤ ε(α′) is a valid guarantee. This object records a guarantee; it releases nothing.
    """

    name: ClassVar[str] = "custom_curve"

    def __init__(self, orders: Any, rdp: Any, label: str = "custom") -> None:
        o = check_orders(orders, "orders")
        r = as_float_array(rdp, "rdp", allow_inf=True)
        if o.ndim != 1:
            raise ValueError(f"orders must be 1-D, got shape {o.shape}")
        if r.shape != o.shape:
            raise ValueError(f"rdp must have the shape of orders {o.shape}, got {r.shape}")
        if (r < 0).any():
            raise ValueError("rdp must be >= 0")
        if np.unique(o).size != o.size:
            raise ValueError("orders must be distinct")
        if not isinstance(label, str):
            raise TypeError(f"label must be a string, got {type(label)!r}")
        idx = np.argsort(o)
        self._orders = o[idx]
        self._rdp = r[idx]
        self.label = label

    @property
    def orders(self) -> np.ndarray:
        return self._orders.copy()

    def rdp(self, orders: Any = None) -> np.ndarray:
        """The curve at ``orders``: exact at given orders, else the next larger given order."""
        o = resolve_orders(orders)
        pos = np.searchsorted(self._orders, o, side="left")
        padded = np.append(self._rdp, np.inf)
        return padded[pos].astype(np.float64)

    def params(self) -> dict[str, Any]:
        return {
            "orders": [float(x) for x in self._orders],
            "rdp": [float(x) for x in self._rdp],
            "label": self.label,
        }

    def release(self, value: Any, noise_source: Any = None) -> np.ndarray:
        raise NotImplementedError("CustomCurve records a privacy guarantee and releases nothing")
