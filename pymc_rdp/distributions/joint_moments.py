"""The first and second moments of a Bayesian network's stacked family indicators, and their Ops.

``family_moments`` gives ``(Qp, Q diag(p) Qᵀ)`` from the CPTs, numerically or as a PyTensor graph.
For symbolic CPTs the contractions are recorded once on a :class:`~pymc_rdp.bn.elimination.Tape`
(:class:`MomentsPlan`) and replayed in numpy by one Op, with a second Op for the reverse-mode
replay (the vector-Jacobian product); both run under numba's object mode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from pymc_rdp.bn.elimination import JunctionTree, Tape, enumeration_marginals, is_symbolic
from pymc_rdp.distributions._numba_fallback import register_object_mode
from pymc_rdp.distributions.joint_layout import (
    FamilyLayout,
    check_cpts,
    family_layout,
    resolve_method,
)

__all__ = ["FamilyMomentsOp", "MomentsPlan", "family_moments"]

_GRAPHS = ("auto", "ops", "tape")


def family_moments(
    structure: Any,
    cardinalities: Mapping[str, int],
    cpts: Mapping[str, Any],
    method: Literal["auto", "enumeration", "junction_tree"] = "auto",
    layout: FamilyLayout | None = None,
    graph: Literal["auto", "ops", "tape"] = "auto",
) -> tuple[Any, Any]:
    """First and second moments of the stacked family indicators, ``Qp`` and ``Q diag(p) Qᵀ``.

    For one record ``x`` drawn from the network let ``φ(x)`` stack the one-hot indicators of the
    joint state of every family ``F_v = (pa(v)..., v)``. Then

    .. math:: \\mathrm{mean} = E[φ] = Qp = (P(F_v))_v, \\qquad
              \\mathrm{second} = E[φφ^\\top] = Q\\,\\mathrm{diag}(p)\\,Q^\\top,

    whose block ``(a, b)`` is ``P(F_a = u, F_b = w)`` (zero where ``u``, ``w`` disagree on a
    shared node). With ``N`` records the family tables have mean ``N · mean`` and covariance
    ``N (second − mean meanᵀ)`` (multinomial moments of linear queries).

    Parameters
    ----------
    structure : dict, networkx.DiGraph, pgmpy model or NetworkStructure
        The DAG (see :func:`pymc_rdp.bn.structure.parse_structure`).
    cardinalities : dict
        ``node -> number of states``.
    cpts : dict
        ``node -> table of shape (parent configurations, states)``: numpy arrays (numeric result)
        or PyTensor tensors (a symbolic graph). Parent configurations are row-major over the
        parents in the structure's order (first parent slowest), as in
        :class:`pymc_rdp.BayesianNetwork` and pgmpy's ``TabularCPD`` columns.
    method : {"auto", "enumeration", "junction_tree"}
        ``"auto"`` enumerates networks with at most 4096 joint states.
    layout : FamilyLayout, optional
        A precomputed :func:`family_layout` of the same network.
    graph : {"auto", "ops", "tape"}
        Symbolic CPTs only. ``"ops"``: every contraction is a PyTensor operation (fast to run,
        but the graph has thousands of nodes for mid-sized networks and takes minutes to
        compile). ``"tape"``: one Op (:class:`FamilyMomentsOp`) that replays the recorded
        contractions in numpy, with a second Op for their reverse-mode gradient; it compiles in
        seconds for any network. ``"auto"``: ``"tape"`` (measured end to end, compile
        included, it is the faster choice from asia upwards).

    Returns
    -------
    mean : array or tensor, shape (M,)
    second : array or tensor, shape (M, M)
        ``M`` is the total number of family cells; families in topological order
        (``layout.structure.order``), cells row-major within a family.
    """
    if layout is None:
        layout = family_layout(structure, cardinalities)
    cpts = check_cpts(layout, cpts)
    method = resolve_method(layout, method)
    symbolic = any(is_symbolic(t) for t in cpts.values())
    if graph not in _GRAPHS:
        raise ValueError(f"graph must be one of {_GRAPHS}, got {graph!r}")
    if symbolic and graph != "ops":
        op = FamilyMomentsOp(_moments_plan(layout, method))
        return op(*[cpts[v] for v in layout.structure.order])
    if method == "enumeration":
        pieces = enumeration_marginals(layout.structure, layout.cards, cpts, layout.unions)
    else:
        tree = JunctionTree(layout.structure, layout.cards)
        pieces = tree.pairwise_marginals(cpts, layout.pairs, layout.unions)
    if symbolic:
        import pytensor.tensor as pt

        flat = pt.concatenate([pt.reshape(t, (-1,)) for t in pieces] + [pt.as_tensor(np.zeros(1))])
        second = flat[layout.gather]
        mean = flat[layout.diag_index]
        return mean, second
    flat = np.concatenate([np.reshape(t, -1) for t in pieces] + [np.zeros(1)])
    return flat[layout.diag_index], flat[layout.gather]


class MomentsPlan:
    """The recorded contractions giving ``(Qp, Q diag(p) Qᵀ)`` of one network layout."""

    def __init__(self, layout: FamilyLayout, method: str):
        self.layout = layout
        self.method = method
        tape = Tape()
        st = layout.structure
        shapes = {}
        for v, fam in zip(st.order, layout.families, strict=True):
            rows = int(np.prod([layout.cards[u] for u in fam[:-1]], dtype=np.int64))
            shapes[v] = (rows, layout.cards[v])
        refs = {v: tape.input(shapes[v]) for v in st.order}
        if method == "enumeration":
            pieces = enumeration_marginals(st, layout.cards, refs, layout.unions)
        else:
            pieces = JunctionTree(st, layout.cards).pairwise_marginals(
                refs, layout.pairs, layout.unions
            )
        self.tape = tape
        self.pieces = [r.id for r in pieces]
        self.sizes = [int(np.prod(r.shape, dtype=np.int64)) for r in pieces]
        self.input_shapes = [shapes[v] for v in st.order]
        self.n_flat = int(sum(self.sizes)) + 1
        self.key = (method, tuple(st.order), tuple(layout.families), tuple(layout.cards.items()))
        self._cache: tuple[list[bytes], list[Any]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_cache"] = None
        return state

    def registers(self, inputs: Sequence[np.ndarray]) -> list[Any]:
        """The forward registers (the last evaluation is cached: logp and gradient share it)."""
        key = [np.asarray(x).tobytes() for x in inputs]
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        regs = self.tape.forward([np.asarray(x, dtype=np.float64) for x in inputs])
        self._cache = (key, regs)
        return regs

    def moments(self, inputs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        regs = self.registers(inputs)
        flat = np.concatenate([np.reshape(regs[i], -1) for i in self.pieces] + [np.zeros(1)])
        return flat[self.layout.diag_index], flat[self.layout.gather]

    def vjp(
        self, inputs: Sequence[np.ndarray], g_mean: np.ndarray, g_second: np.ndarray
    ) -> list[np.ndarray]:
        regs = self.registers(inputs)
        lay = self.layout
        flat_bar = np.bincount(lay.gather.ravel(), weights=g_second.ravel(), minlength=self.n_flat)
        flat_bar += np.bincount(lay.diag_index, weights=g_mean, minlength=self.n_flat)
        seeds = {}
        start = 0
        for rid, size in zip(self.pieces, self.sizes, strict=True):
            seeds[rid] = flat_bar[start : start + size].reshape(self.tape.shapes[rid])
            start += size
        return self.tape.backward(regs, seeds)


_PLANS: dict[tuple, MomentsPlan] = {}


def _moments_plan(layout: FamilyLayout, method: str) -> MomentsPlan:
    key = (
        method,
        tuple(layout.structure.order),
        tuple(layout.families),
        tuple(layout.cards.items()),
    )
    if key not in _PLANS:
        _PLANS[key] = MomentsPlan(layout, method)
    return _PLANS[key]


def _moments_ops() -> tuple[type, type]:
    """The two Ops (built lazily so that importing this module does not import PyTensor)."""
    global _OPS
    if _OPS is not None:
        return _OPS
    import pytensor.tensor as pt
    from pytensor.gradient import DisconnectedType
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

    class FamilyMomentsOp(Op):
        """``(cpts...) -> (Qp, Q diag(p) Qᵀ)`` by replaying a recorded :class:`MomentsPlan`."""

        __props__ = ("key",)

        def __init__(self, plan: MomentsPlan):
            self.plan = plan
            self.key = plan.key

        def make_node(self, *cpts: Any) -> Any:
            ins = [pt.as_tensor(c, dtype="float64") for c in cpts]
            m = self.plan.layout.n_cells
            outs = [
                pt.tensor(dtype="float64", shape=(m,)),
                pt.tensor(dtype="float64", shape=(m, m)),
            ]
            return Apply(self, ins, outs)

        def perform(self, node: Any, inputs: Any, outputs: Any) -> None:
            mean, second = self.plan.moments(inputs)
            outputs[0][0] = mean
            outputs[1][0] = second

        def infer_shape(self, node: Any, shapes: Any) -> list:
            m = self.plan.layout.n_cells
            return [(m,), (m, m)]

        def pullback(self, inputs: Any, outputs: Any, cotangents: Any) -> list:
            g_mean, g_second = cotangents
            if isinstance(g_mean.type, DisconnectedType):
                g_mean = pt.zeros_like(outputs[0])
            if isinstance(g_second.type, DisconnectedType):
                g_second = pt.zeros_like(outputs[1])
            return list(FamilyMomentsGradOp(self.plan)(*inputs, g_mean, g_second))

    class FamilyMomentsGradOp(Op):
        """The vector-Jacobian product of :class:`FamilyMomentsOp` (reverse replay of the tape)."""

        __props__ = ("key",)

        def __init__(self, plan: MomentsPlan):
            self.plan = plan
            self.key = plan.key

        def make_node(self, *inputs: Any) -> Any:
            ins = [pt.as_tensor(c, dtype="float64") for c in inputs]
            outs = [pt.tensor(dtype="float64", shape=s) for s in self.plan.input_shapes]
            return Apply(self, ins, outs)

        def perform(self, node: Any, inputs: Any, outputs: Any) -> None:
            *cpts, g_mean, g_second = inputs
            for out, g in zip(outputs, self.plan.vjp(cpts, g_mean, g_second), strict=True):
                out[0] = np.ascontiguousarray(g, dtype=np.float64)

        def infer_shape(self, node: Any, shapes: Any) -> list:
            return [tuple(s) for s in self.plan.input_shapes]

    _OPS = (FamilyMomentsOp, FamilyMomentsGradOp)
    register_object_mode(_OPS)
    return _OPS


_OPS: tuple[type, type] | None = None


def FamilyMomentsOp(plan: MomentsPlan) -> Any:
    """The PyTensor Op computing the family moments from the CPTs by replaying ``plan``."""
    return _moments_ops()[0](plan)
