"""The faithful joint likelihood of a Bayesian network's noisy family tables.

Model
-----
Each of ``N`` records is one draw ``x`` of a discrete Bayesian network with joint distribution
``p`` (a function of the CPTs). The family table of node ``v`` counts the records in each joint
state of ``F_v = (pa(v)..., v)``; stacked over the ``K`` families the tables are linear queries
``Q s`` of the full joint count table ``s ~ Multinomial(N, p)``. Every cell receives independent
noise, ``y = Q s + w``. By the central limit theorem for ``s`` (the linear-query model of
Räisä et al. 2023, "Noise-aware statistical inference with differentially private synthetic
data" (NAPSU-MQ); Bernstein & Sheldon 2018, "Differentially private Bayesian inference for
exponential families") and independent Gaussian noise ``w ~ N(0, diag(σ²))``,

.. math:: y \\sim \\mathcal N\\big(N\\,Qp,\\;
          N\\,(Q\\,\\mathrm{diag}(p)\\,Q^\\top - Qp\\,p^\\top Q^\\top)
          + \\mathrm{diag}(\\sigma^2)\\big).

``Qp`` stacks the family marginals ``P(F_v)``; the block ``(a, b)`` of ``Q diag(p) Qᵀ`` is
``P(F_a = u, F_b = w)``, the marginal of the network over ``F_a ∪ F_b`` where ``u`` and ``w``
agree on the shared nodes and zero where they disagree. Unlike the per-family approximation of
:class:`pymc_rdp.BayesianNetwork` (one independent ``NoisyCounts`` term per family), this model
knows that a node's table and its parents' tables count the *same* records.

Marginals are computed exactly by :mod:`pymc_rdp.bn.elimination` (enumeration of the
joint for small networks, a min-fill junction tree with carried messages beyond). The log-density
uses a Cholesky factor of the covariance; no jitter is added: the noise variance ``σ² > 0`` makes
the covariance positive definite (``Q(diag p − ppᵀ)Qᵀ`` is positive semi-definite).

Releases of the discrete mechanisms (the default for count tables) enter with the exact variance
of their integer noise: the discrete Gaussian as Gaussian noise of that variance, the discrete
Laplace as the Laplace scale mixture below with ``E ω_k`` equal to it.

Laplace noise is not moment-matched (see the design notes): each cell's Laplace noise of scale
``b`` is written as the scale mixture ``w_k | ω_k ~ N(0, ω_k)``, ``ω_k ~ Exponential(mean 2b²)``
(Andrews & Mallows 1974; used for private inference by Bernstein & Sheldon 2018) with ``ω``
latent in the model, so that ``y | ω`` has the normal law above with ``diag(ω)`` in place of
``diag(σ²)``.

Parent configurations follow :mod:`pymc_rdp.bn.structure`: row-major over the parents in
the order the structure lists them (the first parent varies slowest), child state last, so a
family block is the table ``(parent configurations, child states)`` flattened row by row, exactly
as :class:`pymc_rdp.BayesianNetwork` releases it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from pymc_rdp._validation import check_positive
from pymc_rdp.bn.elimination import (
    MAX_ENUMERATION_STATES,
    JunctionTree,
    Tape,
    enumeration_marginals,
    is_symbolic,
)
from pymc_rdp.bn.structure import NetworkStructure, config_labels, parse_structure
from pymc_rdp.distributions.noise_models import noise_model_of

__all__ = [
    "FamilyLayout",
    "build_joint_model",
    "family_layout",
    "family_moments",
    "joint_model_from_network",
    "joint_noisy_counts_logp",
    "mvnormal_logp_chol",
]

_METHODS = ("auto", "enumeration", "junction_tree")
_GRAPHS = ("auto", "ops", "tape")
#: ``graph="auto"`` builds plain PyTensor operations up to this many family cells, a tape beyond
MAX_OPS_CELLS = 0


@dataclass(frozen=True, eq=False)
class FamilyLayout:
    """Where every family's cells sit in the stacked release vector, and how to fill the moments.

    Attributes
    ----------
    structure : NetworkStructure
    cards : dict
        ``node -> number of states``.
    families : tuple of tuple of str
        ``F_v = (*parents, v)`` for every node in topological order.
    offsets : numpy.ndarray
        int64, length ``K + 1``: family ``k`` occupies cells ``offsets[k]:offsets[k+1]``.
    pairs : list of (int, int)
        The family pairs ``a <= b`` whose joint marginal is needed.
    unions : list of tuple of str
        The nodes of ``F_a ∪ F_b`` (``F_a``'s, then ``F_b``'s new ones), the axis order of the
        pair's marginal.
    gather : numpy.ndarray
        int64 ``(M, M)``: index of every second-moment entry in the concatenated flattened pair
        marginals, or the index of an appended zero where the two cells disagree on a shared node.
    diag_index : numpy.ndarray
        int64 ``(M,)``: the first moments ``P(F_v)`` inside the same concatenation (the pairs
        ``(a, a)``).
    """

    structure: NetworkStructure
    cards: dict[str, int]
    families: tuple[tuple[str, ...], ...]
    offsets: np.ndarray
    pairs: list[tuple[int, int]]
    unions: list[tuple[str, ...]]
    gather: np.ndarray
    diag_index: np.ndarray

    @property
    def n_cells(self) -> int:
        """``M``, the total number of cells of all family tables."""
        return int(self.offsets[-1])

    @property
    def n_families(self) -> int:
        """``K``."""
        return len(self.families)

    def family_slice(self, node: str) -> slice:
        """The cells of ``node``'s family table in the stacked vector."""
        k = self.structure.order.index(node)
        return slice(int(self.offsets[k]), int(self.offsets[k + 1]))

    def joint_states(self) -> float:
        """Number of joint states of the whole network."""
        return float(np.prod([float(c) for c in self.cards.values()]))


