"""Exact marginals of a discrete Bayesian network over sets of nodes, in numpy or PyTensor.

Two exact back ends compute ``P(X_U)`` for many node sets ``U`` at once, as sums of products of
the conditional probability tables (CPTs):

``"enumeration"``
    The full joint table ``P(x_1, ..., x_d) = prod_v P(x_v | x_pa(v))`` (Koller & Friedman 2009,
    "Probabilistic Graphical Models", Def. 3.5) is formed once and summed down to each ``U``.
    Exact and simple, for small networks (at most :data:`MAX_ENUMERATION_STATES` joint states).
``"junction_tree"``
    Shafer–Shenoy message passing on a tree decomposition of the moral graph (Koller & Friedman
    2009, Sec. 10.2–10.3; Shafer & Shenoy 1990), with the elimination order chosen by the greedy
    min-fill heuristic (``networkx.algorithms.approximation.treewidth_min_fill_in``). Every CPT is
    assigned to one bag that holds its family. The pairwise marginals ``P(F_a ∪ F_b)`` of two
    families (needed for the second moments of the family tables) come from one *carried* pass per
    source family ``a``: starting from the bag of ``a``, messages keep ``F_a``'s nodes as extra
    axes while they travel outwards,

    .. math:: \\mu_{i\\to j}(x_{F_a}, x_{S_{ij}}) = \\sum_{x_{B_i \\setminus (S_{ij} \\cup F_a)}}
              \\psi_i \\; \\mu_{p\\to i} \\prod_{k \\in \\mathrm{nb}(i) \\setminus \\{p, j\\}}
              m_{k\\to i},

    and at the bag of family ``b`` the product of its potential with all incoming messages is
    summed down to ``F_a ∪ F_b``. The ordinary messages ``m`` are shared by all sources. There is no
    division anywhere (no ``β / μ`` ratios), so gradients stay finite when probabilities are tiny.

:func:`family_marginal` gives ``P(parents of v)`` of one node by elimination over its ancestral
closure. All of them work on numpy arrays or PyTensor tensors (the CPTs of a PyMC model); every
product and sum is a sequence of two-operand ``einsum`` calls in a greedy order
(``numpy.einsum_path``).
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pymc_rdp.bn.graph import NetworkStructure

__all__ = [
    "MAX_ENUMERATION_STATES",
    "JunctionTree",
    "contract",
    "enumeration_marginals",
    "family_marginal",
    "is_symbolic",
]

#: Largest joint state space that ``method="auto"`` enumerates.
MAX_ENUMERATION_STATES = 4096

Factor = tuple[Any, tuple[str, ...]]


class Ref:
    """A register of a :class:`Tape`: a recorded (not yet computed) array of a known shape."""

    __slots__ = ("id", "shape", "tape")

    def __init__(self, tape: Tape, id: int, shape: tuple[int, ...]):
        self.tape = tape
        self.id = id
        self.shape = tuple(int(s) for s in shape)

    def reshape(self, shape: Sequence[int]) -> Ref:
        return self.tape.reshape(self, shape)


class Tape:
    """A recorded sequence of ``einsum`` and ``reshape`` steps, run forwards and backwards in numpy.

    Recording the junction-tree computation once and replaying it gives the moments and their
    vector-Jacobian product (reverse-mode differentiation of each two-operand einsum:
    for ``C = einsum(A, B)``, ``Ā = einsum(C̄, B)`` summed to ``A``'s labels and broadcast over
    labels that only ``A`` carried) without building a large PyTensor graph.
    """

    def __init__(self) -> None:
        self.shapes: list[tuple[int, ...]] = []
        self.steps: list[tuple[str, tuple[int, ...], int, Any]] = []
        self.n_inputs = 0
        self.constants: dict[int, np.ndarray] = {}
        self._bplan: list[Any] | None = None
        self._bplan_len = 0

    def _new(self, shape: Sequence[int]) -> Ref:
        self.shapes.append(tuple(int(s) for s in shape))
        return Ref(self, len(self.shapes) - 1, self.shapes[-1])

    def input(self, shape: Sequence[int]) -> Ref:
        """A new input register (inputs must be created before any step)."""
        if self.steps or self.constants:
            raise RuntimeError("create every input before recording steps")
        self.n_inputs += 1
        return self._new(shape)

    def constant(self, value: np.ndarray) -> Ref:
        ref = self._new(np.shape(value))
        self.constants[ref.id] = np.asarray(value, dtype=np.float64)
        return ref

    def reshape(self, ref: Ref, shape: Sequence[int]) -> Ref:
        out = self._new(shape)
        self.steps.append(("reshape", (ref.id,), out.id, None))
        return out

    def einsum(self, spec: str, *refs: Ref) -> Ref:
        lhs, rhs = spec.split("->")
        size = {}
        for term, r in zip(lhs.split(","), refs, strict=True):
            size.update(zip(term, r.shape, strict=True))
        out = self._new([size[c] for c in rhs])
        self.steps.append(("einsum", tuple(r.id for r in refs), out.id, spec))
        return out

    def forward(self, inputs: Sequence[np.ndarray]) -> list[Any]:
        """Run the steps; returns every register's value."""
        regs: list[Any] = [None] * len(self.shapes)
        for i, x in enumerate(inputs):
            regs[i] = x
        for k, v in self.constants.items():
            regs[k] = v
        for kind, ins, out, spec in self.steps:
            if kind == "reshape":
                regs[out] = regs[ins[0]].reshape(self.shapes[out])
            else:
                regs[out] = np.einsum(spec, *(regs[i] for i in ins))
        return regs

    def _backward_plan(self) -> list[tuple[int, tuple[int, ...], list[Any]]]:
        """Per step, for each operand: (einsum spec of its gradient, broadcast shape or None)."""
        if getattr(self, "_bplan", None) is not None and self._bplan_len == len(self.steps):
            return self._bplan
        plan = []
        for kind, ins, out, spec in self.steps:
            if kind == "reshape":
                plan.append((out, ins, [None]))
                continue
            lhs, rhs = spec.split("->")
            terms = lhs.split(",")
            parts = []
            for j, term in enumerate(terms):
                others = [o for o in range(len(terms)) if o != j]
                avail = set(rhs).union(*(terms[o] for o in others))
                keep = "".join(c for c in term if c in avail)
                sub = ",".join([rhs, *(terms[o] for o in others)]) + "->" + keep
                bshape = None
                if keep != term:
                    bshape = [
                        self.shapes[ins[j]][i] if c in keep else 1 for i, c in enumerate(term)
                    ]
                parts.append((sub, [ins[o] for o in others], bshape))
            plan.append((out, ins, parts))
        self._bplan = plan
        self._bplan_len = len(self.steps)
        return plan

    def backward(self, regs: list[Any], seeds: Mapping[int, np.ndarray]) -> list[np.ndarray]:
        """Vector-Jacobian product: the gradients of the inputs given those of some registers."""
        grads: list[Any] = [None] * len(self.shapes)
        for k, g in seeds.items():
            grads[k] = g if grads[k] is None else grads[k] + g
        for out, ins, parts in reversed(self._backward_plan()):
            g = grads[out]
            if g is None:
                continue
            for i, part in zip(ins, parts, strict=True):
                if part is None:
                    c = g.reshape(self.shapes[i])
                else:
                    sub, others, bshape = part
                    c = np.einsum(sub, g, *(regs[o] for o in others))
                    if bshape is not None:
                        c = c.reshape(bshape)
                if grads[i] is None:
                    grads[i] = np.broadcast_to(c, self.shapes[i]).copy() if part else c
                else:
                    grads[i] += c
        return [
            np.zeros(self.shapes[i]) if grads[i] is None else np.asarray(grads[i])
            for i in range(self.n_inputs)
        ]


