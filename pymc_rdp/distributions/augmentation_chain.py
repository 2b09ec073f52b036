"""One chain of the data-augmentation sampler: its moves' settings, and each move run in turn.

:meth:`~pymc_rdp.distributions.data_augmentation.DataAugmentation.run_chain` owns the loop over
iterations (θ's draw after the moves, the kept draws, the clock). Everything a move needs between
iterations lives here, in a :class:`ChainMoves`: the latent records and their family tables, each
node's block sizes (adapted during tuning towards an acceptance rate of :data:`TARGET_ACCEPT`),
the nodes found diffuse after :data:`DIFFUSE_AFTER` tuning iterations, the edges of the
child-row moves and the predictive's tables. :meth:`ChainMoves.run` runs one move of the
schedule (``moves`` of ``DataAugmentation``) over its nodes or edges by calling its compiled
kernel, and returns the move's acceptance rate.

The kernels are called through their modules (``augmentation_gibbs.gibbs_sweep``, …), so that a
test may replace one on its module and see every call. Each move's exactness is its kernel's
(the kernels' module notes); the schedule composes those kernels, and the settings that adapt
(block sizes, the diffuse nodes) are fixed before the first kept iteration, so each kept
transition is one fixed exact kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pymc_rdp.distributions import _augmentation_kernels as k
from pymc_rdp.distributions import augmentation_ancillary as ka
from pymc_rdp.distributions import augmentation_gibbs as kg
from pymc_rdp.distributions import augmentation_moves as km
from pymc_rdp.distributions import augmentation_pairs as kp
from pymc_rdp.distributions import augmentation_soma as ko
from pymc_rdp.distributions import augmentation_subtree as kt
from pymc_rdp.distributions import augmentation_swap as ks
from pymc_rdp.distributions import augmentation_transfer as kx

if TYPE_CHECKING:
    from pymc_rdp.distributions.data_augmentation import DataAugmentation

__all__ = [
    "CALLS_AHEAD",
    "COUNT_SIZE_CAP",
    "DIFFUSE_AFTER",
    "DIFFUSE_SHARE",
    "PAIR_MIN_GROUP",
    "PAIR_WINDOW",
    "SIZE_CAP",
    "TARGET_ACCEPT",
    "TRANSFER_SHARE",
    "ChainMoves",
    "adapted",
    "diffuse_nodes",
    "size_caps",
]

#: acceptance rate the row-block sizes adapt to during tuning
TARGET_ACCEPT = 0.35
#: half-width of a pair move's window, in block sizes (about a cell count's sd given its release)
PAIR_WINDOW = 3.0
#: groups of fewer records make no pair moves: a lone record's pair move is a heat-bath update
#: over two states, which the sweep already makes (on Adult's Dirichlet release they were 27 %
#: of a pair sweep's time)
PAIR_MIN_GROUP = 2
#: how far a node's block sizes may adapt up, in its ``block_size``, for a Gaussian or Laplace
#: release: its block size is already about the sd of a cell count given the release, and larger
#: blocks cost time without mixing (alarm, N = 10⁴, three releases: minimum ESS per second 1.7×
#: and its 1 % quantile's 1.4× with blocks up to 1× instead of 4×; insurance 1.4×, child
#: 1.0–1.1×, Adult a wash; on alarm 0.5× and 2× did worse than 1×, 8× worse than 4×)
COUNT_SIZE_CAP = 1
#: the same for other releases: a Dirichlet release's default block size is a rougher guess and
#: its blocks need the room (on Adult, blocks up to 1× lost 15 % at the 1 % quantile)
SIZE_CAP = 4
#: the heat-bath sweeps after an iteration's first visit only the nodes whose records changed
#: state in at least this share of their updates in the first :data:`DIFFUSE_AFTER` tuning
#: iterations: where a record's conditional is that spread out, a row's counts drift like a
#: Pólya urn's (lag-one correlation about n / (n + K α₀) per sweep for a row of n records), and
#: repeated sweeps move them; where records rarely change state, repeated sweeps cost the same
#: and move little, and block moves carry those counts (measured in ``moves``)
DIFFUSE_SHARE = 0.5
#: tuning iterations whose sweeps measure those shares (after them the nodes are fixed)
DIFFUSE_AFTER = 20
#: a node's transfer moves per sweep, as a share of its subtree moves' proposals over all of
#: its rows (insurance, N = 10⁴, beside the default moves, one seed: 4.11 minimum ESS per CPU
#: second with 0.25, 3.54 with 0.5, 3.66 with 1; ``docs/performance.md``, "Transfer moves")
TRANSFER_SHARE = 0.25
#: the moves whose first call, after an iteration's first move, needs a kernel that the compile
#: helper of the first iteration may still be compiling (θ's draw among them)
CALLS_AHEAD = frozenset(
    {
        "record",
        "soma",
        "ancillary",
        "subtree",
        "child_row",
        "pooled_row",
        "diffuse_pair",
        "transfer",
    }
)
#: the moves that read the predictive's tables (:func:`~.augmentation_subtree.predictive_logs`)
_PREDICTIVE_MOVES = frozenset({"subtree", "child_row", "pooled_row", "transfer"})


def size_caps(kinds: np.ndarray, sizes: Sequence[int]) -> list[int]:
    """The largest size each node's blocks may adapt to: its block size times
    :data:`COUNT_SIZE_CAP` if its release's density is Gaussian or Laplace, :data:`SIZE_CAP`
    otherwise."""
    counts = (k.KIND_GAUSSIAN, k.KIND_LAPLACE)
    return [
        max(1, (COUNT_SIZE_CAP if int(kind) in counts else SIZE_CAP) * m)
        for kind, m in zip(kinds, sizes, strict=True)
    ]


def diffuse_nodes(tally: np.ndarray) -> np.ndarray:
    """Per node, whether its records changed state in at least :data:`DIFFUSE_SHARE` of their
    heat-bath updates (``tally``: changed and updated per node); a node never updated is not."""
    changed, updated = tally[:, 0], tally[:, 1]
    return changed >= DIFFUSE_SHARE * np.maximum(updated, 1)


def adapted(size: float, rate: float, it: int, cap: int) -> float:
    """One Robbins–Monro step of a block size on its log towards the acceptance rate
    :data:`TARGET_ACCEPT` (step ``1/sqrt(1 + it)``), kept in ``1..cap``."""
    step = math.exp((rate - TARGET_ACCEPT) / math.sqrt(1.0 + it))
    return min(cap, max(1.0, size * step))


class ChainMoves:
    """The moves of one chain of ``da`` from the records ``x``, and the state they share.

    Parameters
    ----------
    da : DataAugmentation
        The sampler: its network and releases' arrays, moves and per-node settings.
    x : numpy.ndarray
        The chain's records (records × nodes, then one column per node released record by
        record), updated in place.
    tune : int
        Tuning iterations: block sizes adapt and the diffuse nodes are found only before it.
    adapt : bool
        Whether block sizes adapt and the later heat-bath sweeps single out the diffuse nodes
        (without it, every sweep visits every node and the sizes stay at ``block_size``).

    Attributes
    ----------
    da : DataAugmentation
        The sampler the chain belongs to.
    net, obs : tuple
        Its network's and releases' arrays, as the kernels take them.
    x, cell_n, row_n : numpy.ndarray
        The records and their family tables (cells and rows), kept in step by every move.
    theta : numpy.ndarray
        θ's buffer, flat over the cells: the CPT draw after :meth:`draw_theta`.
    """

    def __init__(self, da: DataAugmentation, x: np.ndarray, tune: int, adapt: bool) -> None:
        self.da = da
        self.x = x
        self.tune = tune
        self.adapt = adapt
        net, obs = da._net, da._obs
        self.net, self.obs = net, obs
        n_cells = int(net[4][-1])
        self.cell_n = np.zeros(n_cells, dtype=np.int64)
        self.row_n = np.zeros(int(net[5][-1]), dtype=np.int64)
        k.tabulate(x, net, self.cell_n, self.row_n)
        self.theta = np.empty(n_cells)
        self._buf = np.empty(int(net[0].max()))
        moves = da.moves
        nodes = range(len(da.nodes))
        self._nodes = nodes
        self._blocks = [da.block_moves[v] for v in da.nodes]
        sizes = [da.block_size[v] for v in da.nodes]
        self._sizes = sizes
        per_row = [da.row_moves[v] for v in da.nodes]
        self._per_row = per_row
        # row-block sizes adapt to an acceptance near TARGET_ACCEPT during tuning only (the
        # kept draws use fixed sizes, so each kept transition is one fixed exact kernel)
        self._row_size = [float(m) for m in sizes]
        size_cap = size_caps(obs[0][: len(sizes)], sizes)
        self._size_cap = size_cap
        self._tree_size = list(self._row_size)
        key_limit = kg.KEY_SPACE_LIMIT if da._key_space_limit is None else da._key_space_limit
        self._key_limit = key_limit
        self._one_by_one = kg.one_by_one_nodes(net, x.shape[0], key_limit)
        n_ch, ch = net[6], net[7]
        n_all = len(net[0])  # the nodes, then any released node's extra child (fixed values)
        self._desc, self._n_desc = kt.descendants(
            {i: [int(w) for w in ch[i, : n_ch[i]]] for i in range(n_all)}, n_all
        )
        # subtree moves make per_row proposals too: each redraws only the descendants whose
        # parents changed, so a node with many descendants costs no more per proposal (alarm,
        # N = 10⁴, where a root has about 30: minimum ESS per second 1.1–1.9× over three
        # releases against proposals shrunk beyond six nodes redrawn, when each redrew them all)
        # child-row moves: per edge (p, w) as many proposals as p's subtree moves make, spread
        # over the configurations of w's other parents
        parents = {i: [int(q) for q in net[2][i, : net[1][i]]] for i in nodes}
        self._edges = kt.child_row_edges(parents, self._desc, self._n_desc)
        rows_of = [int((net[4][i + 1] - net[4][i]) // net[0][i]) for i in nodes]

        def edge_settings(units: list[tuple[int, int]]) -> tuple[list, list, list]:
            """Per edge (p, w): the proposals, the starting block size and its cap (p's)."""
            per = [
                max(1, math.ceil(per_row[p] * rows_of[p] * int(net[0][p]) / rows_of[w]))
                for p, w in units
            ]
            return per, [float(sizes[p]) for p, _ in units], [size_cap[p] for p, _ in units]

        self._per_edge, self._edge_size, self._edge_cap = edge_settings(self._edges)
        # transfer moves: per node a share of its subtree moves' proposals over all its rows
        self._per_transfer = [
            max(1, math.ceil(TRANSFER_SHARE * per_row[i] * rows_of[i])) if pooled_rows else 0
            for i, pooled_rows in enumerate(kx.transfer_nodes(parents))
        ]
        # pooled child-row moves: the edges whose child's rows pool several of the parent's, as
        # many proposals per edge as child-row moves make, for the diffuse parents (``pool_on``:
        # set when the diffuse nodes are, from the start where none are singled out)
        self._pooled = kt.pooling_edges(parents)
        self._per_pool, self._pool_size, self._pool_cap = edge_settings(self._pooled)
        # guided pairs: a direction per row and pair of states (a K × K block per row)
        self._trees = [
            (
                i,
                da.weighted_pairs[v],
                np.zeros(rows_of[i] * int(net[0][i]) ** 2 if da.guided_pairs[v] else 0, np.int8),
            )
            for i, v in enumerate(da.nodes)
        ]
        # ancillary moves: θ and the records' uniforms live only within the move
        self._anc_size = [float(m) for m in sizes]
        self._anc_per_row = [int(net[0][i]) for i in nodes]
        self._u = np.empty(x.shape) if "ancillary" in moves else np.empty((0, 0))
        # θ and u are filled in place per move
        self._anc_units = [(self.theta, self._u, i) for i in nodes]
        # swap moves: N proposals per node whose rows its children's tables pool
        self._n_ctx, self._ctx, self._swappable = ks.swap_contexts(net[1], net[2], n_ch, ch, net[0])
        self._perm = np.arange(da.n_records, dtype=np.int64)  # soma: the subsets' shuffle
        # pair moves: windows of PAIR_WINDOW block sizes each way, log k! up to N
        self._pair_width = np.ones(n_all, dtype=np.int64)
        self._pair_width[: len(sizes)] = [max(1, round(PAIR_WINDOW * m)) for m in sizes]
        pairing = {"pair", "diffuse_pair"} & set(moves)
        self._log_fact = kp.log_factorials(da.n_records if pairing else 0)
        # heat-bath sweeps: an iteration's first visits every node; with adaptation, the later
        # ones visit the nodes found diffuse in the first tuning iterations (DIFFUSE_SHARE)
        self._every_node = np.zeros(n_all, dtype=np.bool_)  # never a released node's extra child
        self._every_node[: len(da.nodes)] = True
        self._repeat_nodes = self._every_node
        self._tally = np.zeros((n_all, 2), dtype=np.int64)
        # ... found where a move visits them: a later sweep, or pair moves after a sweep (the
        # sweeps tally the changes); otherwise no node is singled out
        uses_diffuse = moves.count("gibbs") > 1 or ("gibbs" in moves and "diffuse_pair" in moves)
        self._decide = min(DIFFUSE_AFTER, tune) if adapt and uses_diffuse else -1
        self._pool_on = self._pooled_on() if self._decide < 0 else []
        # subtree-type moves read the predictive's logarithms from tables, made before the first
        # such move: the helper compiles their kernel meanwhile (its compilation here, 0.3 s on
        # Adult, came before the first move's), and ``typed_predictive`` stands in for them
        # until then (the helper needs their types only)
        self._predictive: tuple[np.ndarray, ...] | None = None
        self._typed_predictive = (
            da._alpha,
            np.empty((0, 0)),
            np.empty(0, dtype=np.int64),
            np.empty(0, dtype=np.int64),
        )

    # ------------------------------------------------------------------ state and settings

    def _pooled_on(self) -> list[int]:
        """The pooled edges whose parent is diffuse (every one where none is singled out)."""
        return [e for e, (p, _) in enumerate(self._pooled) if self._repeat_nodes[p]]

    def _predictive_tables(self) -> tuple[np.ndarray, ...]:
        """The subtree-type moves' ``prior`` argument: α and the predictive's logarithms
        (:func:`~pymc_rdp.distributions.augmentation_subtree.predictive_logs`), with the
        released values' extra children marked as never drawn."""
        da = self.da
        logs, num_of, den_of = kt.predictive_logs(da._alpha, self.net[0], da.n_records)
        num_of[len(da.nodes) :] = -1  # released values: kept, never drawn
        return (da._alpha, logs, num_of, den_of)

    def begin(self, it: int) -> None:
        """Before iteration ``it``'s moves: at the tuning iteration that decides them, fix the
        diffuse nodes (from the heat-bath sweeps' tally) and the pooled edges they switch on."""
        if it == self._decide:
            if self._tally[:, 1].any():
                self._repeat_nodes = diffuse_nodes(self._tally)
            self._pool_on = self._pooled_on()

    def draw_theta(self) -> np.ndarray:
        """θ drawn from ``p(θ | x)`` (rows ``Dirichlet(α + n_c)``) into :attr:`theta`."""
        k.draw_theta(self.cell_n, self.da._alpha, self.net, self.theta, self._buf)
        return self.theta

    def compile_ahead_calls(self) -> list[tuple[Callable, tuple]]:
        """The kernels the chain first calls after its first move's, with arguments of their
        types, for :func:`~pymc_rdp.distributions.compile_ahead.compile_ahead`: a helper
        process compiles them meanwhile where neither this process nor numba's cache has them."""
        moves = self.da.moves
        x, net, obs, cell_n, row_n = self.x, self.net, self.obs, self.cell_n, self.row_n
        desc, n_desc, typed = self._desc, self._n_desc, self._typed_predictive
        ahead: list[tuple[Callable, tuple]] = []
        if moves[0] not in {"record", "soma", "ancillary"}:  # these draw θ first
            ahead.append((k.draw_theta, (cell_n, self.da._alpha, net, self.theta, self._buf)))
        if "diffuse_pair" in moves:  # first called once the diffuse nodes are known
            ahead.append((kp.pair_sweep, (
                x, net, obs, cell_n, row_n, self._pair_width, self._log_fact, self._key_limit,
                self._every_node, PAIR_MIN_GROUP,
            )))  # fmt: skip
        if "subtree" in moves[1:]:
            ahead.insert(0, (kt.subtree_sweep, (
                *self._trees[0], self._per_row[0], round(self._tree_size[0]), typed, desc,
                n_desc, x, net, obs, cell_n, row_n,
            )))  # fmt: skip
        if "transfer" in moves[1:]:
            ahead.insert(0, (kx.transfer_sweep, (
                0, self._per_transfer[0], round(self._tree_size[0]), typed, desc, n_desc,
                x, net, obs, cell_n, row_n,
            )))  # fmt: skip
        # child-row and pooled child-row moves share the kernel and its argument types
        for move, units, per, size in (
            ("child_row", self._edges, self._per_edge, self._edge_size),
            ("pooled_row", self._pooled, self._per_pool, self._pool_size),
        ):
            if move in moves[1:] and units:
                ahead.insert(0, (kt.child_row_sweep, (
                    *units[0], per[0], round(size[0]), typed, desc, n_desc,
                    x, net, obs, cell_n, row_n,
                )))  # fmt: skip
                break
        if _PREDICTIVE_MOVES & set(moves) and moves[0] not in _PREDICTIVE_MOVES:
            ahead.insert(1, (kt.predictive_logs, (self.da._alpha, net[0], self.da.n_records)))
        return ahead

    # ------------------------------------------------------------------ the moves

    def run(self, move: str, it: int, later: bool) -> float | None:
        """Run ``move`` at iteration ``it`` (``later``: it already ran in this iteration).

        Returns its acceptance rate (NaN where it made no proposal), or None where a later
        heat-bath sweep has no node to visit (no call, no rate)."""
        if self._predictive is None and move in _PREDICTIVE_MOVES:
            self._predictive = self._predictive_tables()
        if move == "gibbs":
            return self._gibbs(later)
        if move in ("pair", "diffuse_pair"):
            return self._pairs(move, it)
        return getattr(self, f"_{move}")(it)

    def _descend(
        self,
        sweep: Callable,
        units: list,
        per: list[int],
        size: list[float],
        cap: list[int],
        it: int,
        prior: Any,
        chosen: Sequence[int] | None = None,
    ) -> float:
        """One sweep of subtree-type moves over ``units`` (nodes or edges; those at the indices
        ``chosen`` only, when given) at iteration ``it``, ``prior`` the sweep's prior argument;
        block sizes adapt during tuning. Returns the acceptance rate."""
        acc = prop = 0
        for e in range(len(units)) if chosen is None else chosen:
            a, p = sweep(
                *units[e], per[e], round(size[e]), prior, self._desc, self._n_desc,
                self.x, self.net, self.obs, self.cell_n, self.row_n,
            )  # fmt: skip
            acc += a
            prop += p
            if self.adapt and it < self.tune and p:
                size[e] = adapted(size[e], a / p, it, cap[e])
        return acc / max(1, prop)

    def _record(self, it: int) -> float:
        self.draw_theta()
        accepted = k.record_sweep(self.x, self.theta, self.net, self.obs, self.cell_n, self.row_n)
        return accepted / max(1, self.da.n_records)

    def _soma(self, it: int) -> float:
        self.draw_theta()
        accepted = ko.soma_sweep(
            self.x, self.theta, self.da.n_records, self.da.soma_attempts, self._perm,
            self.net, self.obs, self.cell_n, self.row_n,
        )  # fmt: skip
        return accepted / max(1, self.da.n_records)

    def _site(self, it: int) -> float:
        a, p = k.site_sweep(self.x, self.net, self.obs, self.cell_n, self.row_n)
        return a / max(1, p)

    def _gibbs(self, later: bool) -> float | None:
        if later and not self._repeat_nodes.any():
            return None  # a later sweep with no node to visit: no call, no rate
        a, p = kg.gibbs_sweep(
            self.x, self.net, self.obs, self.cell_n, self.row_n, self._key_limit,
            self._repeat_nodes if later else self._every_node, self._tally, self._one_by_one,
        )  # fmt: skip
        return a / max(1, p)

    def _pairs(self, move: str, it: int) -> float:
        # "diffuse_pair": none before the diffuse nodes are known (NaN rate)
        visit = self._every_node if move == "pair" else self._repeat_nodes
        if move == "pair" or (it >= self._decide and visit.any()):
            a, p = kp.pair_sweep(
                self.x, self.net, self.obs, self.cell_n, self.row_n, self._pair_width,
                self._log_fact, self._key_limit, visit, PAIR_MIN_GROUP,
            )  # fmt: skip
            return a / max(1, p)
        return math.nan

    def _subtree(self, it: int) -> float:
        return self._descend(
            kt.subtree_sweep, self._trees, self._per_row, self._tree_size, self._size_cap, it,
            self._predictive,
        )  # fmt: skip

    def _child_row(self, it: int) -> float:
        return self._descend(
            kt.child_row_sweep, self._edges, self._per_edge, self._edge_size, self._edge_cap,
            it, self._predictive,
        )  # fmt: skip

    def _pooled_row(self, it: int) -> float:
        if not self._pool_on:
            return math.nan  # no edge's parent visited: no proposal
        return self._descend(
            kt.child_row_sweep, self._pooled, self._per_pool, self._pool_size, self._pool_cap,
            it, self._predictive, self._pool_on,
        )  # fmt: skip

    def _transfer(self, it: int) -> float:
        acc = prop = 0
        for i in self._nodes:
            a, p = kx.transfer_sweep(
                i, self._per_transfer[i], round(self._tree_size[i]), self._predictive,
                self._desc, self._n_desc, self.x, self.net, self.obs, self.cell_n, self.row_n,
            )  # fmt: skip
            acc += a
            prop += p
        return acc / prop if prop else math.nan  # no node to pair rows

    def _ancillary(self, it: int) -> float:
        self.draw_theta()
        ka.draw_uniforms(self.x, self.theta, self.net, self._u)
        return self._descend(
            ka.ancillary_sweep, self._anc_units, self._anc_per_row, self._anc_size,
            self._size_cap, it, self.da._alpha,
        )  # fmt: skip

    def _swap(self, it: int) -> float:
        acc = prop = 0
        for i in self._nodes:
            if self._swappable[i]:
                a, p = ks.swap_sweep(
                    i, self.da.n_records, self._n_ctx, self._ctx, self.x, self.net, self.obs,
                    self.cell_n, self.row_n,
                )  # fmt: skip
                acc += a
                prop += p
        return acc / max(1, prop)

    def _row_block(self, it: int) -> float:
        acc = prop = 0
        for i in self._nodes:
            a, p = km.row_block_sweep(
                i, self._per_row[i], round(self._row_size[i]), self.x, self.net, self.obs,
                self.cell_n, self.row_n,
            )  # fmt: skip
            acc += a
            prop += p
            if self.adapt and it < self.tune and p:
                self._row_size[i] = adapted(self._row_size[i], a / p, it, self._size_cap[i])
        return acc / max(1, prop)

    def _block(self, it: int) -> float:
        acc = prop = 0
        for i in self._nodes:
            a, p = k.block_moves(
                i, self._blocks[i], self._sizes[i], self.x, self.net, self.obs, self.cell_n,
                self.row_n,
            )  # fmt: skip
            acc += a
            prop += p
        return acc / max(1, prop)
