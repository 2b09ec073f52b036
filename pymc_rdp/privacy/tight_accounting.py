r"""The tightest valid (ε, δ) of a ledger: the exact Gaussian curve, the PLD bound, or RDP.

An RDP curve converted to (ε, δ) is a valid bound but not the tightest one. This module computes,
for a ledger of releases, three bounds and says which applies:

``"exact"`` (every entry a continuous Gaussian mechanism)
    A composition of Gaussian mechanisms with ℓ2 sensitivities Δᵢ, noise σᵢ and counts kᵢ is
    exactly one Gaussian mechanism with

    .. math:: \mu^2 = \sum_i k_i \Delta_i^2 / \sigma_i^2

    (Dong, Roth & Su 2019, "Gaussian Differential Privacy", Corollary 3.3: μ-GDP composes as
    √Σμᵢ²; adaptive choices included), whose privacy profile is (Balle & Wang 2018, "Improving the
    Gaussian Mechanism for Differential Privacy", Theorem 8)

    .. math:: \delta(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2)
              - e^{\varepsilon}\,\Phi(-\varepsilon/\mu - \mu/2).

    :func:`~pymc_rdp.privacy.gaussian_profile.gaussian_epsilon` (module
    :mod:`pymc_rdp.privacy.gaussian_profile`) solves δ(ε) = δ for ε (Brent's method on log δ(ε),
    evaluated in log space with ``log_ndtr``; absolute error below 1e-12, then moved up to the
    first float that meets δ).

``"pld"`` (every entry has a privacy-loss distribution: Gaussian, Laplace, binary and k-ary
randomized response, discrete Laplace with an integer sensitivity)
    The composed privacy-loss distribution of Google's dp-accounting
    (``dp_accounting.pld.privacy_loss_distribution``, Meiser & Mohammadi 2018; Koskela, Jälkö &
    Honkela 2020; the connect-the-dots discretisation of Doroshenko, Ghazi, Kamath, Kumar &
    Manurangsi 2022) with ``pessimistic_estimate=True``: every rounding moves privacy loss up, so
    the ε it returns is an upper bound. The Gaussian entries enter as one Gaussian of the μ above;
    equal non-Gaussian entries are self-composed. dp-accounting is an optional dependency
    (``pip install pymc-rdp[pld]``).

``"rdp"``
    The accountant's RDP curve converted by :func:`pymc_rdp.privacy.rdp.to_dp`; valid for every
    entry
    (Dirichlet mechanism, custom curves, the discrete Gaussian).

``"best"`` is the least of the valid bounds that apply; every one is an upper bound on the true
ε of the same composition, so their minimum is too.

Parallel groups
---------------
Entries of one group with distinct partitions touch disjoint records: a neighbouring pair
differs in one record, which lies in at most one partition of each group, so the outputs of the
other partitions have the same law under both neighbours. The privacy loss of the whole ledger
is therefore that of the sequential entries composed with *one* partition per group, the worst
choice being taken. Hence:

* exact: a partition contributes its μ²_p; the worst choice is max_p μ²_p per group (δ(ε) grows
  with μ), so μ² = μ²_seq + Σ_g max_p μ²_{g,p}. This is exact, not a bound.
* PLD: the worst choice is not always one partition for every ε. A partition p* *dominates* the
  others when μ²_{p*} ≥ μ²_p and p's non-Gaussian entries are a sub-multiset of p*'s for every p
  (a Gaussian of larger μ is a post-processing-dominating pair for a smaller one, and composing
  with more mechanisms never lowers the privacy loss); then p* stands for the group (the case of
  identical partitions, as in a network or naive-Bayes fit). Otherwise all the group's partitions
  are composed sequentially — still valid (parallel composition is never worse than sequential),
  looser, and said in the notes.

What is not covered
-------------------
* The discrete Gaussian: its RDP curve is bounded by the continuous one (Canonne, Kamath & Steinke
  2020), but its (ε, δ) profile is not in general bounded by the continuous Gaussian's, and a
  table's integer shift vector is not a single 1-D shift: it is accounted by RDP.
* Laplace with a vector query: the PLD of the 1-D Laplace at the ℓ1 sensitivity Δ₁ is used (the
  convention of dp-accounting's ``LaplaceDpEvent``); that two or three coordinates sharing Δ₁ have
  a smaller privacy profile is checked numerically in the tests, not proven here.
* More than :data:`MAX_PLD_KINDS` distinct non-Gaussian mechanisms: the PLD is not attempted
  (its cost grows with each distinct one); RDP is used and the notes say so.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from pymc_rdp.privacy.gaussian_profile import (
    check_delta_scalar,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mu,
    gaussian_sigma,
)

__all__ = [
    "MAX_PLD_KINDS",
    "METHODS",
    "PLD_INTERVAL",
    "TightEpsilon",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_mu",
    "gaussian_sigma",
    "ledger_epsilon",
    "ledger_plan",
    "planned_epsilon",
    "pld_available",
    "pld_epsilon",
    "pld_interval",
]

#: The methods of :func:`ledger_epsilon` and ``Accountant.epsilon``.
METHODS = ("best", "rdp", "pld", "exact")
#: dp-accounting's value discretisation interval (its own default), for ledgers whose RDP ε is
#: at most 2; above, it doubles with every doubling of the RDP ε (:func:`pld_interval`).
PLD_INTERVAL = 1e-4
#: Above this many distinct non-Gaussian mechanisms the PLD is not attempted.
MAX_PLD_KINDS = 16


def pld_interval(rdp_epsilon: float) -> float:
    """The PLD discretisation interval for a ledger whose RDP bound is ``rdp_epsilon``.

    1e-4 up to ε = 2, then 1e-4 · 2^⌈log₂(ε/2)⌉: the privacy loss spans a range of the order of
    ε, so the number of points, and the cost, stay bounded while the relative resolution stays
    about 1e-4. A coarser interval is still an upper bound (pessimistic rounding).
    """
    e = float(rdp_epsilon)
    if not e > 2.0:
        return PLD_INTERVAL
    if not math.isfinite(e):
        return PLD_INTERVAL * 2.0**20
    return PLD_INTERVAL * 2.0 ** min(20, math.ceil(math.log2(e / 2.0)))


_PLD_NAMES = frozenset(
    {
        "gaussian",
        "laplace",
        "randomized_response",
        "categorical_randomized_response",
        "discrete_laplace",
    }
)


def pld_available() -> bool:
    """Whether dp-accounting (the ``pld`` extra) can be imported."""
    try:
        import dp_accounting.pld  # noqa: F401
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------------------------
# what a ledger composes to


Row = tuple[str, dict[str, Any], int, Any, Any]  # (mechanism, params, count, group, partition)


@dataclass
class _Part:
    """A multiset of releases: its Gaussian μ², its PLD-able others, the names without a PLD."""

    mu2: float = 0.0
    others: Counter = field(default_factory=Counter)  # key -> count
    unsupported: set[str] = field(default_factory=set)
    non_gaussian: bool = False

    def add(self, name: str, params: dict[str, Any], count: int) -> None:
        if name == "gaussian":
            self.mu2 += count * (float(params["sensitivity"]) / float(params["sigma"])) ** 2
            return
        self.non_gaussian = True
        key = _pld_key(name, params)
        if key is None:
            self.unsupported.add(name)
        else:
            self.others[key] += count

    def union(self, other: _Part) -> None:
        self.mu2 += other.mu2
        self.others.update(other.others)
        self.unsupported |= other.unsupported
        self.non_gaussian |= other.non_gaussian

    def dominates(self, other: _Part) -> bool:
        return self.mu2 >= other.mu2 and all(self.others[k] >= c for k, c in other.others.items())


def _pld_key(name: str, params: dict[str, Any]) -> tuple | None:
    """A hashable description of a non-Gaussian mechanism that has a PLD, else None."""
    try:
        if name == "laplace":
            return ("laplace", float(params["scale"]), float(params["sensitivity"]))
        if name == "randomized_response":
            return ("randomized_response", float(params["p"]))
        if name == "categorical_randomized_response":
            return ("categorical_randomized_response", float(params["p"]), int(params["k"]))
        if name == "discrete_laplace":
            sens = float(params["sensitivity"])
            if sens != round(sens) or sens < 1:
                return None
            return ("discrete_laplace", float(params["scale"]), int(sens))
    except (KeyError, TypeError, ValueError):
        return None
    return None


@dataclass
class LedgerPlan:
    """What a ledger composes to, for the exact and PLD bounds (see the module notes)."""

    #: μ² of the Gaussian entries (parallel groups resolved as in the module notes).
    mu2: float
    #: PLD-able non-Gaussian pieces: key -> count.
    others: Counter
    #: Names of entries without a PLD.
    unsupported: set[str]
    #: Every entry is a continuous Gaussian (the exact bound applies).
    gaussian_only: bool
    #: Groups whose partitions were composed sequentially for the PLD (no dominating partition).
    sequential_groups: list[Any]
    #: μ² with every group at its worst partition (exact for Gaussian-only ledgers).
    exact_mu2: float
    #: False when the scan stopped at the first entry that rules out both exact and PLD.
    complete: bool = True


def ledger_plan(rows: Iterable[Row], *, stop_early: bool = False) -> LedgerPlan:
    """Resolve a ledger's sequential entries and parallel groups (see the module notes).

    Parameters
    ----------
    rows : iterable of (mechanism name, params, count, group, partition)
    stop_early : bool, default False
        Stop at the first entry without a PLD, or once more than :data:`MAX_PLD_KINDS` distinct
        non-Gaussian mechanisms were seen (neither exact nor PLD can apply then); the plan is
        marked ``complete=False`` and only its ``unsupported``/``others`` say why.
    """
    seq = _Part()
    groups: dict[Any, dict[Any, _Part]] = {}
    kinds: set[tuple] = set()
    for name, params, count, group, partition in rows:
        if group is None or partition is None:
            seq.add(name, params, count)
        else:
            groups.setdefault(group, {}).setdefault(partition, _Part()).add(name, params, count)
        if stop_early and name != "gaussian":
            key = _pld_key(name, params)
            if key is not None:
                kinds.add(key)
            if key is None or len(kinds) > MAX_PLD_KINDS:
                return LedgerPlan(
                    mu2=math.nan,
                    others=Counter(dict.fromkeys(kinds, 1)),
                    unsupported=set() if key is not None else {name},
                    gaussian_only=False,
                    sequential_groups=[],
                    exact_mu2=math.nan,
                    complete=False,
                )
    total = _Part()
    total.union(seq)
    exact_mu2 = seq.mu2
    sequential_groups = []
    for g, parts in groups.items():
        members = list(parts.values())
        exact_mu2 += max(p.mu2 for p in members)
        best = max(members, key=lambda p: (p.mu2, sum(p.others.values())))
        for p in members:  # names without a PLD make the whole ledger RDP-only
            total.unsupported |= p.unsupported
            total.non_gaussian |= p.non_gaussian
        if all(best.dominates(p) for p in members):
            total.mu2 += best.mu2
            total.others.update(best.others)
        else:
            sequential_groups.append(g)
            for p in members:
                total.mu2 += p.mu2
                total.others.update(p.others)
    return LedgerPlan(
        mu2=total.mu2,
        others=total.others,
        unsupported=total.unsupported,
        gaussian_only=not total.non_gaussian,
        sequential_groups=sequential_groups,
        exact_mu2=exact_mu2,
    )


# --------------------------------------------------------------------------------------------
# PLD through dp-accounting


@lru_cache(maxsize=512)
def _single_pld(key: tuple, count: int, pessimistic: bool, interval: float) -> Any:
    from dp_accounting.pld import privacy_loss_distribution as pld
    from dp_accounting.privacy_accountant import NeighboringRelation

    kind = key[0]
    common = {"pessimistic_estimate": pessimistic, "value_discretization_interval": interval}
    if kind == "gaussian_mu":
        # one Gaussian of standard deviation 1 and sensitivity μ: exactly μ-GDP
        return pld.from_gaussian_mechanism(
            standard_deviation=1.0, sensitivity=key[1], use_connect_dots=pessimistic, **common
        )
    if kind == "laplace":
        one = pld.from_laplace_mechanism(
            key[1], sensitivity=key[2], use_connect_dots=pessimistic, **common
        )
    elif kind == "randomized_response":
        # dp-accounting's noise parameter q: the bit is kept with probability 1 − q/2 = p
        one = pld.from_randomized_response(
            noise_parameter=2.0 * (1.0 - key[1]),
            num_buckets=2,
            neighboring_relation=NeighboringRelation.REPLACE_ONE,
            **common,
        )
    elif kind == "categorical_randomized_response":
        # dp-accounting's noise η: uniform over all k buckets with probability η, so the value
        # is kept with probability 1 − η (k − 1)/k = p, i.e. η = k (1 − p)/(k − 1)
        one = pld.from_randomized_response(
            noise_parameter=key[2] * (1.0 - key[1]) / (key[2] - 1),
            num_buckets=key[2],
            neighboring_relation=NeighboringRelation.REPLACE_ONE,
            **common,
        )
    elif kind == "discrete_laplace":
        # P[x] ∝ exp(−|x|/t) is dp-accounting's exp(−a|x|) with a = 1/t (rounded up: less noise)
        one = pld.from_discrete_laplace_mechanism(
            math.nextafter(1.0 / key[1], math.inf), sensitivity=key[2], **common
        )
    else:  # pragma: no cover - keys come from _pld_key
        raise ValueError(f"no PLD for {kind!r}")
    return one if count == 1 else one.self_compose(count)


def _plan_pld(plan: LedgerPlan, pessimistic: bool, interval: float) -> Any:
    pieces = []
    if plan.mu2 > 0.0:
        pieces.append(_single_pld(("gaussian_mu", math.sqrt(plan.mu2)), 1, pessimistic, interval))
    for key, count in sorted(plan.others.items(), key=repr):
        pieces.append(_single_pld(key, count, pessimistic, interval))
    if not pieces:
        return None
    out = pieces[0]
    for p in pieces[1:]:
        out = out.compose(p)
    return out


def pld_epsilon(
    rows: Iterable[Row] | LedgerPlan,
    delta: float,
    *,
    pessimistic: bool = True,
    interval: float = PLD_INTERVAL,
) -> float:
    """ε at δ of a ledger from dp-accounting's composed privacy-loss distribution.

    Parameters
    ----------
    rows : iterable of (mechanism name, params, count, group, partition), or a LedgerPlan
    delta : float
    pessimistic : bool, default True
        True: an upper bound (dp-accounting's pessimistic discretisation). False: its optimistic
        estimate, which is not a guarantee (the tests use it as a lower bound).
    interval : float
        The value discretisation interval.

    Raises
    ------
    ValueError
        If an entry has no PLD here (see the module notes).
    ImportError
        If dp-accounting is not installed (``pip install pymc-rdp[pld]``).
    """
    d = check_delta_scalar(delta)
    plan = rows if isinstance(rows, LedgerPlan) else ledger_plan(rows)
    if plan.unsupported:
        raise ValueError(
            "method='pld' needs a privacy-loss distribution for every entry; none for "
            + ", ".join(sorted(plan.unsupported))
        )
    if not pld_available():
        raise ImportError("method='pld' needs dp-accounting: pip install 'pymc-rdp[pld]'")
    composed = _plan_pld(plan, pessimistic, float(interval))
    if composed is None:
        return 0.0
    return max(0.0, float(composed.get_epsilon_for_delta(d)))


# --------------------------------------------------------------------------------------------
# the choice


@dataclass(frozen=True)
class TightEpsilon:
    """The result of :func:`ledger_epsilon`.

    Attributes
    ----------
    epsilon : float
        The bound of ``method``.
    method : {"rdp", "pld", "exact"}
        The bound used.
    delta : float
    candidates : dict
        Every bound computed, by method.
    notes : tuple of str
        Why a bound was not used, or how parallel groups were resolved.
    """

    epsilon: float
    method: str
    delta: float
    candidates: dict[str, float]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "delta": self.delta,
            "epsilon": self.epsilon,
            "method": self.method,
            "candidates": dict(self.candidates),
            "notes": list(self.notes),
        }


def _pld_kinds_ok(plan: LedgerPlan) -> bool:
    return len(plan.others) <= MAX_PLD_KINDS


def ledger_epsilon(
    rows: Iterable[Row], rdp_epsilon: float, delta: float, method: str = "best"
) -> TightEpsilon:
    """The ε of a ledger at δ by ``method``.

    Parameters
    ----------
    rows : iterable of (mechanism name, params, count, group, partition)
    rdp_epsilon : float
        The ledger's RDP bound at δ (the accountant's ``to_dp`` of its composed curve).
    delta : float
    method : {"best", "rdp", "pld", "exact"}
        "best": the least valid bound that applies (see the module notes).

    Raises
    ------
    ValueError
        An unknown method, or "exact"/"pld" for a ledger they do not cover.
    ImportError
        "pld" without dp-accounting.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    d = check_delta_scalar(delta)
    rdp_eps = float(rdp_epsilon)
    if method == "rdp":
        return TightEpsilon(rdp_eps, "rdp", d, {"rdp": rdp_eps})
    plan = ledger_plan(rows, stop_early=method == "best")
    notes: list[str] = []
    if method == "exact":
        if not plan.gaussian_only:
            raise ValueError("method='exact' needs a ledger of continuous Gaussian mechanisms only")
        eps = gaussian_epsilon(d, math.sqrt(plan.exact_mu2))
        return TightEpsilon(eps, "exact", d, {"exact": eps})
    interval = pld_interval(rdp_eps)
    if method == "pld":
        eps = pld_epsilon(plan, d, interval=interval)
        return TightEpsilon(eps, "pld", d, {"pld": eps}, _group_notes(plan))
    # best
    cands = {"rdp": rdp_eps}
    if plan.gaussian_only:
        cands["exact"] = gaussian_epsilon(d, math.sqrt(plan.exact_mu2))
    elif plan.unsupported:
        notes.append("RDP: no privacy-loss distribution for " + ", ".join(sorted(plan.unsupported)))
    elif not _pld_kinds_ok(plan):
        notes.append(
            f"RDP: more than {MAX_PLD_KINDS} distinct non-Gaussian mechanisms (the PLD is "
            "not attempted)"
        )
    elif not pld_available():
        notes.append("RDP: the PLD bound needs dp-accounting (pip install 'pymc-rdp[pld]')")
    else:
        cands["pld"] = pld_epsilon(plan, d, interval=interval)
        notes.extend(_group_notes(plan))
    best = min(cands, key=lambda k: (cands[k], k == "rdp"))
    return TightEpsilon(cands[best], best, d, cands, tuple(notes))