def is_symbolic(x: Any) -> bool:
    """True for a PyTensor variable (anything that is not a plain number or numpy array)."""
    return not isinstance(x, (np.ndarray, np.generic, float, int))


def _einsum(spec: str, *ops: Any, symbolic: bool) -> Any:
    if isinstance(ops[0], Ref):
        return ops[0].tape.einsum(spec, *ops)
    if not symbolic:
        return np.asarray(np.einsum(spec, *ops))
    return _pt_einsum(spec, *ops)


def _pt_einsum(spec: str, *ops: Any) -> Any:
    """A one- or two-operand einsum as broadcast multiply and sum (no OpFromGraph wrapper).

    ``pytensor.tensor.einsum`` builds an ``OpFromGraph`` per call; for the hundreds of small
    contractions of a junction tree the plain ``Elemwise`` product and ``Sum`` compile much faster.
    """
    import pytensor.tensor as pt

    lhs, out = spec.split("->")
    terms = lhs.split(",")
    labels: list[str] = []
    for t in terms:
        for c in t:
            if c not in labels:
                labels.append(c)
    # put the output labels first, in output order, then the summed ones
    full = list(out) + [c for c in labels if c not in out]
    prod = None
    for t, x in zip(terms, ops, strict=True):
        x = pt.as_tensor(x)
        pattern: list[Any] = []
        for c in full:
            pattern.append(t.index(c) if c in t else "x")
        xd = x.dimshuffle(pattern)
        prod = xd if prod is None else prod * xd
    n_sum = len(full) - len(out)
    if n_sum:
        prod = prod.sum(axis=tuple(range(len(out), len(full))))
    return prod


