"""``DirichletRelease`` and ``release``: the Dirichlet mechanism as a model component.

The curator declares a released parameter θ̃ ~ Dirichlet(r·counts + α) — one row, or a CPT of
rows (parent configurations × child states) — inside a ``pm.Model``. :func:`release` then makes
``k`` *exact* draws with the mechanism's own sampler (Gamma variates normalised in log space),
never MCMC: the RDP guarantee of the Dirichlet mechanism (Ponnoprat 2023, "Dirichlet Mechanism
for Differentially Private KL Divergence Minimization", Theorem 1) holds for exact draws.

Charging
--------
Each released draw costs the mechanism's curve ε(λ); ``k`` draws cost k·ε(λ) (sequential
composition, Mironov 2017 Proposition 1). The rows of a CPT compose in parallel: they are charged
in one accountant *group* with one *partition* per row, so the table costs the maximum over rows;
every table of every call to :func:`release` gets a fresh group (:meth:`Accountant.new_group`),
closed once charged, so rows of two releases never merge.
Under add/remove neighbours one record touches one row, which is parallel composition proper.
Under replace-one neighbours a record may move between two rows; each of those rows then sees
an add/remove change, whose Theorem-1 cost is (λ r² · 1 / 2) ψ′(·) — half of the replace-one
curve (Δ₂² = 2) at the same Δ∞ — so the two rows together cost at most the replace-one curve of
one row, which is what the group charges.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from pymc.distributions.distribution import Distribution, _support_point
from pymc.distributions.shape_utils import implicit_size_from_params, rv_size_is_none
from pymc.logprob.abstract import _logprob
from pymc.pytensorf import normalize_rng_param
from pytensor.graph.basic import Constant
from pytensor.tensor.random.utils import normalize_size_param
from pytensor.tensor.sharedvar import TensorSharedVariable

from ..accountant import Accountant, BudgetExceededError
from ..mechanisms import DirichletMechanism, mechanism_from_dict
from ..mechanisms.base import as_generator
from .ledger import ACCOUNTANT_ATTR, LEDGER_ATTR, PrivateRandomVariable
from .release import NEIGHBOURS, check_count_table, check_sensitivity

__all__ = ["DirichletRelease", "DirichletReleaseRV", "release"]


class DirichletReleaseRV(PrivateRandomVariable):
    """The Op of a :class:`DirichletRelease` node: θ̃ ~ Dirichlet(concentration).

    Inputs: the counts (kept for :func:`release`, which draws through the mechanism) and the
    concentration r·counts + α (used by the model's logp and forward sampling).
    """

    extended_signature = "[rng],[size],(k),(k)->[rng],(k)"
    _print_name = ("DirichletRelease", "\\operatorname{DirichletRelease}")

    def rebuild_rv(self, *args: Any, **kwargs: Any) -> Any:
        return self.rv_op(*args, record=self.record, **kwargs)

    @classmethod
    def rv_op(
        cls,
        counts: Any,
        concentration: Any,
        *,
        record: str,
        size: Any = None,
        rng: Any = None,
    ) -> Any:
        counts = pt.as_tensor(counts, dtype="float64")
        concentration = pt.as_tensor(concentration, dtype="float64")
        rng = normalize_rng_param(rng)
        size = normalize_size_param(size)
        if rv_size_is_none(size):
            size = implicit_size_from_params(counts, concentration, ndims_params=cls.ndims_params)
        next_rng, theta = pt.random.dirichlet(
            concentration, size=size, rng=rng, return_next_rng=True
        )
        return cls(
            inputs=[rng, size, counts, concentration],
            outputs=[next_rng, theta],
            record=record,
        )(rng, size, counts, concentration)


@_logprob.register(DirichletReleaseRV)
def _dirichlet_release_logprob(op: DirichletReleaseRV, values: Any, *inputs: Any, **kw: Any) -> Any:
    [value] = values
    _rng, _size, _counts, conc = inputs
    return pm.logp(pm.Dirichlet.dist(conc), value)


@_support_point.register(DirichletReleaseRV)
def _dirichlet_release_support_point(op: DirichletReleaseRV, rv: Any, *inputs: Any) -> Any:
    _rng, _size, _counts, conc = inputs
    return pt.broadcast_to(conc / conc.sum(axis=-1, keepdims=True), rv.shape)


class DirichletRelease(Distribution):
    r"""A parameter released by the Dirichlet mechanism: θ̃ ~ Dirichlet(r·counts + α).

    .. math::

        \tilde\theta_j \sim \operatorname{Dirichlet}(r\, c_j + \alpha)
        \quad\text{for each row } j \text{ of the count table } c

    Parameters
    ----------
    name : str
    counts : array_like, shape (K,) or (rows, K)
        The raw (private) counts: non-negative whole numbers. The model holding them belongs to
        the curator; only the draws made by :func:`release` are published.
    mechanism : DirichletMechanism
        Its sensitivities must cover the table's under ``neighbours`` (Δ₂ = √2, Δ∞ = 1 for
        replace-one; 1 and 1 for add/remove). A mechanism with a batch of settings must have
        one setting per row.
    neighbours : {"replace-one", "add-remove"}
    tag : str, optional
        Label of the release in the ledger (default: the node's name).
    **kwargs
        Passed to :class:`pymc.Distribution` (``dims``, ...).

    Notes
    -----
    Do not draw from this node with MCMC (``pm.sample``) and publish the draws: use
    :func:`release`, which draws exactly and charges the accountant. :func:`pymc_rdp.sample`
    refuses models with a free ``DirichletRelease``.
    """

    rv_type = DirichletReleaseRV
    rv_op = DirichletReleaseRV.rv_op

    def __new__(
        cls,
        name: str,
        counts: Any,
        mechanism: DirichletMechanism,
        *,
        neighbours: str = "replace-one",
        tag: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if "observed" in kwargs and kwargs["observed"] is not None:
            raise ValueError("a DirichletRelease is released by release(), it cannot be observed")
        return super().__new__(
            cls,
            name,
            counts,
            mechanism=mechanism,
            neighbours=neighbours,
            tag=tag if tag is not None else name,
            **kwargs,
        )

    @classmethod
    def dist(
        cls,
        counts: Any,
        *,
        mechanism: DirichletMechanism,
        neighbours: str = "replace-one",
        tag: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """The unnamed distribution."""
        if not isinstance(mechanism, DirichletMechanism):
            raise TypeError(
                f"mechanism must be a DirichletMechanism, got {type(mechanism).__name__}"
            )
        if neighbours not in NEIGHBOURS:
            raise ValueError(f"neighbours must be one of {NEIGHBOURS}, got {neighbours!r}")
        c = check_count_table(counts, "counts")
        check_sensitivity(mechanism, neighbours)
        rows = 1 if c.ndim == 1 else c.shape[0]
        if mechanism.batch_shape not in ((), (rows,)) or (c.ndim == 1 and mechanism.batch_shape):
            raise ValueError(
                f"mechanism has batch shape {mechanism.batch_shape}: it must be a single setting "
                f"or one setting per row of counts ({rows} rows)"
            )
        conc = mechanism.concentration(c)
        record = json.dumps(
            {
                "kind": "dirichlet_release",
                "tag": tag,
                "mechanism": mechanism.to_dict(),
                "neighbours": neighbours,
                "rows": rows if c.ndim == 2 else None,
                "categories": int(c.shape[-1]),
            },
            allow_nan=False,
            sort_keys=True,
        )
        return super().dist([pt.constant(c), pt.constant(conc)], record=record, **kwargs)


# ---------------------------------------------------------------------------------------------
# release(): exact draws, charged
# ---------------------------------------------------------------------------------------------


def _constant_value(var: Any, what: str) -> np.ndarray:
    if isinstance(var, Constant):
        return np.asarray(var.data, dtype=np.float64)
    if isinstance(var, TensorSharedVariable):
        return np.asarray(var.get_value(), dtype=np.float64)
    raise ValueError(f"{what} must be a constant or pm.Data, got a computed expression")


def _row_mechanism(mech: DirichletMechanism, i: int) -> DirichletMechanism:
    """The setting of row ``i`` of a mechanism with one setting per row."""
    if mech.batch_shape == ():
        return mech

    def pick(a: np.ndarray, per_category: bool) -> Any:
        nb = a.ndim - (1 if per_category else 0)
        return a[i] if nb >= 1 and a.shape[0] > 1 else (a[0] if nb >= 1 else a)

    return DirichletMechanism(
        pick(mech.r, False),
        pick(mech.alpha, mech.per_category),
        pick(mech.l2_sensitivity, False),
        pick(mech.linf_sensitivity, False),
        analysis=mech.analysis,
        neighbours=mech.neighbours,
    )


def _charges(nodes: list[dict[str, Any]], draws: int) -> list[dict[str, Any]]:
    """The accountant calls for every node: one entry, or one partition per row."""
    calls = []
    for node in nodes:
        mech: DirichletMechanism = node["mechanism"]
        tag = node["tag"]
        if node["rows"] is None:
            calls.append({"mechanism": mech, "count": draws, "tag": tag})
        else:
            for i in range(node["rows"]):
                calls.append(
                    {
                        "mechanism": _row_mechanism(mech, i),
                        "count": draws,
                        "tag": f"{tag}[{i}]",
                        "group": node.get("group", tag),
                        "partition": i,
                    }
                )
    return calls


def release(
    model: pm.Model | None = None,
    draws: int = 1,
    *,
    accountant: Accountant,
    random_seed: Any = None,
    var_names: list[str] | None = None,
) -> Any:
    """Make ``draws`` exact releases of every :class:`DirichletRelease` of a model, charged.

    Parameters
    ----------
    model : pymc.Model, optional
        Defaults to the model on the context stack.
    draws : int
        Number of released draws k. Each costs the mechanism's curve; k draws cost k·ε(λ).
    accountant : Accountant
        Charged *before* anything is drawn; over budget, nothing is drawn or recorded.
    random_seed : None, int or numpy.random.Generator
    var_names : list of str, optional
        Release only these nodes (default: every DirichletRelease of the model).

    Returns
    -------
    xarray.DataTree
        A ``posterior`` group with dims (chain=1, draw=k, ...) holding the released draws, and
        the ledger in the root attrs (JSON strings, see :func:`attach_ledger`).

    Raises
    ------
    BudgetExceededError
        If the releases would exceed the budget (the ledger is unchanged).
    """
    from .ledger import ledger as model_ledger

    model = pm.modelcontext(model)
    if not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
    if isinstance(draws, (bool, np.bool_)) or not isinstance(draws, (int, np.integer)):
        raise TypeError(f"draws must be a whole number >= 1, got {draws!r}")
    if draws < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")
    nodes = []
    for rv in model.free_RVs:
        op = rv.owner.op
        if not isinstance(op, DirichletReleaseRV):
            continue
        if var_names is not None and rv.name not in var_names:
            continue
        rec = op.private_record()
        _rng, _size, counts, _conc = rv.owner.inputs
        nodes.append(
            {
                "name": rv.name,
                "rv": rv,
                "tag": rec["tag"],
                "rows": rec["rows"],
                "counts": _constant_value(counts, f"counts of {rv.name!r}"),
                "mechanism": mechanism_from_dict(rec["mechanism"]),
            }
        )
    if var_names is not None:
        missing = set(var_names) - {n["name"] for n in nodes}
        if missing:
            raise ValueError(
                f"var_names not DirichletRelease nodes of the model: {sorted(missing)}"
            )
    if not nodes:
        raise ValueError("the model has no DirichletRelease to release")
    for node in nodes:  # each CPT of this release is its own parallel group
        if node["rows"] is not None:
            node["group"] = accountant.new_group(node["tag"])
    calls = _charges(nodes, int(draws))

    # All or nothing: try the whole plan on a copy first, then charge for real.
    trial = accountant.fork()
    try:
        for call in calls:
            trial.spend(**call)
    except BudgetExceededError as exc:
        raise BudgetExceededError(
            f"releasing {draws} draw(s) of {[n['name'] for n in nodes]} would exceed the budget; "
            f"nothing was drawn ({exc})"
        ) from exc
    for call in calls:
        accountant.spend(**call)
    for node in nodes:
        if "group" in node:
            accountant.close_group(node["group"])

    gen = as_generator(random_seed)
    data_vars = {}
    dims_of = model.named_vars_to_dims
    coords: dict[str, Any] = {"chain": [0], "draw": np.arange(draws)}
    for node in nodes:
        mech = node["mechanism"]
        out = np.stack([mech.release(node["counts"], gen) for _ in range(draws)])[None]
        name = node["name"]
        dims = dims_of.get(name)
        if dims is None:
            dims = tuple(f"{name}_dim_{i}" for i in range(out.ndim - 2))
        for d, size in zip(dims, out.shape[2:], strict=True):
            if d in model.coords and model.coords[d] is not None:
                coords[d] = list(model.coords[d])
            else:
                coords.setdefault(d, np.arange(size))
        data_vars[name] = (("chain", "draw", *dims), out)
    posterior = xr.Dataset(data_vars, coords=coords)
    posterior.attrs["release_method"] = "exact draws of the Dirichlet mechanism"
    tree = xr.DataTree.from_dict({"posterior": posterior})
    tree.attrs[LEDGER_ATTR] = json.dumps(model_ledger(model), allow_nan=False)
    tree.attrs[ACCOUNTANT_ATTR] = accountant.to_json()
    return tree
