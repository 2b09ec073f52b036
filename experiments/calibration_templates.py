"""Compiled model templates of the calibration study: each model structure compiled once.

Compiling a model (PyTensor's rewrites, numba for nutpie) costs more than sampling it in most
settings of ``experiments/calibration_study.py``. :class:`ModelTemplate` turns the constants in
which two builds of the same model differ (releases, N, noise scales and what is computed from
them) into shared variables; :func:`fit_nuts` samples a later build of the same structure by
setting those values, compiling a new template only on a miss. Loaded by its path (see
``_sibling`` in the study's modules).
"""

from __future__ import annotations

import time

import numpy as np


def _constants(model):
    """The model's graph as a FunctionGraph and its constants in topological order."""
    from pymc.model.fgraph import fgraph_from_model
    from pytensor.graph.basic import Constant

    fgraph, _ = fgraph_from_model(model)
    seen, consts = set(), []
    for node in fgraph.toposort():
        for i in node.inputs:
            if isinstance(i, Constant) and id(i) not in seen:
                seen.add(id(i))
                consts.append(i)
    return fgraph, consts


def _op_key(op):
    """An Op for structural comparison.

    An Op with an inner graph (a ``CustomDist``, whose class is created anew by every build of the
    model) is compared by its class name, its inner graph's Ops and constants. Left out: a privacy
    Op's ledger record (metadata) and the parameters of a free variable's
    transform (a reparametrisation, e.g. the reference cell of a log-ratio transform chosen from
    the data: the template keeps its own, which leaves the posterior unchanged).
    """
    from pymc.model.fgraph import ModelFreeRV
    from pytensor.graph.basic import Constant
    from pytensor.graph.op import HasInnerGraph

    if isinstance(op, ModelFreeRV):
        return (type(op), op.name, op.dims, type(op.transform).__name__)
    if isinstance(op, HasInnerGraph):  # e.g. a CustomDist: a new class per model build
        inner = op.fgraph.toposort()
        consts = [
            (str(i.type), np.asarray(i.data).tobytes())
            for n in inner
            for i in n.inputs
            if isinstance(i, Constant)
        ]
        return (type(op).__name__, tuple(_op_key(n.op) for n in inner), tuple(consts))
    meta = getattr(op, "_meta", None)
    if meta is None:
        return op
    return (type(op), tuple((k, repr(v)) for k, v in sorted(meta().items()) if k != "record"))


def _ops(fgraph) -> list:
    return [_op_key(node.op) for node in fgraph.toposort()]


class ModelTemplate:
    """A model compiled once, reused for every model of the same structure.

    Built from a model and a probe (the same builder at a slightly different N, ε and other
    data): the constants that differ between the two (releases, N, noise scales and what is
    computed from them) become shared variables. A later model matches if its graph has the same
    operations and agrees with the template on every other constant; it is then sampled by
    setting those shared values, without compiling again.
    """

    def __init__(self, model, probe, sampler: str):
        import pytensor
        from pymc.model.fgraph import model_from_fgraph

        fgraph, consts = _constants(model)
        pfgraph, pconsts = _constants(probe)
        if _ops(fgraph) != _ops(pfgraph) or len(consts) != len(pconsts):
            raise ValueError("the probe model has another structure")
        self.ops = _ops(fgraph)
        self.types = [c.type for c in consts]
        self.diff = [
            i
            for i, (a, b) in enumerate(zip(consts, pconsts, strict=True))
            if a.type != b.type or not np.array_equal(a.data, b.data)
        ]
        self.fixed = {i: c.data for i, c in enumerate(consts) if i not in self.diff}
        self.shared = {}
        for i in self.diff:
            c = consts[i]
            self.shared[i] = pytensor.shared(np.array(c.data), name=f"_c{i}", shape=c.type.shape)
        fgraph.replace_all([(consts[i], v) for i, v in self.shared.items()], import_missing=True)
        self.model = model_from_fgraph(fgraph, mutate_fgraph=True)
        self.sampler = sampler
        if sampler == "nutpie":
            import nutpie

            self.compiled = nutpie.compile_pymc_model(self.model, freeze_model=False)
        else:
            import pymc as pm

            with self.model:
                self.step = pm.NUTS()

    def values(self, model) -> dict | None:
        """The shared values that make the template ``model``; None if it does not match."""
        fgraph, consts = _constants(model)
        if len(consts) != len(self.types) or [c.type for c in consts] != self.types:
            return None
        if _ops(fgraph) != self.ops:
            return None
        for i, data in self.fixed.items():
            if not np.array_equal(consts[i].data, data):
                return None
        vals = {f"_c{i}": np.asarray(consts[i].data) for i in self.diff}
        for v in model.data_vars:
            vals[v.name] = np.asarray(v.get_value())
        return vals

    def sample(self, vals: dict, draws: int, tune: int, seed: int):
        """NUTS on the template with ``vals``; returns (posterior DataTree, sampling seconds)."""
        if self.sampler == "nutpie":
            import nutpie

            compiled = self.compiled.with_data(**vals)
            t0 = time.perf_counter()
            idata = nutpie.sample(
                compiled, draws=draws, tune=tune, chains=1, seed=seed, progress_bar=False
            )
            return idata, time.perf_counter() - t0
        import pymc as pm

        for i, v in self.shared.items():
            v.set_value(vals[f"_c{i}"])
        with self.model:
            pm.set_data({k: v for k, v in vals.items() if not k.startswith("_c")})
            t0 = time.perf_counter()
            idata = pm.sample(
                draws=draws,
                tune=tune,
                chains=1,
                step=self.step,
                progressbar=False,
                compute_convergence_checks=False,
                random_seed=seed,
            )
        return idata, time.perf_counter() - t0


_TEMPLATES: dict = {}


def fit_nuts(kind: str, network: str, build, draws: int, tune: int, seed: int, sampler: str):
    """NUTS on ``build(None)`` through a matching compiled template (compiled on a miss).

    ``build(1)`` and ``build(2)`` are probes of the model: the same data with one record more and
    ε × 1.001 (and other release noise), or only other release noise (N and ε fixed).
    Returns (posterior, sampling seconds without compilation).
    """
    model = build(None)
    templates = _TEMPLATES.setdefault((kind, network, sampler), [])
    for tpl in templates:
        vals = tpl.values(model)
        if vals is not None:
            return tpl.sample(vals, draws, tune, seed)
    t0 = time.perf_counter()
    try:  # shared N, scales and releases
        tpl = ModelTemplate(model, build(1), sampler)
    except ValueError:  # the structure depends on N or ε (Laplace modes): shared releases only
        tpl = ModelTemplate(model, build(2), sampler)
    templates.append(tpl)
    print(
        f"  compiled a {kind} template for {network} ({time.perf_counter() - t0:.0f} s)", flush=True
    )
    vals = tpl.values(model)
    assert vals is not None
    return tpl.sample(vals, draws, tune, seed)