def _shape(x: Any) -> tuple[int, ...]:
    if isinstance(x, (np.ndarray, np.generic, Ref)):
        return tuple(np.shape(x)) if not isinstance(x, Ref) else x.shape
    shape = x.type.shape
    if any(s is None for s in shape):
        raise ValueError("every CPT tensor needs a static shape (use pytensor specify_shape)")
    return tuple(int(s) for s in shape)


def contract(factors: Sequence[Factor], out: Sequence[str], symbolic: bool | None = None) -> Any:
    """Sum-product of labelled factors: ``sum over the other labels of prod factors``, axes ``out``.

    Parameters
    ----------
    factors : sequence of (tensor, labels)
        Each tensor's axes are named by ``labels`` (node names, one per axis).
    out : sequence of str
        Labels of the result's axes, in order; each must occur in some factor.
    symbolic : bool, optional
        Build a PyTensor graph (default: if any factor is symbolic).

    Notes
    -----
    Operands are contracted two at a time in numpy's greedy order; a label is summed as soon as no
    remaining operand and not the output carries it (the usual variable-elimination rule).
    """
    factors = list(factors)
    out = tuple(out)
    if symbolic is None:
        symbolic = any(is_symbolic(t) for t, _ in factors)
    if not factors:
        raise ValueError("contract needs at least one factor")
    labels = sorted({lab for _, labs in factors for lab in labs} | set(out))
    if len(labels) > len(string.ascii_letters):
        raise ValueError(f"too many distinct nodes ({len(labels)}) in one contraction")
    missing = set(out) - {lab for _, labs in factors for lab in labs}
    if missing:
        raise ValueError(f"output nodes {sorted(missing)} occur in no factor")
    sym = dict(zip(labels, string.ascii_letters, strict=False))
    ops = [t for t, _ in factors]
    terms = ["".join(sym[x] for x in labs) for _, labs in factors]
    out_term = "".join(sym[x] for x in out)
    if len(ops) > 2:
        shapes = [_shape(t) for t in ops]
        path, _ = np.einsum_path(
            ",".join(terms) + "->" + out_term,
            *[np.broadcast_to(np.zeros(()), s) for s in shapes],
            optimize="greedy",
        )
        steps = [tuple(s) for s in path[1:]]
    else:
        steps = [tuple(range(len(ops)))]
    ops = list(ops)
    terms = list(terms)
    for step in steps:
        picked = sorted(step, reverse=True)
        sel_ops = [ops.pop(i) for i in picked]
        sel_terms = [terms.pop(i) for i in picked]
        last = not ops
        if last:
            res_term = out_term
        else:
            keep = set(out_term).union(*terms)
            seen: list[str] = []
            for t in sel_terms:
                for c in t:
                    if c in keep and c not in seen:
                        seen.append(c)
            res_term = "".join(seen)
        res = _einsum(",".join(sel_terms) + "->" + res_term, *sel_ops, symbolic=symbolic)
        ops.append(res)
        terms.append(res_term)
    (result,) = ops
    return result


def _cpt_factors(
    structure: NetworkStructure,
    cards: Mapping[str, int],
    cpts: Mapping[str, Any],
    nodes: Sequence[str] | None = None,
) -> dict[str, Factor]:
    """Each CPT reshaped to (parent cards..., child card), labelled (parents..., child).

    ``nodes``: only these CPTs (default: every node of the structure).
    """
    out = {}
    for v in structure.order if nodes is None else nodes:
        pars = structure.parents[v]
        shape = (*[cards[p] for p in pars], cards[v])
        table = cpts[v]
        out[v] = (table.reshape(shape), (*pars, v))
    return out


