"""The settings of a run (:class:`FitConfig`), its result (:class:`FitResult`) and the kind of
release of each mechanism (:func:`release_kind`).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np

from pymc_rdp.curation.table_budget import TABLE_MECHANISMS

__all__ = [
    "DEFAULT_DELTA",
    "DEFAULT_EPSILON",
    "INFERENCES",
    "MECHANISMS",
    "NEIGHBOURS",
    "RECORD_MECHANISMS",
    "TABLE_MECHANISM_NAMES",
    "FitConfig",
    "FitResult",
    "ReleaseKind",
    "records_conflict",
    "release_kind",
]

#: mechanisms that release each family table once
TABLE_MECHANISM_NAMES = tuple(sorted(TABLE_MECHANISMS))
#: mechanisms that release every record, randomised (one row per record; ``N`` is public)
RECORD_MECHANISMS = ("randomized_response",)
MECHANISMS = (*TABLE_MECHANISM_NAMES, *RECORD_MECHANISMS)
NEIGHBOURS = ("replace-one", "add-remove")
INFERENCES = ("auto", "noise-aware", "joint", "naive")
DEFAULT_EPSILON = 1.0
DEFAULT_DELTA = 1e-6
#: NUTS settings of a full run (the fast demo: 100, 100, 1)
_SAMPLING = {"draws": 300, "tune": 300, "chains": 2}


# ------------------------------------------------------------------------------ mechanisms


@dataclasses.dataclass(frozen=True)
class ReleaseKind:
    """What a mechanism publishes: per family table, or per record.

    Attributes
    ----------
    cpt_draw : bool
        The release is the CPT itself, one Dirichlet-mechanism draw per row (nothing to infer,
        one draw only); otherwise noisy integer counts or randomised records.
    noise : str or None
        The noise added to the counts or the records, in words (``None`` for a CPT draw).
    records : bool
        Every record's values are released, each randomised on its own (randomized response),
        instead of family tables; the rows publish their number ``N``.
    """

    cpt_draw: bool
    noise: str | None
    records: bool = False


def release_kind(mechanism: str) -> ReleaseKind:
    """The kind of release of the mechanism named ``mechanism`` (one of :data:`MECHANISMS`).

    The mechanism class describes itself (``releases_probabilities``, ``noise_label``); the
    command line only maps the word to the class
    (:data:`~pymc_rdp.curation.table_budget.TABLE_MECHANISMS`).
    """
    if mechanism in RECORD_MECHANISMS:
        return ReleaseKind(cpt_draw=False, noise="randomized response", records=True)
    cls = TABLE_MECHANISMS.get(mechanism)
    if cls is None:
        raise ValueError(f"mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    if cls.releases_probabilities:
        return ReleaseKind(cpt_draw=True, noise=None)
    return ReleaseKind(cpt_draw=False, noise=cls.noise_label)


def records_conflict(inference: str, neighbours: str, spell: Any) -> str | None:
    """What a randomized-response run cannot take, in words, or ``None``.

    ``spell(option, value)`` writes an option as its caller shows it (``--inference naive`` on
    the command line, ``inference='naive'`` in Python).
    """
    if inference not in ("auto", "noise-aware"):
        return (
            f"{spell('inference', inference)} does not apply to randomised records: "
            f"{spell('inference', 'auto')} samples their exact posterior (NUTS while the joint "
            f"states are few, else data augmentation), {spell('inference', 'noise-aware')} by NUTS"
        )
    if neighbours != "replace-one":
        fixed = spell("neighbours", "replace-one")
        return (
            f"{spell('neighbours', neighbours)} does not apply to randomized response: its rows "
            f"publish the number of records, which must be public ({fixed})"
        )
    return None


# ------------------------------------------------------------------------------ settings


def _check_positive(name: str, value: Any, integer: bool = False) -> None:
    if integer:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        return
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


@dataclasses.dataclass(frozen=True)
class FitConfig:
    """How a network is released and inferred: the settings of ``pymc-rdp fit`` and ``demo``.

    Parameters
    ----------
    mechanism : {"dirichlet", "gaussian", "laplace", "randomized_response"}
        How each family table is released: one Dirichlet-mechanism draw per CPT row (Ponnoprat,
        TMLR 2023), or exactly sampled discrete Gaussian/Laplace noise on the counts (Canonne,
        Kamath & Steinke 2020); or ``"randomized_response"``: every record's value of every
        variable randomised on its own and the records released (Kairouz, Oh & Viswanath 2016),
        which needs replace-one neighbours and a public number of records.
    epsilon : float
        Total privacy budget ε > 0.
    delta : float, optional
        δ in (0, 1) of an (ε, δ)-DP budget; default :data:`DEFAULT_DELTA` unless ``order``.
    order : float, optional
        Rényi order λ > 1 of an RDP budget ε(λ) ≤ ε instead of an (ε, δ) budget.
    neighbours : {"replace-one", "add-remove"}
        The neighbouring relation of the guarantee.
    inference : {"auto", "noise-aware", "joint", "naive"}
        Gaussian/Laplace only: ``"auto"`` samples the exact posterior given the releases by
        data augmentation (:class:`pymc_rdp.DataAugmentation`); ``"noise-aware"`` NUTS on the
        per-family model, ``"joint"`` NUTS on one likelihood of all tables; ``"naive"`` the
        clip-and-normalise CPTs. Randomised records take ``"auto"`` (data augmentation) or
        ``"noise-aware"`` (NUTS on their exact likelihood).
    draws, tune, chains : int, optional
        Sampler settings (default 300, 300, 2; the fast demo 100, 100, 1); not with
        ``inference="naive"``, which samples nothing, nor in :func:`run_fit` with the Dirichlet
        mechanism, whose released CPTs are one draw each there (the demo declares its number of
        records public and samples the release's posterior).
    time_limit : float, optional
        Data augmentation only: wall seconds after which sampling stops. Every chain finishes
        its tuning and keeps at least one draw; ``draws`` is then the most kept
        (:meth:`pymc_rdp.DataAugmentation.sample`). Not with NUTS (``inference``
        ``"noise-aware"`` or ``"joint"``), nor with ``"naive"``.
    seed : int, optional
        Seed of the posterior sampler (and of the demo's subsample), never of the privacy noise.
    unsafe_noise_seed : int, optional
        Reproducible privacy noise, for tests only: the releases are then NOT private (the
        ledger and the report say so).

    Raises
    ------
    ValueError
        A setting out of range or not applicable to the mechanism, named.
    """

    mechanism: str = "dirichlet"
    epsilon: float = DEFAULT_EPSILON
    delta: float | None = None
    order: float | None = None
    neighbours: str = "replace-one"
    inference: str = "auto"
    draws: int | None = None
    tune: int | None = None
    chains: int | None = None
    time_limit: float | None = None
    seed: int | None = None
    unsafe_noise_seed: int | None = None

    def __post_init__(self) -> None:
        for name, allowed in (
            ("mechanism", MECHANISMS),
            ("neighbours", NEIGHBOURS),
            ("inference", INFERENCES),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}"
                )
        _check_positive("epsilon", self.epsilon)
        if self.delta is not None and self.order is not None:
            raise ValueError("give delta (an (ε, δ) budget) or order (an RDP budget), not both")
        if self.delta is not None:
            _check_positive("delta", self.delta)
            if not self.delta < 1:
                raise ValueError(f"delta must lie in (0, 1), got {self.delta!r}")
        if self.order is not None:
            _check_positive("order", self.order)
            if not self.order > 1:
                raise ValueError(f"order must be > 1, got {self.order!r}")
        sampler = [k for k in ("draws", "tune", "chains") if getattr(self, k) is not None]
        for k in sampler:
            _check_positive(k, getattr(self, k), integer=True)
        if self.time_limit is not None:
            _check_positive("time_limit", self.time_limit)
            if self.inference in ("noise-aware", "joint"):
                raise ValueError(
                    f"time_limit: only data augmentation samples for a time limit; inference "
                    f"{self.inference!r} samples with NUTS"
                )
            sampler.append("time_limit")
        for k in ("seed", "unsafe_noise_seed"):
            v = getattr(self, k)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
                raise TypeError(f"{k} must be an integer, got {type(v).__name__}")
            if v is not None and v < 0:
                raise ValueError(f"{k} must be a non-negative integer, got {v!r}")
        kind = release_kind(self.mechanism)
        conflict = kind.records and records_conflict(
            self.inference, self.neighbours, lambda k, v: f"{k}={v!r}"
        )
        if conflict:
            raise ValueError(conflict)
        if kind.cpt_draw and self.inference != "auto":
            raise ValueError(
                f"inference={self.inference!r} applies only to mechanism 'gaussian' or "
                "'laplace': the Dirichlet mechanism releases the CPTs themselves"
            )
        if sampler and self.inference == "naive":
            raise ValueError(
                f"{', '.join(sampler)}: not used with inference 'naive', which samples nothing"
            )

    @property
    def budget(self) -> tuple[float, float | None, float | None]:
        """``(epsilon, order, delta)`` with the default δ applied to an (ε, δ) budget."""
        if self.order is not None:
            return float(self.epsilon), float(self.order), None
        delta = DEFAULT_DELTA if self.delta is None else float(self.delta)
        return float(self.epsilon), None, delta

    def sampling(self, fast: bool = False) -> dict[str, int]:
        """NUTS settings: the given ones, else short runs (a demo within a minute on 2 cores)."""
        base = {"draws": 100, "tune": 100, "chains": 1} if fast else _SAMPLING
        return {
            k: int(v if getattr(self, k) is None else getattr(self, k)) for k, v in base.items()
        }


@dataclasses.dataclass(frozen=True)
class FitResult:
    """What a run produced.

    Attributes
    ----------
    network : pymc_rdp.BayesianNetwork
        The fitted network: its releases, accountant, CPTs and posterior.
    idata : arviz.DataTree
        The posterior draws of every CPT (``<variable>_cpt``), the ledger in its attributes.
    summary : dict
        The facts the report states: the guarantee, the inference used, the held-out
        log-likelihood, the comparison frame of the demo, the files written.
    out : pathlib.Path or None
        The folder written, if any.
    """

    network: Any
    idata: Any
    summary: dict[str, Any]
    out: Path | None = None

    @property
    def accountant(self) -> Any:
        """The network's accountant (the privacy ledger of the run)."""
        return self.network.accountant

    @property
    def guarantee(self) -> dict[str, Any]:
        """The requested budget and what the ledger composes to."""
        return self.summary["guarantee"]

    @property
    def test_log_likelihood(self) -> float | None:
        """Mean held-out log-likelihood per scored record (``None`` without test records)."""
        return self.summary["test_log_likelihood"]