def _structure_and_cards(
    structure: Any, cardinalities: Mapping[str, int]
) -> tuple[NetworkStructure, dict[str, int]]:
    if isinstance(structure, NetworkStructure):
        st = structure
    else:
        st, _ = parse_structure(structure)
    if not isinstance(cardinalities, Mapping):
        raise TypeError(
            f"cardinalities must be a dict node -> number of states, got {type(cardinalities)}"
        )
    missing = [v for v in st.order if v not in cardinalities]
    if missing:
        raise ValueError(f"cardinalities has no entry for the node(s) {missing}")
    cards = {}
    for v in st.order:
        c = cardinalities[v]
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
            raise ValueError(f"cardinalities[{v!r}] must be an integer >= 1, got {c!r}")
        cards[v] = int(c)
    return st, cards


def family_layout(structure: Any, cardinalities: Mapping[str, int]) -> FamilyLayout:
    """Index bookkeeping of the stacked family tables (pure numpy; build it once per network).

    Parameters
    ----------
    structure : dict, networkx.DiGraph, pgmpy model or NetworkStructure
        See :func:`pymc_rdp.bn.structure.parse_structure`.
    cardinalities : dict
        ``node -> number of states``.
    """
    st, cards = _structure_and_cards(structure, cardinalities)
    families = tuple((*st.parents[v], v) for v in st.order)
    sizes = [int(np.prod([cards[u] for u in f], dtype=np.int64)) for f in families]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    m = int(offsets[-1])
    k = len(families)
    pairs = [(a, b) for a in range(k) for b in range(a, k)]
    unions = []
    for a, b in pairs:
        fa, fb = families[a], families[b]
        unions.append((*fa, *[u for u in fb if u not in fa]))
    gather = np.empty((m, m), dtype=np.int64)
    start = 0
    diag_index = np.empty(m, dtype=np.int64)
    for (a, b), union in zip(pairs, unions, strict=True):
        fa, fb = families[a], families[b]
        ucards = [cards[u] for u in union]
        size = int(np.prod(ucards, dtype=np.int64))
        sa = np.indices([cards[u] for u in fa]).reshape(len(fa), -1)  # (|F_a| nodes, cells)
        sb = np.indices([cards[u] for u in fb]).reshape(len(fb), -1)
        coords = []
        agree = np.ones((sa.shape[1], sb.shape[1]), dtype=bool)
        for u in union:
            if u in fa:
                ca = sa[fa.index(u)][:, None]
                if u in fb:
                    agree &= ca == sb[fb.index(u)][None, :]
                coords.append(np.broadcast_to(ca, agree.shape))
            else:
                coords.append(np.broadcast_to(sb[fb.index(u)][None, :], agree.shape))
        flat = np.ravel_multi_index(tuple(coords), ucards) + start
        block = np.where(agree, flat, -1)
        ra = slice(int(offsets[a]), int(offsets[a + 1]))
        rb = slice(int(offsets[b]), int(offsets[b + 1]))
        gather[ra, rb] = block
        gather[rb, ra] = block.T
        if a == b:
            diag_index[ra] = np.diagonal(block)
        start += size
    gather[gather < 0] = start  # the appended zero
    return FamilyLayout(
        structure=st,
        cards=cards,
        families=families,
        offsets=offsets,
        pairs=pairs,
        unions=unions,
        gather=gather,
        diag_index=diag_index,
    )