def enumeration_marginals(
    structure: NetworkStructure,
    cards: Mapping[str, int],
    cpts: Mapping[str, Any],
    sets: Sequence[Sequence[str]],
) -> list[Any]:
    """``P(X_U)`` for every ``U`` in ``sets``, summed from the full joint table (axes: ``U``)."""
    factors = _cpt_factors(structure, cards, cpts)
    symbolic = any(is_symbolic(t) for t, _ in factors.values())
    joint = contract(list(factors.values()), structure.order, symbolic=symbolic)
    return [contract([(joint, structure.order)], tuple(u), symbolic=symbolic) for u in sets]


def family_marginal(
    structure: NetworkStructure,
    node: str,
    cpts: Mapping[str, Any],
    cards: Mapping[str, int],
    backend: str = "numpy",
) -> Any:
    """``P(parents of node = c)`` for every parent configuration ``c`` (flat, row-major).

    The marginal of a set of nodes only involves their ancestral closure ``A``:

    .. math:: P(x_{\\mathrm{pa}}) = \\sum_{x_{A \\setminus \\mathrm{pa}}} \\prod_{u \\in A}
              P(x_u \\mid x_{\\mathrm{pa}(u)}),

    (Koller & Friedman 2009, Sec. 9.3: variable elimination after pruning barren nodes),
    evaluated as a sequence of two-operand contractions in numpy's greedy order
    (:func:`contract`; one many-operand ``einsum`` would search its contraction order
    exhaustively, which takes minutes for the closures of alarm). ``cpts[u]`` has shape
    (configurations of u's parents, states of u). Works on numpy arrays or PyTensor tensors
    (``backend="pytensor"``), so the same code gives the model's symbolic probabilities.
    """
    pars = structure.parents[node]
    if not pars:
        if backend == "numpy":
            return np.ones(1)
        import pytensor.tensor as pt

        return pt.ones((1,), dtype="float64")
    closure = structure.ancestors(pars)
    factors = _cpt_factors(structure, cards, cpts, nodes=closure).values()
    out = contract(list(factors), pars, symbolic=backend != "numpy")
    if backend == "numpy":
        return np.asarray(out, dtype=np.float64).reshape(-1)
    return out.reshape((-1,))


