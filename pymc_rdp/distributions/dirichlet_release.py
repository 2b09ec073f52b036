"""``DirichletRelease`` and ``release``: the Dirichlet mechanism as a model component.

The curator declares a released parameter θ̃ ~ Dirichlet(r·counts + α) — one row, or a CPT of
rows (parent configurations × child states) — inside a ``pm.Model``. :func:`release` then makes
``k`` *exact* draws with the mechanism's own sampler (Gamma variates normalised in log space),
never MCMC: the RDP guarantee of the Dirichlet mechanism (Ponnoprat 2023, "Dirichlet Mechanism
for Differentially Private KL Divergence Minimization", Theorem 1) holds for exact draws.

Charging
--------
Each released draw costs the mechanism's curve ε(λ); ``k`` draws cost k·ε(λ) (sequential
composition, Mironov 2017 Proposition 1). A CPT is charged as ONE ledger entry, a
:class:`~pymc_rdp.privacy.mechanisms.DirichletTableMechanism` whose curve is that of the whole
table:
under add/remove neighbours one record touches one row (the largest row cost); under replace-one
neighbours a record may also leave one row and join another, which costs a removal in the first
plus an addition in the second (Rényi divergence adds over the independent rows), so the table
costs max(maxₐ moveₐ, max_{a≠b} removeₐ + add_b). The curve is recomputed from the entry's
parameters alone.
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
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.op import Op
from pytensor.tensor.random.utils import normalize_size_param
from pytensor.tensor.sharedvar import TensorSharedVariable

from pymc_rdp.curation.release import check_count_table, check_sensitivity
from pymc_rdp.distributions.ledger import ACCOUNTANT_ATTR, LEDGER_ATTR, PrivateRandomVariable
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.mechanisms import (
    DirichletMechanism,
    DirichletTableMechanism,
    mechanism_from_dict,
)
from pymc_rdp.privacy.mechanisms.noise import declare_unsafe_noise, resolve_noise_source
from pymc_rdp.privacy.neighbours import check_neighbours

__all__ = ["DirichletRelease", "DirichletReleaseRV", "RefusedDrawError", "release"]


class RefusedDrawError(RuntimeError):
    """A forward draw of a private node would sample the mechanism from the raw counts."""


class RefuseForwardDraw(Op):
    """Identity on a DirichletRelease's concentration whose evaluation always raises.

    It guards the forward-sampling graph of :class:`DirichletReleaseRV`: ``pm.draw``,
    ``pm.sample_prior_predictive`` or a posterior predictive that re-draws the node would draw
    θ̃ ~ Dirichlet(r·counts + α) from the raw counts, a release the accountant never charged.
    The logp and the support point read the concentration directly, not through this Op.
    """

    __props__ = ("tag",)

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def make_node(self, x: Any) -> Apply:
        x = pt.as_tensor(x)
        return Apply(self, [x], [x.type()])

    def message(self) -> str:
        return (
            f"a forward draw of the DirichletRelease {self.tag!r} (pm.draw, prior or posterior "
            "predictive sampling) would draw the Dirichlet mechanism from the raw counts "
            "without charging the accountant; only pymc_rdp.release(model, draws=..., "
            "accountant=...) draws from raw data (exact draws, charged). Nothing was drawn."
        )

    def perform(self, node: Any, inputs: Any, output_storage: Any) -> None:
        raise RefusedDrawError(self.message())

    def do_constant_folding(self, fgraph: Any, node: Any) -> bool:
        return False

    def infer_shape(self, node: Any, shapes: Any) -> Any:
        return shapes


def _register_numba() -> None:
    """A compiled refusal for the numba backend (else it falls back to object mode, warning)."""
    try:
        from pytensor.link.numba.dispatch.basic import numba_funcify, numba_njit
    except ImportError:  # pragma: no cover - numba is optional for pytensor
        return

    @numba_funcify.register(RefuseForwardDraw)
    def _numba_refuse(op: RefuseForwardDraw, node: Any = None, **kwargs: Any) -> Any:
        msg = op.message()

        @numba_njit
        def refuse(x: Any) -> Any:  # pragma: no cover - compiled
            if x.size >= 0:  # always: the branch only lets numba type the output as x's
                raise RefusedDrawError(msg)
            return x

        return refuse


_register_numba()


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
        # forward draws are refused: the concentration holds the raw counts
        guarded = RefuseForwardDraw(str(json.loads(record).get("tag")))(concentration)
        next_rng, theta = pt.random.dirichlet(guarded, size=size, rng=rng, return_next_rng=True)
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
    refuses models with a free ``DirichletRelease``, and forward draws (``pm.draw``,
    ``pm.sample_prior_predictive``, a posterior predictive that re-draws the node) raise
    :class:`RefusedDrawError` before anything is drawn: they would sample the mechanism from the
    raw counts without a charge.
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
        check_neighbours(neighbours)
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


def _charges(nodes: list[dict[str, Any]], draws: int) -> list[dict[str, Any]]:
    """The accountant calls for every node: one entry per node (a CPT as one table release)."""
    calls = []
    for node in nodes:
        mech: DirichletMechanism = node["mechanism"]
        if node["rows"] is not None:
            # the exact analysis is for the mechanism's own relation (its sensitivities match
            # it); Theorem 1 only needs the sensitivities to cover the node's relation
            nb = mech.neighbours if mech.analysis == "exact" else node["neighbours"]
            mech = DirichletTableMechanism.from_mechanism(mech, node["rows"], neighbours=nb)
        calls.append({"mechanism": mech, "count": draws, "tag": node["tag"]})
    return calls


def release(
    model: pm.Model | None = None,
    draws: int = 1,
    *,
    accountant: Accountant,
    noise_source: Any = None,
    var_names: list[str] | None = None,
    random_seed: Any = None,
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
    noise_source : None or NoiseSource
        ``None`` (default): randomness from the operating system's entropy.
        ``pmr.UnsafeNoiseSeed(k)``: reproducible draws, **not private**; the ledger records an
        ``"unsafe_noise"`` declaration outside the guarantee. An int or a NumPy generator is
        refused (TypeError).
    var_names : list of str, optional
        Release only these nodes (default: every DirichletRelease of the model).
    random_seed : None
        Not accepted: a release involves no MCMC, and its randomness is privacy noise, which a
        user seed never steers. Any value other than ``None`` raises TypeError (use
        ``noise_source``).

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
    from pymc_rdp.distributions.ledger import ledger as model_ledger

    model = pm.modelcontext(model)
    if random_seed is not None:
        raise TypeError(
            "random_seed is not accepted by release(): the draws are privacy noise and come from "
            "OS entropy; pass noise_source=pmr.UnsafeNoiseSeed(k) for reproducible, non-private "
            "draws in tests"
        )
    source = resolve_noise_source(noise_source)
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
                "neighbours": rec["neighbours"],
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
        declare_unsafe_noise(accountant, source, f"release {node['tag']!r}")

    data_vars = {}
    dims_of = model.named_vars_to_dims
    coords: dict[str, Any] = {"chain": [0], "draw": np.arange(draws)}
    for node in nodes:
        mech = node["mechanism"]
        out = np.stack([mech.release(node["counts"], source) for _ in range(draws)])[None]
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