def _group_notes(plan: LedgerPlan) -> tuple[str, ...]:
    if not plan.sequential_groups:
        return ()
    return (
        "PLD: no partition dominates in group(s) "
        + ", ".join(repr(g) for g in plan.sequential_groups)
        + "; their partitions are composed sequentially (valid, looser)",
    )


def rows_of(entries: Iterable[Any]) -> Iterable[Row]:
    """(mechanism, params, count, group, partition) of ledger entries, lazily."""
    return ((e.mechanism, e.params, e.count, e.group, e.partition) for e in entries)


def planned_epsilon(
    plan: Sequence[tuple[Any, int]],
    delta: float,
    method: str = "best",
    orders: Any = None,
) -> float:
    """ε at δ of a plan of releases ``[(mechanism, count), ...]`` composed sequentially.

    The same computation as ``Accountant.epsilon(delta, method)`` would make after spending the
    plan (RDP on ``orders``, default ``rdp.DEFAULT_ORDERS``): calibrations use it so that what
    they return is what an accountant admits.
    """
    from pymc_rdp.privacy import rdp as _rdp

    o = _rdp.DEFAULT_ORDERS if orders is None else np.asarray(orders, dtype=np.float64)
    curve = np.zeros(o.shape)
    rows: list[Row] = []
    for mech, count in plan:
        curve = curve + np.asarray(mech.rdp(o), dtype=np.float64) * count
        rows.append((mech.name, mech.params(), int(count), None, None))
    rdp_eps = float(_rdp.to_dp(o, curve, delta)[0])
    return ledger_epsilon(rows, rdp_eps, delta, method).epsilon