class JunctionTree:
    """A tree decomposition of a Bayesian network's moral graph, with CPTs assigned to bags.

    Parameters
    ----------
    structure : NetworkStructure
    cards : dict
        Number of states of every node (only used to report sizes).

    Attributes
    ----------
    bags : list of tuple of str
        The bags (nodes in topological order within a bag).
    neighbours : list of list of int
        Tree adjacency.
    host : dict
        ``node -> bag index`` holding the node's family (where its CPT is assigned).
    """

    def __init__(self, structure: NetworkStructure, cards: Mapping[str, int]):
        import networkx as nx
        from networkx.algorithms.approximation import treewidth_min_fill_in

        self.structure = structure
        self.cards = dict(cards)
        rank = {v: i for i, v in enumerate(structure.order)}
        moral = nx.Graph()
        moral.add_nodes_from(structure.order)
        for v in structure.order:
            fam = [*structure.parents[v], v]
            for i, a in enumerate(fam):
                for b in fam[i + 1 :]:
                    moral.add_edge(a, b)
        if moral.number_of_nodes() == 1:
            tree = nx.Graph()
            tree.add_node(frozenset(structure.order))
        else:
            _, tree = treewidth_min_fill_in(moral)
        tree = self._simplify(nx.Graph(tree))
        if not nx.is_tree(tree):  # a forest (disconnected network): link components
            comps = [sorted(c, key=lambda b: sorted(b)) for c in nx.connected_components(tree)]
            for c1, c2 in itertools.pairwise(comps):
                tree.add_edge(c1[0], c2[0])
        bag_list = sorted(tree.nodes, key=lambda b: (min(rank[v] for v in b), sorted(b)))
        index = {b: i for i, b in enumerate(bag_list)}
        self.bags = [tuple(sorted(b, key=rank.__getitem__)) for b in bag_list]
        self.neighbours = [sorted(index[n] for n in tree.neighbors(b)) for b in bag_list]
        self.host = {}
        for v in structure.order:
            fam = {*structure.parents[v], v}
            cands = [i for i, b in enumerate(bag_list) if fam <= b]
            if not cands:  # pragma: no cover - a tree decomposition covers every clique
                raise RuntimeError(f"no bag holds the family of {v!r}")
            self.host[v] = min(cands, key=lambda i: (len(bag_list[i]), i))
        self.hosted: list[list[str]] = [[] for _ in self.bags]
        for v in structure.order:
            self.hosted[self.host[v]].append(v)
        self._rank = rank
        self._tape: Tape | None = None

    @staticmethod
    def _simplify(tree: Any) -> Any:
        """Merge every bag that is a subset of a neighbour into it (keeps a tree decomposition)."""
        changed = True
        while changed:
            changed = False
            for b in list(tree.nodes):
                for nb in list(tree.neighbors(b)):
                    if b <= nb:
                        for other in list(tree.neighbors(b)):
                            if other != nb:
                                tree.add_edge(nb, other)
                        tree.remove_node(b)
                        changed = True
                        break
                if changed:
                    break
        return tree

    @property
    def width(self) -> int:
        """Largest bag size minus one (the decomposition's width)."""
        return max(len(b) for b in self.bags) - 1

    def separator(self, i: int, j: int) -> tuple[str, ...]:
        """Nodes shared by bags ``i`` and ``j`` (topological order)."""
        sj = set(self.bags[j])
        return tuple(v for v in self.bags[i] if v in sj)

    def _subtree_has(self, i: int, parent: int | None, wanted: set[int]) -> bool:
        if i in wanted:
            return True
        return any(self._subtree_has(k, i, wanted) for k in self.neighbours[i] if k != parent)

    def pairwise_marginals(
        self,
        cpts: Mapping[str, Any],
        pairs: Sequence[tuple[int, int]],
        unions: Sequence[Sequence[str]],
    ) -> list[Any]:
        """``P(F_a ∪ F_b)`` for each pair of families (indices into ``structure.order``).

        ``unions[k]`` gives the axis order of the ``k``-th result (the nodes of ``F_a ∪ F_b``).
        A pair ``(a, a)`` gives the family marginal ``P(F_a)``.
        """
        structure = self.structure
        factors = _cpt_factors(structure, self.cards, cpts)
        symbolic = any(is_symbolic(t) for t, _ in factors.values())
        first = next(iter(cpts.values()))
        self._tape = first.tape if isinstance(first, Ref) else None
        order = structure.order
        local = [[factors[v] for v in hosted] for hosted in self.hosted]
        messages: dict[tuple[int, int], Factor] = {}

        def message(i: int, j: int) -> Factor:
            key = (i, j)
            if key not in messages:
                sep = self.separator(i, j)
                fs = local[i] + [message(k, i) for k in self.neighbours[i] if k != j]
                messages[key] = (self._reduce(fs, sep, symbolic), sep)
            return messages[key]

        by_source: dict[int, list[tuple[int, int]]] = {}
        for k, (a, b) in enumerate(pairs):
            by_source.setdefault(a, []).append((k, b))
        results: list[Any] = [None] * len(pairs)
        for a, targets in by_source.items():
            fam_a = (*structure.parents[order[a]], order[a])
            at_bag: dict[int, list[tuple[int, int]]] = {}
            for k, b in targets:
                at_bag.setdefault(self.host[order[b]], []).append((k, b))
            wanted = set(at_bag)
            start = self.host[order[a]]
            # iterative depth-first traversal: (bag, parent, carried message or None)
            stack: list[tuple[int, int | None, Factor | None]] = [(start, None, None)]
            while stack:
                i, parent, carried = stack.pop()
                base = list(local[i]) + ([carried] if carried is not None else [])
                incoming = {k: message(k, i) for k in self.neighbours[i] if k != parent}
                for k, _b in at_bag.get(i, []):
                    fs = base + list(incoming.values())
                    results[k] = self._reduce(fs, tuple(unions[k]), symbolic)
                for c in self.neighbours[i]:
                    if c == parent or not self._subtree_has(c, i, wanted):
                        continue
                    sep = self.separator(i, c)
                    out = (*fam_a, *[v for v in sep if v not in fam_a])
                    fs = base + [m for k, m in incoming.items() if k != c]
                    stack.append((c, i, (self._reduce(fs, out, symbolic), out)))
        return results

    def _reduce(self, fs: list[Factor], out: tuple[str, ...], symbolic: bool) -> Any:
        if not fs:
            shape = tuple(self.cards[v] for v in out)
            if self._tape is not None:
                return self._tape.constant(np.ones(shape))
            if symbolic:
                import pytensor.tensor as pt

                return pt.ones(shape, dtype="float64")
            return np.ones(shape)
        present = {lab for _, labs in fs for lab in labs}
        extra = [v for v in out if v not in present]
        if extra:  # pragma: no cover - running intersection makes this impossible
            raise RuntimeError(f"nodes {extra} are missing from the factors")
        return contract(fs, out, symbolic=symbolic)
