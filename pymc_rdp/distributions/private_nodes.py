"""The private nodes of a model, and the accountant attached to a model's results.

(The *ledger* proper is the accountant's list of entries, :attr:`Accountant.ledger
<pymc_rdp.privacy.accountant.Accountant.ledger>`; this module finds the private nodes of a PyMC
model — :func:`ledger` keeps its name, ``pmr.ledger(model)`` — and carries them and the accountant
into results: :func:`sample`, :func:`attach_ledger`, :func:`read_ledger`.)

Every private node of a model (a :class:`NoisyCounts` observation of a released table, a
:class:`DirichletRelease` parameter) is a random variable whose *Op* is a
:class:`PrivateRandomVariable`. The Op instance carries a JSON record of the mechanism, its
parameters, the release tag, the neighbouring relation and the ledger entry. Model transforms
(``model.copy()``, ``clone_model``, ``pm.do``, ``pm.observe``, ``freeze_dims_and_data``) rebuild the
``Model`` object but keep the Ops of its variables, so :func:`ledger` finds every private node by
scanning ``model.basic_RVs`` — free and observed — in any transformed copy.

Results carry the ledger as JSON strings in the root ``attrs`` of the ArviZ ``DataTree``
(:data:`LEDGER_ATTR` for the model's private nodes, :data:`ACCOUNTANT_ATTR` for the accountant):
nested dictionaries cannot be stored in netCDF attributes, strings can, byte for byte.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pymc as pm
from pymc.distributions.distribution import SymbolicRandomVariable

from pymc_rdp.privacy.accountant import Accountant

__all__ = [
    "ACCOUNTANT_ATTR",
    "LEDGER_ATTR",
    "PrivateRandomVariable",
    "attach_ledger",
    "ledger",
    "read_ledger",
    "sample",
]

#: Root attribute of a DataTree holding the model's private nodes (JSON list).
LEDGER_ATTR = "pymc_rdp_ledger"
#: Root attribute of a DataTree holding the accountant (``Accountant.to_json()``).
ACCOUNTANT_ATTR = "pymc_rdp_accountant"


class PrivateRandomVariable(SymbolicRandomVariable):
    """A symbolic random variable whose Op instance carries a privacy record.

    Parameters
    ----------
    record : str
        JSON text describing the private node (mechanism, parameters, tag, relation, ...).

    Notes
    -----
    Equality and hashing include the record, so two nodes with the same graph but different
    releases are never merged by graph rewrites.
    """

    record: str = "{}"

    def __init__(self, *args: Any, record: str = "{}", **kwargs: Any) -> None:
        self.record = record
        super().__init__(*args, **kwargs)

    def _static(self) -> tuple:
        return (self.record,)

    def __eq__(self, other: object) -> bool:
        return (
            type(self) is type(other)
            and self._static() == other._static()  # type: ignore[attr-defined]
            and super().__eq__(other)
        )

    def __hash__(self) -> int:
        return hash((super().__hash__(), self._static()))

    def private_record(self) -> dict[str, Any]:
        """The record as a dictionary."""
        return json.loads(self.record)


def _model(model: pm.Model | None) -> pm.Model:
    if model is None:
        return pm.modelcontext(None)
    if not isinstance(model, pm.Model):
        raise TypeError(f"model must be a pymc.Model, got {type(model).__name__}")
    return model


def ledger(model: pm.Model | None = None) -> list[dict[str, Any]]:
    """Every private node of a model, free or observed, with its privacy record.

    Parameters
    ----------
    model : pymc.Model, optional
        Defaults to the model on the context stack.

    Returns
    -------
    list of dict
        One dictionary per private node, in the order of ``model.basic_RVs``: ``name``,
        ``observed`` (bool) and the node's record (``kind``, ``tag``, ``mechanism``,
        ``neighbours``, ...).
    """
    model = _model(model)
    observed = {id(v) for v in model.observed_RVs}
    out = []
    for rv in model.basic_RVs:
        op = rv.owner.op if rv.owner is not None else None
        if isinstance(op, PrivateRandomVariable):
            out.append({"name": rv.name, "observed": id(rv) in observed, **op.private_record()})
    return out


def _as_tree(idata: Any) -> Any:
    if not hasattr(idata, "attrs") or not hasattr(idata, "children"):
        raise TypeError(f"idata must be an xarray.DataTree, got {type(idata).__name__}")
    return idata


def attach_ledger(
    idata: Any,
    source: pm.Model | Accountant | None = None,
    *,
    model: pm.Model | None = None,
    accountant: Accountant | None = None,
) -> Any:
    """Store the privacy ledger as JSON strings in the root attrs of a DataTree.

    Parameters
    ----------
    idata : xarray.DataTree
        Modified in place and returned.
    source : pymc.Model or Accountant, optional
        Shorthand for ``model=`` or ``accountant=``.
    model : pymc.Model, optional
        Its private nodes (:func:`ledger`) go to ``attrs[LEDGER_ATTR]``.
    accountant : Accountant, optional
        ``accountant.to_json()`` goes to ``attrs[ACCOUNTANT_ATTR]``.

    Returns
    -------
    xarray.DataTree
    """
    tree = _as_tree(idata)
    if source is not None:
        if isinstance(source, pm.Model):
            if model is not None:
                raise ValueError("give the model once (positionally or as model=)")
            model = source
        elif isinstance(source, Accountant):
            if accountant is not None:
                raise ValueError("give the accountant once (positionally or as accountant=)")
            accountant = source
        else:
            raise TypeError(
                f"source must be a pymc.Model or an Accountant, got {type(source).__name__}"
            )
    if model is None and accountant is None:
        raise ValueError("nothing to attach: give a model and/or an accountant")
    if model is not None:
        tree.attrs[LEDGER_ATTR] = json.dumps(ledger(_model(model)), allow_nan=False)
    if accountant is not None:
        if not isinstance(accountant, Accountant):
            raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
        tree.attrs[ACCOUNTANT_ATTR] = accountant.to_json()
    return tree


def read_ledger(idata: Any) -> dict[str, Any]:
    """The ledger stored in a DataTree.

    Returns
    -------
    dict
        ``{"nodes": list or None, "accountant": Accountant or None}``.
    """
    tree = _as_tree(idata)
    nodes = tree.attrs.get(LEDGER_ATTR)
    acc = tree.attrs.get(ACCOUNTANT_ATTR)
    return {
        "nodes": None if nodes is None else json.loads(nodes),
        "accountant": None if acc is None else Accountant.from_json(acc),
    }


def sample(
    draws: int = 1000,
    *,
    model: pm.Model | None = None,
    accountant: Accountant | None = None,
    **kwargs: Any,
) -> Any:
    """``pm.sample`` with the privacy ledger stored in the result.

    Sampling a noise-aware posterior is post-processing of the releases: it never charges the
    accountant (whose state is only recorded). Models with a free :class:`DirichletRelease` are
    refused: the Dirichlet mechanism's guarantee is for exact draws, made and charged by
    :func:`release`, not for MCMC draws.

    Parameters
    ----------
    draws : int
        Passed to ``pm.sample``.
    model : pymc.Model, optional
        Defaults to the model on the context stack.
    accountant : Accountant, optional
        Recorded (as JSON) next to the model's ledger.
    **kwargs
        Passed to ``pm.sample`` (``tune``, ``chains``, ``random_seed``, ``nuts={...}``, ...).
        With ``nuts_sampler="nutpie"`` and no ``backend``, nutpie compiles through JAX
        (``backend="jax"``, ``compile_kwargs={"gradient_backend": "jax"}``) when jax is
        installed: its cold compile of these models takes seconds, against about a minute
        through numba (``benchmarks/bench_first_sample.py``). Pass ``backend="numba"`` to
        keep numba.

    Returns
    -------
    xarray.DataTree
        With ``attrs[LEDGER_ATTR]`` (and ``attrs[ACCOUNTANT_ATTR]`` when an accountant is given).
    """
    model = _model(model)
    free = {id(v) for v in model.free_RVs}
    for rv in model.basic_RVs:
        op = rv.owner.op
        if isinstance(op, PrivateRandomVariable) and id(rv) in free:
            if op.private_record().get("kind") == "dirichlet_release":
                raise ValueError(
                    f"model has a free DirichletRelease {rv.name!r}: its draws must be exact and "
                    "charged, use pymc_rdp.release_dirichlet(model, draws=..., accountant=...) "
                    "instead"
                )
    if accountant is not None and not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
    kwargs.setdefault("return_inferencedata", True)
    if (
        kwargs.get("nuts_sampler") == "nutpie"
        and "backend" not in kwargs
        and importlib.util.find_spec("jax") is not None
    ):
        kwargs["backend"] = "jax"
        kwargs["compile_kwargs"] = {
            "gradient_backend": "jax",
            **(kwargs.get("compile_kwargs") or {}),
        }
    idata = pm.sample(draws=draws, model=model, **kwargs)
    return attach_ledger(idata, model=model, accountant=accountant)