def _resolve_method(layout: FamilyLayout, method: str) -> str:
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if method == "auto":
        return "enumeration" if layout.joint_states() <= MAX_ENUMERATION_STATES else "junction_tree"
    return method


def _check_cpts(layout: FamilyLayout, cpts: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(cpts, Mapping):
        raise TypeError(f"cpts must be a dict node -> CPT, got {type(cpts).__name__}")
    out = {}
    for v, fam in zip(layout.structure.order, layout.families, strict=True):
        if v not in cpts:
            raise ValueError(f"cpts has no table for the node {v!r}")
        shape = (int(np.prod([layout.cards[u] for u in fam[:-1]], dtype=np.int64)), layout.cards[v])
        t = cpts[v]
        if is_symbolic(t):
            import pytensor.tensor as pt

            t = pt.as_tensor(t)
            if t.ndim != 2:
                raise ValueError(f"cpts[{v!r}] must be 2-D {shape}, got ndim {t.ndim}")
            t = pt.specify_shape(pt.cast(t, "float64"), shape)
        else:
            t = np.asarray(t, dtype=np.float64)
            if t.shape != shape:
                raise ValueError(f"cpts[{v!r}] must have shape {shape}, got {t.shape}")
        out[v] = t
    return out


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
    cpts = _check_cpts(layout, cpts)
    method = _resolve_method(layout, method)
    symbolic = any(is_symbolic(t) for t in cpts.values())
    if graph not in _GRAPHS:
        raise ValueError(f"graph must be one of {_GRAPHS}, got {graph!r}")
    if symbolic and (graph == "tape" or (graph == "auto" and layout.n_cells > MAX_OPS_CELLS)):
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
    _register_numba(_OPS)
    return _OPS


def _register_numba(op_types: Sequence[type]) -> None:
    """Run the Ops' numpy ``perform`` from numba-compiled functions (numba object mode).

    The replay is many small numpy calls, which object mode runs at numpy speed; registering the
    fallback explicitly avoids the generic "will use object mode" warning for these two Ops.
    """
    import warnings

    try:
        from pytensor.link.numba.dispatch.basic import generate_fallback_impl, numba_funcify
    except ImportError:  # pragma: no cover - numba backend unavailable
        return

    def funcify(op: Any, node: Any = None, storage_map: Any = None, **kwargs: Any) -> Any:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Numba will use object mode")
            return generate_fallback_impl(op, node, storage_map, **kwargs)

    for t in op_types:
        numba_funcify.register(t)(funcify)


_OPS: tuple[type, type] | None = None


def FamilyMomentsOp(plan: MomentsPlan) -> Any:
    """The PyTensor Op computing the family moments from the CPTs by replaying ``plan``."""
    return _moments_ops()[0](plan)


def mvnormal_logp_chol(y: Any, mean: Any, cov: Any, analytic_gradient: bool = True) -> Any:
    """Log-density of ``N(mean, cov)`` at ``y`` through a Cholesky factor ``cov = L Lᵀ``.

    .. math:: \\log p(y) = -\\tfrac12 \\lVert L^{-1}(y-μ)\\rVert^2 - \\sum_i \\log L_{ii}
              - \\tfrac M2 \\log 2π.

    With ``analytic_gradient`` (default) the density is one Op (LAPACK ``potrf``) whose gradient
    is the closed form (Petersen & Pedersen, "The Matrix Cookbook", eqs. 57 and 61)

    .. math:: \\partial_μ = Σ^{-1} r, \\quad \\partial_y = -Σ^{-1} r, \\quad
              \\partial_Σ = \\tfrac12 (Σ^{-1} r r^\\top Σ^{-1} - Σ^{-1}), \\quad r = y - μ,

    with ``Σ⁻¹`` from ``potri``: about three times cheaper than differentiating PyTensor's
    Cholesky and triangular solves for the 752 cells of alarm. ``∂_Σ`` is the symmetric
    gradient, exact for covariances that are symmetric by construction (as here). Otherwise the
    density is built from PyTensor's ``cholesky`` and ``solve_triangular``.

    A covariance that is not numerically positive definite gives ``-inf`` instead of an
    exception (and a zero gradient), so that a sampler rejects the point.
    """
    import pytensor.tensor as pt

    y = pt.as_tensor(y, dtype="float64")
    mean = pt.as_tensor(mean, dtype="float64")
    cov = pt.as_tensor(cov, dtype="float64")
    if analytic_gradient:
        return _mvnormal_ops()[0]()(y, mean, cov)
    from pytensor.tensor.linalg import cholesky, solve_triangular

    resid = y - mean
    chol = cholesky(cov, lower=True, on_error="nan")
    z = solve_triangular(chol, resid, lower=True)
    m = resid.shape[-1]
    logp = (
        -0.5 * pt.sum(z**2)
        - pt.sum(pt.log(pt.diagonal(chol)))
        - 0.5 * pt.cast(m, "float64") * np.log(2.0 * np.pi)
    )
    return pt.switch(pt.isnan(logp), -np.inf, logp)


class _CholeskyCache:
    """The last factorisation, shared by the density and its gradient at the same point."""

    def __init__(self) -> None:
        self.cov: np.ndarray | None = None
        self.chol: np.ndarray | None = None
        self.ok = False

    def factor(self, cov: np.ndarray) -> tuple[np.ndarray | None, bool]:
        from scipy.linalg import lapack

        if self.cov is not None and self.cov.shape == cov.shape and np.array_equal(self.cov, cov):
            return self.chol, self.ok
        chol, info = lapack.dpotrf(cov, lower=1, clean=1)
        self.cov = np.array(cov, copy=True)
        self.ok = info == 0 and bool(np.all(np.isfinite(chol)))
        self.chol = chol if self.ok else None
        return self.chol, self.ok


_CHOL_CACHE = _CholeskyCache()


def _mvnormal_ops() -> tuple[type, type]:
    global _MVN_OPS
    if _MVN_OPS is not None:
        return _MVN_OPS
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op
    from scipy.linalg import lapack, solve_triangular

    log2pi = float(np.log(2.0 * np.pi))

    class MvNormalLogp(Op):
        """``(y, mean, cov) -> log N(y; mean, cov)`` through LAPACK's Cholesky."""

        __props__ = ()

        def make_node(self, y: Any, mean: Any, cov: Any) -> Any:
            ins = [pt.as_tensor(x, dtype="float64") for x in (y, mean, cov)]
            return Apply(self, ins, [pt.scalar(dtype="float64")])

        def perform(self, node: Any, inputs: Any, outputs: Any) -> None:
            y, mean, cov = inputs
            chol, ok = _CHOL_CACHE.factor(cov)
            if not ok:
                outputs[0][0] = np.array(-np.inf)
                return
            z = solve_triangular(chol, y - mean, lower=True, check_finite=False)
            val = -0.5 * z @ z - np.sum(np.log(np.diagonal(chol))) - 0.5 * len(y) * log2pi
            outputs[0][0] = np.array(val, dtype=np.float64)

        def infer_shape(self, node: Any, shapes: Any) -> list:
            return [()]

        def pullback(self, inputs: Any, outputs: Any, cotangents: Any) -> list:
            (g,) = cotangents
            g_y, g_mean, g_cov = MvNormalLogpGrad()(*inputs)
            return [g * g_y, g * g_mean, g * g_cov]

    class MvNormalLogpGrad(Op):
        """The closed-form gradient of :class:`MvNormalLogp` in ``(y, mean, cov)``."""

        __props__ = ()

        def make_node(self, y: Any, mean: Any, cov: Any) -> Any:
            ins = [pt.as_tensor(x, dtype="float64") for x in (y, mean, cov)]
            outs = [ins[0].type(), ins[1].type(), ins[2].type()]
            return Apply(self, ins, outs)

        def perform(self, node: Any, inputs: Any, outputs: Any) -> None:
            y, mean, cov = inputs
            chol, ok = _CHOL_CACHE.factor(cov)
            if not ok:
                outputs[0][0] = np.zeros_like(y)
                outputs[1][0] = np.zeros_like(mean)
                outputs[2][0] = np.zeros_like(cov)
                return
            inv, _ = lapack.dpotri(chol, lower=1)
            inv = np.tril(inv) + np.tril(inv, -1).T
            a = inv @ (y - mean)
            outputs[0][0] = -a
            outputs[1][0] = a.copy()
            outputs[2][0] = 0.5 * (np.outer(a, a) - inv)

        def infer_shape(self, node: Any, shapes: Any) -> list:
            return list(shapes)

    _MVN_OPS = (MvNormalLogp, MvNormalLogpGrad)
    _register_numba(_MVN_OPS)
    return _MVN_OPS


_MVN_OPS: tuple[type, type] | None = None


def _noise_variance(sigma: Any, layout: FamilyLayout, name: str = "sigma") -> Any:
    """Per-cell noise variances from a scalar, per-family (K,) or per-cell (M,) σ."""
    m, k = layout.n_cells, layout.n_families
    sizes = np.diff(layout.offsets)
    if is_symbolic(sigma):
        import pytensor.tensor as pt

        s = pt.as_tensor(sigma, dtype="float64")
        if s.ndim == 0:
            return pt.ones((m,)) * s**2
        if s.type.shape[0] == k and k != m:
            return pt.repeat(s**2, sizes)
        return s**2
    s = check_positive(sigma, name)
    if s.ndim == 0:
        return np.full(m, float(s) ** 2)
    if s.shape == (k,):
        return np.repeat(s**2, sizes)
    if s.shape == (m,):
        return s**2
    raise ValueError(f"{name} must be a scalar, one value per family ({k}) or per cell ({m})")


def joint_noisy_counts_logp(
    y: Any,
    n: Any,
    structure: Any,
    cardinalities: Mapping[str, int],
    cpts: Mapping[str, Any],
    sigma: Any = None,
    *,
    noise_variance: Any = None,
    method: Literal["auto", "enumeration", "junction_tree"] = "auto",
    layout: FamilyLayout | None = None,
) -> Any:
    """Log-likelihood of the stacked noisy family tables under the joint (linear-query) model.

    .. math:: y \\sim \\mathcal N\\big(N\\,Qp,\\;
              N(Q\\,\\mathrm{diag}(p)\\,Q^\\top - Qpp^\\top Q^\\top)
              + \\mathrm{diag}(σ^2)\\big)

    (Räisä et al. 2023, NAPSU-MQ; Bernstein & Sheldon 2018), evaluated with a Cholesky factor.

    Parameters
    ----------
    y : array_like, shape (M,)
        The released family tables, each flattened row-major (parent configuration, child
        state), concatenated in topological order (``family_layout(...).structure.order``).
    n : float or tensor
        The number of records ``N`` (may be a latent variable).
    structure, cardinalities, cpts, method, layout
        As in :func:`family_moments`.
    sigma : float or array_like or tensor
        Gaussian noise standard deviation: a scalar, one per family (K,) or one per cell (M,).
    noise_variance : tensor, optional
        Per-cell noise variances instead of ``sigma`` (e.g. the latent ``ω`` of the Laplace
        scale mixture).

    Returns
    -------
    TensorVariable
        A scalar log-density (``-inf`` if the covariance is not numerically positive definite).
    """
    import pytensor.tensor as pt

    if layout is None:
        layout = family_layout(structure, cardinalities)
    if (sigma is None) == (noise_variance is None):
        raise ValueError("give exactly one of sigma and noise_variance")
    var = _noise_variance(sigma, layout) if noise_variance is None else noise_variance
    if not is_symbolic(y):
        y = np.asarray(y, dtype=np.float64)
        if y.shape != (layout.n_cells,):
            raise ValueError(f"y must have shape ({layout.n_cells},), got {y.shape}")
        if not np.isfinite(y).all():
            raise ValueError("y must be finite")
    if not is_symbolic(n):
        n = float(check_positive(n, "n"))
    mean, second = family_moments(structure, cardinalities, cpts, method=method, layout=layout)
    mean = pt.as_tensor(mean)
    second = pt.as_tensor(second)
    n_t = pt.as_tensor(n, dtype="float64")
    cov = n_t * (second - pt.outer(mean, mean)) + pt.diag(pt.as_tensor(var, dtype="float64"))
    return mvnormal_logp_chol(y, n_t * mean, cov)


# --------------------------------------------------------------------------- PyMC model


def _release_values(release: Any) -> np.ndarray:
    return np.asarray(getattr(release, "values", release), dtype=np.float64).reshape(-1)


def _release_scale(release: Any, noise: str | None, scale: Any) -> tuple[str, float]:
    mech = getattr(release, "mechanism", None)
    if mech is not None:
        # integer noise: its continuous surrogate with the exact variance (the registered
        # likelihood of the mechanism, pymc_rdp.distributions.noise_models)
        model = noise_model_of(mech)
        return model.family, model.surrogate_scale(mech)
    if noise not in ("gaussian", "laplace") or scale is None:
        raise ValueError("plain arrays need noise='gaussian' or 'laplace' and its scale (σ or b)")
    return noise, scale


def build_joint_model(
    structure: Any,
    cardinalities: Mapping[str, int],
    releases: Mapping[str, Any],
    n: float | Literal["released"] | None = None,
    *,
    noise: Literal["gaussian", "laplace"] | None = None,
    scale: float | Mapping[str, float] | None = None,
    alpha0: float = 1.0,
    method: Literal["auto", "enumeration", "junction_tree"] = "auto",
    states: Mapping[str, Sequence[Any]] | None = None,
    n_prior_sigma: float = 1.0,
) -> Any:
    """A PyMC model of the CPTs given every family's noisy table, with the joint likelihood.

    Priors: every CPT row ``θ_v[c, :] ~ Dirichlet(alpha0)`` (variables ``f"{v}_cpt"``, dims
    ``f"{v}_parent_config"``, ``f"{v}_state"``, as in :class:`pymc_rdp.BayesianNetwork`).
    Likelihood: :func:`joint_noisy_counts_logp` of the stacked releases, added as the potential
    ``"joint_releases"`` (the stacked releases are the data ``"releases"``).

    * Gaussian noise of standard deviation ``σ_v`` per family: the normal law with
      ``diag(σ²)``.
    * Laplace noise of scale ``b_v``: latent per-cell variances ``ω ~ Exponential(mean 2b²)``
      (variable ``"releases_omega"``) and the normal law given ``ω`` with ``diag(ω)``.

    Parameters
    ----------
    structure : dict, networkx.DiGraph, pgmpy model or NetworkStructure
    cardinalities : dict
        ``node -> number of states``.
    releases : dict
        ``node -> release`` (a :class:`pymc_rdp.distributions.Release`, whose mechanism gives the
        noise, or an array with ``noise`` and ``scale``), each of shape (configurations, states)
        or flattened row-major.
    n : float, "released" or None
        The number of records. A number: known (declared public by the curator). The
        string ``"released"``: the mean of the released family totals, a plug-in estimate (post-
        processing, no privacy cost). ``None``: a latent ``n_records ~ LogNormal(log n̂,
        n_prior_sigma)`` centred on that estimate, a continuous relaxation of the integer count
        that the family totals pin down (their mean has standard deviation about
        ``σ √(M/K²)``).
    noise, scale
        For plain-array releases: the noise family and its σ (Gaussian) or b (Laplace), a
        number or ``node -> number``.
    alpha0 : float
        Dirichlet prior concentration of every CPT row.
    method : {"auto", "enumeration", "junction_tree"}
    states : dict, optional
        ``node -> state labels`` for the coordinates (default ``0..card-1``).
    n_prior_sigma : float
        Log-scale standard deviation of the prior on a latent ``N``.

    Returns
    -------
    pymc.Model
    """
    import pymc as pm

    layout = family_layout(structure, cardinalities)
    st = layout.structure
    alpha0 = float(check_positive(alpha0, "alpha0"))
    if not isinstance(releases, Mapping):
        raise TypeError(f"releases must be a dict node -> release, got {type(releases).__name__}")
    missing = [v for v in st.order if v not in releases]
    if missing:
        raise ValueError(f"releases has no table for the node(s) {missing}")
    ys, kinds, scales = [], [], []
    for v in st.order:
        vals = _release_values(releases[v])
        size = layout.family_slice(v).stop - layout.family_slice(v).start
        if vals.size != size:
            raise ValueError(f"releases[{v!r}] must have {size} cells, got {vals.size}")
        if not np.isfinite(vals).all():
            raise ValueError(f"releases[{v!r}] must be finite")
        sc = scale[v] if isinstance(scale, Mapping) else scale
        kind, s = _release_scale(releases[v], noise, sc)
        ys.append(vals)
        kinds.append(kind)
        scales.append(float(check_positive(s, "scale")))
    if len(set(kinds)) != 1:
        raise ValueError("all releases must carry the same kind of noise (gaussian or laplace)")
    kind = kinds[0]
    y = np.concatenate(ys)
    totals = np.array([v.sum() for v in ys])
    n_hat = max(1.0, float(totals.mean()))

    labels = states or {v: list(range(layout.cards[v])) for v in st.order}
    coords = {}
    for v in st.order:
        coords[f"{v}_parent_config"] = config_labels(st.parents[v], labels)
        coords[f"{v}_state"] = [str(s) for s in labels[v]]
    with pm.Model(coords=coords) as model:
        theta = {}
        for v in st.order:
            shape = (len(coords[f"{v}_parent_config"]), layout.cards[v])
            theta[v] = pm.Dirichlet(
                f"{v}_cpt",
                a=np.full(shape, alpha0),
                shape=shape,
                dims=(f"{v}_parent_config", f"{v}_state"),
            )
        data = pm.Data("releases", y)
        if n is None:
            n_var: Any = pm.LogNormal(
                "n_records", mu=math.log(n_hat), sigma=float(check_positive(n_prior_sigma, "n"))
            )
        elif isinstance(n, str):
            if n != "released":
                raise ValueError(f"n must be a number, 'released' or None, got {n!r}")
            n_var = n_hat
        else:
            n_var = float(check_positive(n, "n"))
        sizes = np.diff(layout.offsets)
        if kind == "gaussian":
            logp = joint_noisy_counts_logp(
                data,
                n_var,
                st,
                layout.cards,
                theta,
                sigma=np.repeat(np.asarray(scales), sizes),
                method=method,
                layout=layout,
            )
        else:
            b = np.repeat(np.asarray(scales), sizes)
            omega = pm.Exponential("releases_omega", scale=2.0 * b**2, shape=(layout.n_cells,))
            logp = joint_noisy_counts_logp(
                data,
                n_var,
                st,
                layout.cards,
                theta,
                noise_variance=omega,
                method=method,
                layout=layout,
            )
        pm.Potential("joint_releases", logp)
    return model


def joint_model_from_network(
    network: Any,
    n: float | Literal["released"] | Literal["fitted"] | None = "fitted",
    method: Literal["auto", "enumeration", "junction_tree"] = "auto",
) -> Any:
    """The joint model of a :class:`pymc_rdp.BayesianNetwork` fitted with Gaussian/Laplace noise.

    Uses the network's releases, states, prior concentration and (``n="fitted"``) its record
    count (``N`` when the curator declared it public with ``fit(..., public_total=N)``, else the
    network's estimate from the releases). The CPT variables have the same names and dims as the
    network's own model, so ``network.cpt_draws(idata, node)`` reads draws of this model too.
    """
    mech = getattr(network, "family_mechanism", None)
    if mech is None or not mech.for_counts:
        raise ValueError("network must be fitted with mechanism='gaussian' or 'laplace'")
    n_use = network.n_records if n == "fitted" else n
    return build_joint_model(
        network.structure,
        network.cards,
        network.releases,
        n=n_use,
        alpha0=getattr(network, "alpha0", 1.0),
        method=method,
        states=network.states,
    )
