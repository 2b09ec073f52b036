"""Exact posteriors of Bayesian-network CPTs from released family tables, by data augmentation.

The target
----------
A discrete Bayesian network with CPT rows ``θ_v[c, :] ~ Dirichlet(α₀)`` generates ``N`` latent
confidential records ``x₁..x_N`` (``N`` known and public). Each family table
``s_v = Σ_i t_v(x_i)`` (record-additive) was released once by a mechanism with density
``η_v(y_v | s_v)``. The posterior of the CPTs is

.. math:: p(θ \\mid y) ∝ p(θ) \\sum_x \\prod_i p(x_i \\mid θ) \\prod_v η_v(y_v \\mid s_v(x)),

exact: no normal approximation of the counts, the tables' overlap (the same records in every
table) included by construction. The sampler keeps the records as its latent state (Ju, Awan,
Gong & Rao, NeurIPS 2022, "Data Augmentation MCMC for Bayesian Inference from Privatized
Data").

Mechanisms
----------
Gaussian, Laplace (and their discrete versions) and Dirichlet releases, read into one density
form each by the registry :data:`OBSERVATIONS` (keyed on ``mechanism.name``); a new mechanism
adds one entry with :func:`register_observation`.
Randomized response releases each record's value of a node instead of a table; its likelihood
factors over the records, and the sampler observes it through an extra child of the node whose
values are the released ones, fixed (:mod:`pymc_rdp.distributions.augmentation_records`).

Moves
-----
``"record"``
    θ | x conjugately, then for every record ``x*_j ~ p(x | θ)`` accepted with probability
    ``min(1, η(y | s − t(x_j) + t(x*_j)) / η(y | s))`` (Ju et al. 2022).
``"site"``
    Collapsed (θ integrated out; the target over records is the Bayesian-Dirichlet score times
    ``η``): for every record and node, another state proposed uniformly, accepted by the ratio
    over the node's Markov blanket (its family cell and its children's).
``"block"``
    Collapsed: ``m`` records moved between two states of one node within one parent
    configuration (both the node's family row and the moved records' rows of its children's
    families are scored); ``m`` uniform on 1..min(``block_size``, the source cell's count),
    ``block_size`` by default about the standard deviation of a cell count given its release.
``"row_block"``
    Collapsed block moves that visit every non-empty row of every node in turn, ``row_moves``
    proposals per row, the source state uniform among the row's non-empty cells
    (:mod:`pymc_rdp.distributions.augmentation_moves`): small rows, whose counts the release
    leaves most uncertain, move as often as large ones. Block sizes adapt during tuning.
``"gibbs"``
    Collapsed heat-bath updates (by default two sweeps per iteration, one for Dirichlet
    releases, followed there by pair moves): every record's state at every node drawn from its
    full conditional over the node's Markov blanket
    (:mod:`pymc_rdp.distributions.augmentation_gibbs`; records that share a Markov-blanket
    configuration share their conditional weights). With adaptation, an iteration's sweeps after
    its first visit only the *diffuse* nodes: those whose records changed state in at least half
    of their updates over the first 20 tuning iterations (then fixed, like the block sizes).
    A record moves to the states its other attributes fit, which random block moves rarely find.
``"subtree"``
    Row-block moves of a node that redraw the moved records' values at the descendants whose
    parents changed, from the collapsed predictive, so the descendants' score does not resist
    the move (:mod:`pymc_rdp.distributions.augmentation_subtree`); block sizes adapt during
    tuning.
``"child_row"``
    Subtree moves of a parent ``p`` whose records are picked from one row of a child ``w``
    (:mod:`pymc_rdp.distributions.augmentation_subtree`): for each configuration of ``w``'s
    other parents, records move from ``w``'s row with ``p = k₁`` to its row with ``p = k₂``,
    across all of ``p``'s own rows at once. Per edge as many proposals as ``p``'s subtree moves
    make; in the default for Dirichlet releases (see ``moves`` for what it gave).
``"pooled_row"``
    Child-row moves over the edges ``p → w`` where each row of ``w`` pools several of ``p``'s
    rows (``w``'s other parents a proper subset of ``p``'s;
    :func:`~pymc_rdp.distributions.augmentation_subtree.pooling_edges`), for the diffuse
    parents where a later heat-bath sweep or ``"diffuse_pair"`` singles them out (with
    adaptation, from the tuning iteration that fixes them on, none before it); otherwise for
    every parent. A diffuse parent's cells are
    loosely pinned, and the number of records in a pooled row of its child, a sum of its cells
    across the rows pooled, drifts slowly under moves of one of its rows at a time; this move
    shifts a block of records between two of the child's rows at once. An iteration in which
    it makes no proposal records a NaN acceptance rate. In no default: on Adult (occupation →
    capital-gain, the only such edge with a diffuse parent), added to the default it lifted
    some of the hardest chains of the one-minute benchmark (343 → 379 and 377 → 511 in pairs
    run side by side) but cost 4–13 % of the draws in the minute and lowered four of six pairs
    (the median 449 → 414; ``docs/performance.md``, "Pooled child-row moves"). On alarm,
    child, insurance, hailfinder, sachs and asia at N = 10⁴ no such edge has a diffuse parent.
``"ancillary"``
    The non-centred counterpart of the moves above (Yu & Meng 2011, ASIS;
    :mod:`pymc_rdp.distributions.augmentation_ancillary`): θ drawn given the records, each
    record's value written as the inverse CDF of a uniform of its own, then Metropolis moves of
    one boundary of a CPT row at a time with the uniforms fixed, the records (and their
    descendants) carried along; the acceptance is the prior times ``η``. ``K`` proposals per
    row of a node with ``K`` states, the step in records adapted during tuning.
``"swap"``
    Collapsed: two records that agree on every other node of a node's children's families
    exchange their values of the node (:mod:`pymc_rdp.distributions.augmentation_swap`), so
    only the node's own table changes, in two rows. It moves the composition of rows that the
    children's tables pool, which heat-bath updates move one record at a time. ``N``
    proposals per node with a parent outside its children's families.
``"pair"``
    Collapsed: in every group of records that share a node's Markov blanket (the heat-bath
    sweep's groups, exchangeable for the node), the node's states paired at random and the
    split of each pair's records between its two states redrawn from its conditional
    distribution, within a window of three block sizes each way with a Metropolis–Hastings
    correction when the window does not hold the whole range
    (:mod:`pymc_rdp.distributions.augmentation_pairs`). A wide count crosses its posterior in
    one step where heat-bath updates random-walk it one record at a time; in the default for
    Dirichlet releases.
``"diffuse_pair"``
    Pair moves over the diffuse nodes: with adaptation and a heat-bath sweep to tally the
    changes, from the tuning iteration that fixes them on (none before it, and none at all
    where no node is diffuse: an iteration without a proposal records a NaN rate); otherwise
    over every node. A diffuse node's records are loosely held by their Markov blanket, so a
    group's split between two states is wide, and heat-bath sweeps random-walk it one record at
    a time. On hailfinder (N = 10⁴) the slowest entries are Scenario's rows given Date, a
    diffuse root whose only child, Scenario, holds its records (they change state in 0.7 % of
    their updates, Date's in 77 %): pair moves of Date within each Scenario group redraw how
    many of the group's records sit at each date. In the default for count releases, in place
    of the third heat-bath sweep (``moves``).
``"transfer"``
    Collapsed: ``m`` records of one row move from state ``a`` to ``b`` and ``m`` of a second
    row from ``b`` to ``a``, their descendants redrawn as in a subtree move
    (:mod:`pymc_rdp.distributions.augmentation_transfer`). Each state's count summed over the
    node's rows stays as it is, which is what the tables of children that pool those rows pin;
    the contrast between the rows moves. Only for the nodes with a child that lacks one of
    their parents (:func:`~pymc_rdp.distributions.augmentation_transfer.transfer_nodes`), a
    quarter as many proposals as their subtree moves make over all of their rows (a NaN
    acceptance rate where no node has such a child). In no default (``moves``).
``"soma"``
    θ | x conjugately, then ``N`` single-offer-multiple-attempts moves (Xiong & Ju 2025,
    :mod:`pymc_rdp.distributions.augmentation_soma`): a record ``z ~ p(x | θ)`` is offered in
    place of each of ``soma_attempts`` records drawn at random, one of them is chosen in
    proportion to ``η`` after the replacement, and the move is accepted by the ratio of the
    summed weights forward and back; the record move above is the case of one attempt.

After the moves of an iteration θ is drawn from ``p(θ | x)`` (rows ``Dirichlet(α₀ + n_c)``):
together with the records it is an exact draw of the joint chain, so the CPT draws are draws of
the posterior.

Unknown N
---------
A known ``N``, declared public by the caller (``BayesianNetwork.fit(..., public_total=N)``), is
used as is. Otherwise ``N`` is private (it is what an add/remove neighbour changes) and the
sampler puts a prior on it (``n_prior``) and adds birth/death moves of records
(:mod:`pymc_rdp.distributions.unknown_total`); the released tables' noisy totals inform ``N``
and nothing more is charged. :meth:`DataAugmentation.from_network` uses a flat prior up to the
largest released total plus ten noise sds for Gaussian/Laplace releases; a Dirichlet release
carries no total, so there ``n_prior`` must be given (or ``N`` declared public).

PyMC
----
:class:`DataAugmentation` is a PyMC step method
(:class:`~pymc_rdp.distributions.augmentation_step.AugmentationStep`):
``with bn.model: pm.sample(step=da)`` sets the model's CPT variables; :meth:`sample` is the
fast path with the same chains. Exactness is tested against enumeration on a 3-node network
(``tests/distributions/test_distributions_data_augmentation.py``, and with an unknown ``N`` in
``tests/distributions/test_augmentation_step.py``).

This module holds the sampler; its parts live by job in sibling modules: the releases' densities
(:class:`FamilyObservation`, :data:`OBSERVATIONS`) in
:mod:`pymc_rdp.distributions.augmentation_observations`, the kernels' arrays in
:mod:`pymc_rdp.distributions.augmentation_arrays`, and the checks and defaults of the states,
moves and move sizes in :mod:`pymc_rdp.distributions.augmentation_settings`.
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from pymc_rdp._validation import check_positive_scalar
from pymc_rdp.distributions.augmentation_arrays import (  # RECORD_DTYPE: re-exported here
    RECORD_DTYPE,
    draws_array,
    network_arrays,
)
from pymc_rdp.distributions.augmentation_observations import (
    OBSERVATIONS,
    FamilyObservation,
    _observation,
    register_observation,
)
from pymc_rdp.distributions.augmentation_records import (
    RECORD_MOVES,
    internal_layout,
    released_columns,
)
from pymc_rdp.distributions.augmentation_settings import (
    MOVES,
    birth_death_setting,
    check_moves,
    check_states,
    default_block_size,
    per_node_flag,
    per_node_setting,
)
from pymc_rdp.distributions.augmentation_soma import DEFAULT_ATTEMPTS
from pymc_rdp.distributions.augmentation_step import AugmentationStep

__all__ = [
    "MOVES",
    "OBSERVATIONS",
    "DataAugmentation",
    "FamilyObservation",
    "register_observation",
    "sample_augmentation",
]

#: the package's directory: a warning is attributed to the first caller outside it (through
#: ``bn.sample`` or :func:`sample_augmentation` as well as directly)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: acceptance rate the row-block sizes adapt to during tuning
_TARGET_ACCEPT = 0.35
#: default row-block proposals per node and iteration, at least (spread over its rows)
_ROW_BUDGET = 1000
#: ... but for count releases no more than this many per row: a node with few rows needs no
#: more to mix (on alarm the roots' 1000 proposals per iteration cost most of the time and added
#: little ESS). The cap was 30 until 2026-12-05; with the heat-bath sweeps in the default, a
#: row's later proposals added less than they cost (``docs/performance.md``, "A row's subtree
#: proposals capped at 15")
_ROW_CAP = 15
#: ... unless the node has more states than half the cap: then two proposals per state, up to
#: :data:`_ROW_CAP_MAX` (a proposal picks an ordered pair of states; hailfinder's 11-state
#: Scenario and ScnRelPlFcst mixed slower at 15)
_ROW_CAP_PER_STATE = 2
_ROW_CAP_MAX = 30
#: count releases: the subtree moves of nodes with more states than this draw their pair of
#: states in proportion to its records (hailfinder's ScnRelPlFcst, whose rows keep most records
#: on the diagonal, was its slowest node with the pairs drawn uniformly; ``docs/performance.md``,
#: "State pairs weighted by their counts"). No node of asia, sachs, child, insurance or alarm has
#: more than seven states.
_WEIGHTED_PAIRS_ABOVE = 7
#: ... and for count releases no fewer than this many per row: a node whose table has more cells
#: than the budget (Adult's occupation, 320 rows × 15 states) made one proposal per state and
#: row before, 4.8 times the budget; at the floor, an Adult iteration was 12 % shorter and the
#: entries' 1 % quantile of ESS per second 9–14 % higher (two releases; the minimum 0.94 and
#: 1.21 times). No node of asia, sachs, child, insurance, alarm or hailfinder is affected.
_ROW_FLOOR = 2
#: the same when every release is a Dirichlet-mechanism release: its default block sizes,
#: sqrt(N / (cells r)), are hundreds of records, so each proposal moves many more of them
_DIRICHLET_ROW_BUDGET = 20
#: the default moves when every release is a Dirichlet-mechanism release (and N is known)
_DIRICHLET_MOVES = ("gibbs", "pair", "subtree", "child_row")
#: half-width of a pair move's window, in block sizes (about a cell count's sd given its release)
_PAIR_WINDOW = 3.0
#: groups of fewer records make no pair moves: a lone record's pair move is a heat-bath update
#: over two states, which the sweep already makes (on Adult's Dirichlet release they were 27 %
#: of a pair sweep's time)
_PAIR_MIN_GROUP = 2
#: how far a node's block sizes may adapt up, in its ``block_size``, for a Gaussian or Laplace
#: release: its block size is already about the sd of a cell count given the release, and larger
#: blocks cost time without mixing (alarm, N = 10⁴, three releases: minimum ESS per second 1.7×
#: and its 1 % quantile's 1.4× with blocks up to 1× instead of 4×; insurance 1.4×, child
#: 1.0–1.1×, Adult a wash; on alarm 0.5× and 2× did worse than 1×, 8× worse than 4×)
_COUNT_SIZE_CAP = 1
#: the same for other releases: a Dirichlet release's default block size is a rougher guess and
#: its blocks need the room (on Adult, blocks up to 1× lost 15 % at the 1 % quantile)
_SIZE_CAP = 4
#: the heat-bath sweeps after an iteration's first visit only the nodes whose records changed
#: state in at least this share of their updates in the first ``_DIFFUSE_AFTER`` tuning
#: iterations: where a record's conditional is that spread out, a row's counts drift like a
#: Pólya urn's (lag-one correlation about n / (n + K α₀) per sweep for a row of n records), and
#: repeated sweeps move them; where records rarely change state, repeated sweeps cost the same
#: and move little, and block moves carry those counts (measured in ``moves``)
_DIFFUSE_SHARE = 0.5
#: tuning iterations whose sweeps measure those shares (after them the nodes are fixed)
_DIFFUSE_AFTER = 20
#: a node's transfer moves per sweep, as a share of its subtree moves' proposals over all of
#: its rows (insurance, N = 10⁴, beside the default moves, one seed: 4.11 minimum ESS per CPU
#: second with 0.25, 3.54 with 0.5, 3.66 with 1; ``docs/performance.md``, "Transfer moves")
_TRANSFER_SHARE = 0.25


def _size_caps(kinds: np.ndarray, sizes: list[int]) -> list[int]:
    """The largest size each node's blocks may adapt to: its block size times
    :data:`_COUNT_SIZE_CAP` if its release's density is Gaussian or Laplace, :data:`_SIZE_CAP`
    otherwise."""
    from pymc_rdp.distributions import _augmentation_kernels as k

    counts = (k.KIND_GAUSSIAN, k.KIND_LAPLACE)
    return [
        max(1, (_COUNT_SIZE_CAP if int(kind) in counts else _SIZE_CAP) * m)
        for kind, m in zip(kinds, sizes, strict=True)
    ]


# --------------------------------------------------------------------------- the sampler


def _diffuse_nodes(tally: np.ndarray) -> np.ndarray:
    """Per node, whether its records changed state in at least :data:`_DIFFUSE_SHARE` of their
    heat-bath updates (``tally``: changed and updated per node); a node never updated is not."""
    changed, updated = tally[:, 0], tally[:, 1]
    return changed >= _DIFFUSE_SHARE * np.maximum(updated, 1)


def _adapted(size: float, rate: float, it: int, cap: int) -> float:
    """One Robbins–Monro step of a block size on its log towards the acceptance rate
    :data:`_TARGET_ACCEPT` (step ``1/sqrt(1 + it)``), kept in ``1..cap``."""
    step = math.exp((rate - _TARGET_ACCEPT) / math.sqrt(1.0 + it))
    return min(cap, max(1.0, size * step))


class DataAugmentation(AugmentationStep):
    """Exact data-augmentation sampler of a Bayesian network's CPTs given released family tables.

    Also a PyMC step method (:class:`~pymc_rdp.distributions.augmentation_step.AugmentationStep`):
    ``with bn.model: pm.sample(step=da)`` (or ``with da.build_model(): ...``) sets the model's
    ``{node}_cpt`` / ``{node}_family`` variables from the chain's latent records;
    :meth:`sample` is the fast path of the same chains.

    Parameters
    ----------
    structure : dict or NetworkStructure
        ``{node: [parents, ...]}`` (a DAG; the parents' order fixes the configuration order,
        first parent slowest, as in :class:`pymc_rdp.BayesianNetwork`).
    states : dict
        ``node -> list of states`` (only the number of states matters for sampling; the labels
        name the coordinates).
    releases : dict
        ``node -> Release`` (noisy family table, flat or (configurations, states)) or
        ``node -> (values, mechanism)`` (e.g. a Dirichlet-released CPT and its
        :class:`pymc_rdp.DirichletMechanism`). Every node needs one. For a node released record
        by record through randomized response (:class:`pymc_rdp.CategoricalRandomizedResponse`
        over its states, or :class:`pymc_rdp.RandomizedResponse` for two), ``(values,
        mechanism)`` with one released state code per record, in the records' order across
        nodes: its family table is then unreleased, ``n_records`` must be given, and the moves
        are those of :data:`~pymc_rdp.distributions.augmentation_records.RECORD_MOVES`, which
        keep the released values fixed (:mod:`pymc_rdp.distributions.augmentation_records`).
    n_records : int or None
        The number of records ``N`` when known and public; ``None`` for an unknown ``N`` (then
        ``n_prior`` is required).
    n_prior : array_like, optional
        Unknown ``N`` only: prior probabilities ``p(N = 0), ..., p(N = N_max)`` (any positive
        scale); the chain adds birth/death moves (module notes).
    alpha0 : float
        Concentration of the ``Dirichlet(α₀)`` prior of every CPT row.
    moves : sequence of str
        The moves of one iteration, in order, each one of :data:`MOVES` ("record", "site",
        "block", "row_block", "gibbs", "subtree", "child_row", "pooled_row", "ancillary",
        "swap", "soma", "pair", "diffuse_pair", "transfer"; module notes). A move listed k
        times runs k times per iteration, and its acceptance rate is the mean of its runs. The
        defaults:

        * ``("record",)`` for an unknown N (the collapsed moves need a fixed N);
        * ``("gibbs", "pair", "subtree", "child_row")`` when every release is a
          Dirichlet-mechanism release;
        * ``("gibbs", "gibbs", "subtree", "diffuse_pair")`` otherwise; with adaptation, the
          second sweep and the pair moves visit only the diffuse nodes (module notes). The pair
          moves replaced a third heat-bath sweep; the two are compared in
          ``docs/performance.md`` ("Pair moves over the diffuse nodes").

        They were chosen by the minimum bulk ESS per second over the CPT entries of rows holding
        >= 20 records, on Adult, alarm, child, insurance, sachs and asia; no schedule was the
        best on every network. ``"ancillary"``, ``"swap"``, ``"soma"``, ``"pooled_row"`` and
        ``"transfer"`` are in no default: none of them gained on every network measured. Every
        measurement behind these choices is kept in ``docs/performance.md`` ("How the default
        moves were chosen").
    block_size : int or dict, optional
        Largest block ``m`` per node (default: about the sd of a cell count given its release,
        for Dirichlet releases ``sqrt(N / (cells · r))``). Row-block sizes adapt during tuning
        within 1..``block_size`` for Gaussian and Laplace releases, 1..4 ``block_size``
        otherwise (:meth:`run_chain`).
    block_moves : int or dict, optional
        Block proposals per node per iteration (default ``ceil(2 N / block_size)``).
    row_moves : int or dict, optional
        Row-block proposals per non-empty row of a node per iteration (default
        ``max(F, min(C, ceil(B / rows)))``, ``rows`` the node's parent configurations, ``B`` =
        1000, ``F`` = 2 and the cap ``C = min(30, max(15, 2 K))``, ``K`` the node's states;
        when every release is a Dirichlet-mechanism release, whose default blocks hold hundreds
        of records, ``max(K, ceil(20 / rows))``); subtree moves make as many, each redrawing
        only the descendants whose parents changed (when each redrew them all, a node with more
        than five descendants made proportionally fewer). The cap is measured in
        ``docs/performance.md`` ("A row's subtree proposals capped at 15").
    weighted_pairs : bool or dict, optional
        Per node, whether a subtree proposal draws its pair of states in proportion to the
        records in the two cells
        (:func:`~pymc_rdp.distributions.augmentation_moves.weighted_row_proposal`) rather than
        its source uniformly among the non-empty cells. Default: for count releases, the nodes
        with more than seven states (hailfinder's ScnRelPlFcst, whose rows keep most records on
        the diagonal; Adult's age, education and occupation), measured in
        ``docs/performance.md`` ("State pairs weighted by their counts"); none when every
        release is a Dirichlet-mechanism release.
    accountant : Accountant, optional
        Stored (as JSON) with the results; never charged (sampling is post-processing).
    birth_death_moves : int, optional
        Unknown ``N`` only: birth/death proposals per iteration (default
        ``max(20, 2 sd)``, sd the largest noise sd of a released total).
    sweeps : int
        Iterations of the moves per draw of the PyMC step (``pm.sample(step=...)``).
    soma_attempts : int
        ``"soma"`` moves only: the records each offer is tried against (default 10).

    Raises
    ------
    ValueError
        A node without a release, a release whose shape disagrees with the structure, a
        mechanism without a count density here, a post-processed (clamped/rounded/normalised)
        release, a bad ``n_records`` or ``alpha0``, an unknown move; released records whose
        number is not ``n_records``, whose codes or number of values disagree with the node's
        states, with an unknown ``N`` or with a move that rewrites them.
    """

    def __init__(
        self,
        structure: Any,
        states: Mapping[str, Sequence[Any]],
        releases: Mapping[str, Any],
        n_records: int,
        *,
        alpha0: float = 1.0,
        moves: Sequence[str] | None = None,
        block_size: int | Mapping[str, int] | None = None,
        block_moves: int | Mapping[str, int] | None = None,
        row_moves: int | Mapping[str, int] | None = None,
        weighted_pairs: bool | Mapping[str, bool] | None = None,
        accountant: Any = None,
        n_prior: Any = None,
        birth_death_moves: int | None = None,
        sweeps: int = 1,
        soma_attempts: int = DEFAULT_ATTEMPTS,
    ) -> None:
        from pymc_rdp.bn.structure import NetworkStructure, config_labels, parse_structure

        if isinstance(structure, NetworkStructure):
            self.structure = structure
        else:
            self.structure, _ = parse_structure(structure)
        nodes = self.structure.order
        self.states = check_states(states, nodes)
        self.cards = {v: len(self.states[v]) for v in nodes}
        self.n_log_prior: np.ndarray | None = None
        if n_records is None and n_prior is not None:
            from pymc_rdp.distributions.unknown_total import check_total_prior

            self.n_log_prior = check_total_prior(n_prior)
            self.n_records = None
        elif n_prior is not None:
            raise ValueError("give n_records (a public N) or n_prior (an unknown N), not both")
        elif isinstance(n_records, bool) or not isinstance(n_records, (int, np.integer)):
            raise TypeError(
                "n_records must be an integer (the public number of records); for an unknown N "
                "(add/remove neighbours) pass n_records=None and a prior n_prior="
            )
        elif n_records < 1:
            raise ValueError(f"n_records must be >= 1, got {n_records}")
        else:
            self.n_records = int(n_records)
        alpha0 = float(alpha0)
        if not (math.isfinite(alpha0) and alpha0 > 0):
            raise ValueError(f"alpha0 must be finite and > 0, got {alpha0!r}")
        self.alpha0 = alpha0
        self.moves = check_moves(moves, known_total=self.n_records is not None)
        if not isinstance(releases, Mapping):
            raise TypeError("releases must be a dict node -> release")
        missing = [v for v in nodes if v not in releases]
        if missing:
            raise ValueError(
                f"releases: no release for nodes {missing}; every family table must be released "
                "(a node without one has no observation of its records)"
            )
        extra = [v for v in releases if v not in self.cards]
        if extra:
            raise ValueError(f"releases: {extra} are not nodes of the structure")
        self.configs = {v: config_labels(self.structure.parents[v], self.states) for v in nodes}
        self.observations = {
            v: _observation(v, releases[v], (len(self.configs[v]), self.cards[v])) for v in nodes
        }
        from pymc_rdp.distributions._augmentation_kernels import KIND_DIRICHLET

        # every release a Dirichlet-mechanism release (no additive noise sd)
        dirichlet = all(o.kind == KIND_DIRICHLET for o in self.observations.values())
        randomized = [v for v in nodes if self.observations[v].records is not None]
        if randomized and self.n_records is None:
            raise ValueError(
                f"releases: {randomized} are released record by record (randomized response), "
                "which publishes N: pass n_records=N"
            )
        if randomized and moves is not None and set(self.moves) - set(RECORD_MOVES):
            raise ValueError(
                f"moves={self.moves!r}: with values released record by record (randomized "
                f"response) the moves are those of {RECORD_MOVES}, which keep the released "
                "values fixed"
            )
        if moves is None and self.n_records is not None and dirichlet:
            # one heat-bath sweep per iteration: chosen when a sweep cost about 2.5 times one
            # for additive noise (the log-gamma terms; tabulated since, about 1.2 times on Adult);
            # pair moves after it, which cross a loosely pinned count in one step
            self.moves = _DIRICHLET_MOVES
        self.accountant = accountant
        self.block_size = per_node_setting(
            block_size,
            "block_size",
            lambda v: default_block_size(
                self.observations[v], len(self.configs[v]) * self.cards[v], self._n_scale
            ),
            nodes,
        )
        self.block_moves = per_node_setting(
            block_moves,
            "block_moves",
            lambda v: math.ceil(2 * self._n_scale / self.block_size[v]),
            nodes,
        )
        budget = _DIRICHLET_ROW_BUDGET if dirichlet else _ROW_BUDGET

        def per_row_default(v: str) -> int:
            # a Dirichlet release's rows get one proposal per state at least; a count release's
            # a share of the budget, at least _ROW_FLOOR
            share = math.ceil(budget / len(self.configs[v]))
            if dirichlet:  # the budget is under the cap
                return max(self.cards[v], share)
            cap = min(_ROW_CAP_MAX, max(_ROW_CAP, _ROW_CAP_PER_STATE * self.cards[v]))
            return max(_ROW_FLOOR, min(cap, share))

        self.row_moves = per_node_setting(row_moves, "row_moves", per_row_default, nodes)
        self.weighted_pairs = per_node_flag(
            weighted_pairs,
            "weighted_pairs",
            lambda v: not dirichlet and self.cards[v] > _WEIGHTED_PAIRS_ABOVE,
            nodes,
        )
        self.birth_death_moves = birth_death_setting(
            birth_death_moves,
            self.observations.values(),
            (len(self.configs[v]) * self.cards[v] for v in nodes),
        )
        if (
            isinstance(soma_attempts, bool)
            or not isinstance(soma_attempts, (int, np.integer))
            or soma_attempts < 1
        ):
            raise ValueError(f"soma_attempts must be an integer >= 1, got {soma_attempts!r}")
        self.soma_attempts = int(soma_attempts)
        # largest Markov-blanket key space the heat-bath sweep groups (None: the kernel's own)
        self._key_space_limit: float | None = None
        self._build_arrays()
        self._init_step(sweeps)

    # ------------------------------------------------------------ construction

    @classmethod
    def from_network(cls, bn: Any, **options: Any) -> DataAugmentation:
        """The sampler of a fitted :class:`pymc_rdp.BayesianNetwork`'s releases.

        Uses ``bn.releases`` (noisy tables, or Dirichlet-released CPTs with
        ``bn.family_mechanism``), ``bn.states``, ``bn.n_records``, ``bn.alpha0`` and
        ``bn.accountant``; ``options`` go to the constructor. A number of records declared
        public (``fit(..., public_total=N)``) is used as known; otherwise ``N`` is unknown:
        ``options["n_prior"]`` if given, else (Gaussian/Laplace releases) a flat prior from 0 to
        the largest released total plus ten noise sds
        (:func:`pymc_rdp.distributions.unknown_total.default_total_prior`).

        Raises
        ------
        ValueError
            The network is not fitted, was fitted without privacy (its exact posterior is
            conjugate), is the naive baseline's or a joint model's fit of unsupported releases,
            or is a Dirichlet fit whose ``N`` was not declared public and no ``n_prior`` given.
        """
        if not getattr(bn, "_fitted", False):
            raise ValueError("the network is not fitted: call bn.fit(df, ...) first")
        if bn.mechanism == "none" or not bn.releases:
            raise ValueError(
                "the network has no releases (mechanism='none'): its posterior is conjugate, "
                "use bn.sample()"
            )
        releases = dict(bn.releases)
        # set by fit only when the caller declared N public (public_total=N)
        totals = {getattr(r, "total", None) for r in releases.values()}
        n = totals.pop() if len(totals) == 1 else None
        # None for randomised records, whose releases carry N (public_total)
        probabilities = getattr(bn.family_mechanism, "releases_probabilities", False)
        if n is None and options.get("n_prior") is None:
            if probabilities:
                raise ValueError(
                    "the number of records N was not declared public (fit(..., public_total=N)) "
                    "and a Dirichlet release carries no total: pass n_prior= (prior "
                    "probabilities of N = 0..N_max) for an unknown N"
                )
            from pymc_rdp.bn.structure import config_labels
            from pymc_rdp.distributions.unknown_total import default_total_prior

            cells = {
                v: len(config_labels(bn.structure.parents[v], bn.states)) * len(bn.states[v])
                for v in bn.nodes
            }
            options["n_prior"] = default_total_prior(releases, cells)
        options.setdefault("accountant", bn.accountant)
        options.setdefault("alpha0", bn.alpha0)
        n_records = None if n is None else round(float(n))
        if n_records is not None and options.get("n_prior") is not None:
            raise ValueError("n_prior: the network's N was declared public; no prior is needed")
        return cls(bn.structure, bn.states, releases, n_records, **options)

    @property
    def _n_scale(self) -> int:
        """``N``, or for an unknown ``N`` the largest ``N`` of its prior (array sizes)."""
        if self.n_records is not None:
            return self.n_records
        assert self.n_log_prior is not None
        return int(self.n_log_prior.size - 1)

    def _build_arrays(self) -> None:
        """Lay out the kernels' arrays (see
        :func:`pymc_rdp.distributions.augmentation_arrays.network_arrays`)."""
        layout, cards, configs, observations, self._released = internal_layout(
            self.structure, self.cards, self.configs, self.observations
        )
        # the released values, as the columns of the records after the network's nodes
        self._released_values = released_columns(
            self.observations, self._released, self.n_records
        ).astype(RECORD_DTYPE)
        self._net, self._obs, self._alpha, index = network_arrays(
            layout, cards, configs, observations, self.alpha0, self._n_scale
        )
        self._index = {v: index[v] for v in self.nodes}

    # ------------------------------------------------------------------ helpers

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.structure.order

    @property
    def coords(self) -> dict[str, list[str]]:
        """``{node}_cell`` for every node: the flat CPT cells, labelled as
        :attr:`pymc_rdp.BayesianNetwork.coords`."""
        from pymc_rdp.bn.structure import cell_labels

        return {
            f"{v}_cell": cell_labels(v, self.structure.parents[v], self.states) for v in self.nodes
        }

    def initial_cpts(self) -> dict[str, np.ndarray]:
        """CPTs read from the releases, the start of every chain: noisy counts less one noise
        sd, clipped at zero, plus 1e-3 (a cell whose release is within the noise of zero starts
        near empty, as most of a sparse table's cells are), normalised; or the released
        Dirichlet rows plus 1e-3. Only the burn-in depends on this choice."""
        out = {}
        for v in self.nodes:
            o = self.observations[v]
            shape = (len(self.configs[v]), self.cards[v])
            if o.logt is not None:
                t = np.exp(o.logt).reshape(shape) + 1e-3
            else:
                t = np.maximum(o.y.reshape(shape) - (o.count_sd or 0.0), 0.0) + 1e-3
            out[v] = t / t.sum(axis=1, keepdims=True)
        return out

    def _records(self, rng: np.random.Generator) -> np.ndarray:
        from pymc_rdp.bn.structure import forward_sample

        codes = forward_sample(self.structure, self.initial_cpts(), self.cards, self.n_records, rng)
        x = np.stack([codes[v] for v in self.nodes], axis=1).astype(RECORD_DTYPE)
        if self._released:  # a node released record by record starts at its released values
            for c, (_, at, _) in enumerate(self._released):
                x[:, at] = self._released_values[:, c]
            x = np.concatenate([x, self._released_values], axis=1)
        return np.ascontiguousarray(x)

    def _checked_records(self, records: Any, n_max: int | None = None) -> np.ndarray:
        """``records`` as a chain's state: (records × nodes) integer codes, each below its
        node's number of states (the kernels index the tables with them unchecked); with an
        unknown ``N``, any number of records up to ``n_max``."""
        r = np.asarray(records)
        d = len(self.nodes) + len(self._released)  # and one column per released node's values
        if n_max is None:
            if r.shape != (self.n_records, d):
                raise ValueError(f"records must have shape {(self.n_records, d)}")
        elif r.ndim != 2 or r.shape[1] != d or r.shape[0] > n_max:
            raise ValueError(f"records must have shape (N, {d}) with N <= {n_max}")
        if not (np.issubdtype(r.dtype, np.integer) or r.dtype == np.bool_):
            raise TypeError(f"records must hold integer state codes, got dtype {r.dtype}")
        if r.size and (r.min() < 0 or bool((r >= self._net[0]).any())):
            raise ValueError(
                "records must hold state codes from 0 to each node's number of states − 1"
            )
        if self._released and not np.array_equal(r[:, len(self.nodes) :], self._released_values):
            raise ValueError(
                "records: the columns after the network's nodes must hold the released values "
                "(randomized response), unchanged"
            )
        return np.array(r, dtype=RECORD_DTYPE)

    def flat_to_cpts(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        """Split a flat cell vector into ``node -> (configurations, states)`` arrays."""
        off = self._net[4]
        return {
            v: theta[off[i] : off[i + 1]].reshape(len(self.configs[v]), self.cards[v])
            for i, v in enumerate(self.nodes)
        }

    # ----------------------------------------------------------------- sampling

    def run_chain(
        self,
        draws: int,
        tune: int,
        seed: int,
        records: np.ndarray | None = None,
        adapt: bool | None = None,
        deadline: float | None = None,
        out: np.ndarray | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
        """One chain: ``tune`` discarded iterations, then ``draws`` kept.

        With ``adapt`` (default: when the chain starts fresh, ``records`` None) the largest
        row-block size of every node adapts during the ``tune`` iterations towards an acceptance
        rate of 0.35 (Robbins–Monro steps on its log), between 1 and :attr:`block_size` for a
        Gaussian or Laplace release and up to 4 × :attr:`block_size` otherwise, and after the
        first ``min(20, tune)`` iterations an iteration's heat-bath sweeps after its first visit
        only the nodes whose records changed state in at least half of their updates until then
        (and ``"pooled_row"`` moves start, over the edges of those nodes); the kept iterations
        use the sizes and nodes reached, so each is one fixed exact kernel. Without it the sizes
        are :attr:`block_size`, every sweep visits every node and the pooled child-row moves use
        every edge they can.

        With ``deadline`` (a ``time.perf_counter()`` value) the chain keeps no further draw once
        a kept draw ends at or after it; the tuning iterations always run and at least one draw
        is kept. The chain stops on the clock alone, never on its state, so the draws kept are
        the first ones of the same chain run to ``draws``.

        ``out``, a float64 array of shape (``draws``, cells), receives the draws in place of a
        new array (:meth:`sample` hands each chain its slice of one array, which it then need
        not copy).

        Returns
        -------
        theta : numpy.ndarray
            (kept draws, cells) flat CPT draws (``out``, or its first rows, when given).
        stats : dict
            Acceptance rate per kept iteration of each move in :attr:`moves`.
        records : numpy.ndarray
            The final latent records (records × nodes, state codes as int32, this module's
            ``RECORD_DTYPE``), then one column per node released record by record: its
            released values, unchanged (:mod:`pymc_rdp.distributions.augmentation_records`).
        """
        from pymc_rdp.distributions import _augmentation_kernels as k
        from pymc_rdp.distributions import augmentation_ancillary as ka
        from pymc_rdp.distributions import augmentation_gibbs as kg
        from pymc_rdp.distributions import augmentation_moves as km
        from pymc_rdp.distributions import augmentation_pairs as kp
        from pymc_rdp.distributions import augmentation_soma as ko
        from pymc_rdp.distributions import augmentation_subtree as kt
        from pymc_rdp.distributions import augmentation_swap as ks
        from pymc_rdp.distributions import augmentation_transfer as kx
        from pymc_rdp.distributions.compile_ahead import compile_ahead

        rng = np.random.default_rng(seed)
        k.seed(int(rng.integers(0, 2**31 - 1)))
        adapt = records is None if adapt is None else bool(adapt)
        x = self._records(rng) if records is None else self._checked_records(records)
        net, obs = self._net, self._obs
        n_cells = int(net[4][-1])
        cell_n = np.zeros(n_cells, dtype=np.int64)
        row_n = np.zeros(int(net[5][-1]), dtype=np.int64)
        k.tabulate(x, net, cell_n, row_n)
        theta = np.empty(n_cells)
        buf = np.empty(int(net[0].max()))
        out = draws_array(out, draws, n_cells)
        stats = {f"accept_{m}": np.empty(draws) for m in self.moves}
        nodes = range(len(self.nodes))
        blocks = [self.block_moves[v] for v in self.nodes]
        sizes = [self.block_size[v] for v in self.nodes]
        per_row = [self.row_moves[v] for v in self.nodes]
        # row-block sizes adapt to an acceptance near _TARGET_ACCEPT during tuning only (the
        # kept draws use fixed sizes, so each kept transition is one fixed exact kernel)
        row_size = [float(m) for m in sizes]
        size_cap = _size_caps(obs[0][: len(sizes)], sizes)
        tree_size = list(row_size)
        key_limit = kg.KEY_SPACE_LIMIT if self._key_space_limit is None else self._key_space_limit
        one_by_one = kg.one_by_one_nodes(net, x.shape[0], key_limit)
        n_ch, ch = net[6], net[7]
        n_all = len(net[0])  # the nodes, then any released node's extra child (fixed values)
        desc, n_desc = kt.descendants(
            {i: [int(w) for w in ch[i, : n_ch[i]]] for i in range(n_all)}, n_all
        )
        # subtree moves make per_row proposals too: each redraws only the descendants whose
        # parents changed, so a node with many descendants costs no more per proposal (alarm,
        # N = 10⁴, where a root has about 30: minimum ESS per second 1.1–1.9× over three
        # releases against proposals shrunk beyond six nodes redrawn, when each redrew them all)
        # child-row moves: per edge (p, w) as many proposals as p's subtree moves make, spread
        # over the configurations of w's other parents
        parents = {i: [int(q) for q in net[2][i, : net[1][i]]] for i in nodes}
        edges = kt.child_row_edges(parents, desc, n_desc)
        rows_of = [int((net[4][i + 1] - net[4][i]) // net[0][i]) for i in nodes]

        def edge_settings(units: list[tuple[int, int]]) -> tuple[list, list, list]:
            """Per edge (p, w): the proposals, the starting block size and its cap (p's)."""
            per = [
                max(1, math.ceil(per_row[p] * rows_of[p] * int(net[0][p]) / rows_of[w]))
                for p, w in units
            ]
            return per, [float(sizes[p]) for p, _ in units], [size_cap[p] for p, _ in units]

        per_edge, edge_size, edge_cap = edge_settings(edges)
        # transfer moves: per node a share of its subtree moves' proposals over all its rows
        per_transfer = [
            max(1, math.ceil(_TRANSFER_SHARE * per_row[i] * rows_of[i])) if pooled_rows else 0
            for i, pooled_rows in enumerate(kx.transfer_nodes(parents))
        ]
        # pooled child-row moves: the edges whose child's rows pool several of the parent's, as
        # many proposals per edge as child-row moves make, for the diffuse parents (``pool_on``:
        # set when the diffuse nodes are, from the start where none are singled out)
        pooled = kt.pooling_edges(parents)
        per_pool, pool_size, pool_cap = edge_settings(pooled)
        trees = [(i, self.weighted_pairs[v]) for i, v in enumerate(self.nodes)]
        # ancillary moves: θ and the records' uniforms live only within the move
        anc_size = [float(m) for m in sizes]
        anc_per_row = [int(net[0][i]) for i in nodes]
        u = np.empty(x.shape) if "ancillary" in self.moves else np.empty((0, 0))
        anc_units = [(theta, u, i) for i in nodes]  # θ and u are filled in place per move
        # swap moves: N proposals per node whose rows its children's tables pool
        n_ctx, ctx, swappable = ks.swap_contexts(net[1], net[2], n_ch, ch, net[0])
        perm = np.arange(self.n_records, dtype=np.int64)  # soma: the subsets' shuffle
        # pair moves: windows of _PAIR_WINDOW block sizes each way, log k! up to N
        pair_width = np.ones(n_all, dtype=np.int64)
        pair_width[: len(sizes)] = [max(1, round(_PAIR_WINDOW * m)) for m in sizes]
        pairing = {"pair", "diffuse_pair"} & set(self.moves)
        log_fact = kp.log_factorials(self.n_records if pairing else 0)
        # heat-bath sweeps: an iteration's first visits every node; with adaptation, the later
        # ones visit the nodes found diffuse in the first tuning iterations (_DIFFUSE_SHARE)
        every_node = np.zeros(n_all, dtype=np.bool_)  # never a released node's extra child
        every_node[: len(self.nodes)] = True
        repeat_nodes = every_node
        tally = np.zeros((n_all, 2), dtype=np.int64)
        # ... found where a move visits them: a later sweep, or pair moves after a sweep (the
        # sweeps tally the changes); otherwise no node is singled out
        uses_diffuse = self.moves.count("gibbs") > 1 or (
            "gibbs" in self.moves and "diffuse_pair" in self.moves
        )
        decide = min(_DIFFUSE_AFTER, tune) if adapt and uses_diffuse else -1

        def pooled_on() -> list[int]:
            """The pooled edges whose parent is diffuse (every one where none is singled out)."""
            return [e for e, (p, _) in enumerate(pooled) if repeat_nodes[p]]

        pool_on = pooled_on() if decide < 0 else []

        # subtree-type moves read the predictive's logarithms from tables, made before the first
        # such move: the helper compiles their kernel meanwhile (its compilation here, 0.3 s on
        # Adult, came before the first move's), and ``typed_predictive`` stands in for them
        # until then (the helper needs their types only)
        predictive = None
        predictive_moves = {"subtree", "child_row", "pooled_row", "transfer"} & set(self.moves)
        typed_predictive = (
            self._alpha,
            np.empty((0, 0)),
            np.empty(0, dtype=np.int64),
            np.empty(0, dtype=np.int64),
        )

        def predictive_tables() -> tuple[np.ndarray, ...]:
            logs, num_of, den_of = kt.predictive_logs(self._alpha, net[0], self.n_records)
            num_of[len(self.nodes) :] = -1  # released values: kept, never drawn
            return (self._alpha, logs, num_of, den_of)

        def descend(sweep, units, per, size, cap, it, prior, chosen=None):
            """One sweep of subtree-type moves over ``units`` (nodes or edges; those at the
            indices ``chosen`` only, when given) at iteration ``it``, ``prior`` the sweep's prior
            argument; block sizes adapt during tuning. Returns the acceptance rate."""
            acc = prop = 0
            for e in range(len(units)) if chosen is None else chosen:
                a, p = sweep(
                    *units[e], per[e], round(size[e]), prior, desc, n_desc,
                    x, net, obs, cell_n, row_n,
                )  # fmt: skip
                acc += a
                prop += p
                if adapt and it < tune and p:
                    size[e] = _adapted(size[e], a / p, it, cap[e])
            return acc / max(1, prop)

        # the kernels the chain first calls after its first move's are compiled meanwhile by a
        # helper process (compile_ahead), where neither this process nor numba's cache has them
        ahead: list[tuple[Any, tuple]] = []
        if self.moves[0] not in {"record", "soma", "ancillary"}:  # these draw θ first
            ahead.append((k.draw_theta, (cell_n, self._alpha, net, theta, buf)))
        if "diffuse_pair" in self.moves:  # first called once the diffuse nodes are known
            ahead.append((kp.pair_sweep, (
                x, net, obs, cell_n, row_n, pair_width, log_fact, key_limit, every_node,
                _PAIR_MIN_GROUP,
            )))  # fmt: skip
        if "subtree" in self.moves[1:]:
            ahead.insert(0, (kt.subtree_sweep, (
                *trees[0], per_row[0], round(tree_size[0]), typed_predictive, desc, n_desc,
                x, net, obs, cell_n, row_n,
            )))  # fmt: skip
        if "transfer" in self.moves[1:]:
            ahead.insert(0, (kx.transfer_sweep, (
                0, per_transfer[0], round(tree_size[0]), typed_predictive, desc, n_desc,
                x, net, obs, cell_n, row_n,
            )))  # fmt: skip
        # child-row and pooled child-row moves share the kernel and its argument types
        for move, units, per, size in (
            ("child_row", edges, per_edge, edge_size),
            ("pooled_row", pooled, per_pool, pool_size),
        ):
            if move in self.moves[1:] and units:
                ahead.insert(0, (kt.child_row_sweep, (
                    *units[0], per[0], round(size[0]), typed_predictive, desc, n_desc,
                    x, net, obs, cell_n, row_n,
                )))  # fmt: skip
                break
        if predictive_moves and self.moves[0] not in predictive_moves:
            ahead.insert(1, (kt.predictive_logs, (self._alpha, net[0], self.n_records)))
        # the later moves that call a kernel handed ahead (θ's draw in the first three)
        calls_ahead = {
            "record",
            "soma",
            "ancillary",
            "subtree",
            "child_row",
            "pooled_row",
            "diffuse_pair",
            "transfer",
        }
        with compile_ahead(ahead) as helper:
            for it in range(tune + draws):
                if it == decide:
                    if tally[:, 1].any():
                        repeat_nodes = _diffuse_nodes(tally)
                    pool_on = pooled_on()
                rates, sums, runs = {}, {}, {}
                for m, move in enumerate(self.moves):
                    if it == 0 and m > 0 and move in calls_ahead:
                        helper.wait()  # its kernels: loaded once the helper has them
                    if predictive is None and move in predictive_moves:
                        predictive = predictive_tables()
                    if move == "record":
                        k.draw_theta(cell_n, self._alpha, net, theta, buf)
                        rates[move] = k.record_sweep(x, theta, net, obs, cell_n, row_n) / max(
                            1, self.n_records
                        )
                    elif move == "soma":
                        k.draw_theta(cell_n, self._alpha, net, theta, buf)
                        rates[move] = ko.soma_sweep(
                            x, theta, self.n_records, self.soma_attempts, perm,
                            net, obs, cell_n, row_n,
                        ) / max(1, self.n_records)  # fmt: skip
                    elif move == "site":
                        a, p = k.site_sweep(x, net, obs, cell_n, row_n)
                        rates[move] = a / max(1, p)
                    elif move == "gibbs":
                        later = bool(runs.get(move))
                        if later and not repeat_nodes.any():
                            continue  # a later sweep with no node to visit: no call, no rate
                        a, p = kg.gibbs_sweep(
                            x, net, obs, cell_n, row_n, key_limit,
                            repeat_nodes if later else every_node, tally, one_by_one,
                        )  # fmt: skip
                        rates[move] = a / max(1, p)
                    elif move in ("pair", "diffuse_pair"):
                        # "diffuse_pair": none before the diffuse nodes are known (NaN rate)
                        visit = every_node if move == "pair" else repeat_nodes
                        rates[move] = math.nan
                        if move == "pair" or (it >= decide and visit.any()):
                            a, p = kp.pair_sweep(
                                x, net, obs, cell_n, row_n, pair_width, log_fact, key_limit,
                                visit, _PAIR_MIN_GROUP,
                            )  # fmt: skip
                            rates[move] = a / max(1, p)
                    elif move == "subtree":
                        rates[move] = descend(
                            kt.subtree_sweep, trees, per_row, tree_size, size_cap, it, predictive
                        )
                    elif move == "child_row":
                        rates[move] = descend(
                            kt.child_row_sweep, edges, per_edge, edge_size, edge_cap, it, predictive
                        )
                    elif move == "pooled_row":
                        rates[move] = math.nan  # no edge's parent visited: no proposal
                        if pool_on:
                            rates[move] = descend(
                                kt.child_row_sweep, pooled, per_pool, pool_size, pool_cap, it,
                                predictive, pool_on,
                            )  # fmt: skip
                    elif move == "transfer":
                        acc = prop = 0
                        for i in nodes:
                            a, p = kx.transfer_sweep(
                                i, per_transfer[i], round(tree_size[i]), predictive, desc, n_desc,
                                x, net, obs, cell_n, row_n,
                            )  # fmt: skip
                            acc += a
                            prop += p
                        rates[move] = acc / prop if prop else math.nan  # no node to pair rows
                    elif move == "ancillary":
                        k.draw_theta(cell_n, self._alpha, net, theta, buf)
                        ka.draw_uniforms(x, theta, net, u)
                        anc = (anc_units, anc_per_row, anc_size, size_cap)
                        rates[move] = descend(ka.ancillary_sweep, *anc, it, self._alpha)
                    elif move == "swap":
                        acc = prop = 0
                        for i in nodes:
                            if swappable[i]:
                                a, p = ks.swap_sweep(
                                    i, self.n_records, n_ctx, ctx, x, net, obs, cell_n, row_n
                                )
                                acc += a
                                prop += p
                        rates[move] = acc / max(1, prop)
                    elif move == "row_block":
                        acc = prop = 0
                        for i in nodes:
                            a, p = km.row_block_sweep(
                                i, per_row[i], round(row_size[i]), x, net, obs, cell_n, row_n
                            )
                            acc += a
                            prop += p
                            if adapt and it < tune and p:
                                row_size[i] = _adapted(row_size[i], a / p, it, size_cap[i])
                        rates[move] = acc / max(1, prop)
                    else:
                        acc = prop = 0
                        for i in nodes:
                            a, p = k.block_moves(i, blocks[i], sizes[i], x, net, obs, cell_n, row_n)
                            acc += a
                            prop += p
                        rates[move] = acc / max(1, prop)
                    sums[move] = sums.get(move, 0.0) + rates[move]  # a move listed more than once:
                    runs[move] = runs.get(move, 0) + 1  # the mean rate of its sweeps
                    rates[move] = sums[move] / runs[move]
                if it >= tune:
                    k.draw_theta(cell_n, self._alpha, net, theta, buf)
                    out[it - tune] = theta
                    for move, rate in rates.items():
                        stats[f"accept_{move}"][it - tune] = rate
                    if deadline is not None and time.perf_counter() >= deadline:
                        kept = it - tune + 1
                        return out[:kept], {m: r[:kept] for m, r in stats.items()}, x
                if it == 0:
                    helper.wait()  # draw_theta, first called at `tune`
                    helper.stop()  # every move's kernel has run
        return out, stats, x

    def sample(
        self,
        draws: int = 1000,
        tune: int = 200,
        chains: int = 2,
        random_seed: int | None = None,
        cores: int | None = None,
        time_limit: float | None = None,
    ) -> Any:
        """Posterior draws of the CPTs as an ArviZ DataTree.

        The posterior group holds ``{node}_cpt`` with the one dim ``{node}_cell`` (the flat,
        configuration-major layout and labels of :class:`pymc_rdp.BayesianNetwork`'s models;
        ``bn.cpt_draws(idata, node)`` gives the 2-D tables); ``sample_stats`` holds each move's
        acceptance rate per draw; the attrs hold the moves, the row moves per node (JSON) and the
        accountant (if any, as JSON). With an
        unknown ``N`` the posterior also holds ``n_records`` (the latent number of records).
        Chains run in threads of this process, ``cores`` at a time (the compiled kernels release
        the GIL; numba keeps one generator per thread, each chain seeds its own), so the draws do
        not depend on ``cores``.

        Parameters
        ----------
        draws, tune : int
            Kept and discarded iterations per chain (``draws`` >= 1, ``tune`` >= 0).
        chains : int
            Independent chains (>= 1), each started from records forward-sampled from
            :meth:`initial_cpts`.
        random_seed : int, optional
            Seed of the MCMC (not of any privacy noise).
        cores : int, optional
            Chains run at the same time (default ``min(chains, os.cpu_count())``).
        time_limit : float, optional
            Wall seconds, counted from this call, after which no chain keeps a further draw:
            ``draws`` becomes an upper bound. Every chain completes its ``tune`` iterations and
            keeps at least one draw, and all chains are cut to the shortest one's length (the
            ``draw`` dim shows how many were kept; the attrs hold ``time_limit``). The chains
            stop on the clock, not on their state, so the kept draws are the first draws of the
            same chains without a limit. For a fixed budget of wall time on a given machine,
            say a minute including compilation, set ``draws`` high and this to what remains.
            A limit that passes before the first kept draw leaves one draw per chain, with a
            ``UserWarning``.
        """
        # arviz_base alone (about 0.4 s to import where arviz takes 1.1, in the sampling's time)
        from arviz_base import from_dict

        for name, value, low in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if cores is None:
            cores = min(chains, os.cpu_count() or 1)
        if isinstance(cores, bool) or not isinstance(cores, (int, np.integer)) or cores < 1:
            raise ValueError(f"cores must be an integer >= 1, got {cores!r}")
        if time_limit is not None:
            time_limit = check_positive_scalar(time_limit, "time_limit")
        seeds = np.random.SeedSequence(random_seed).generate_state(chains)
        start = time.perf_counter()
        deadline = None if time_limit is None else start + time_limit
        run = self.run_chain
        if self.n_records is None:
            from functools import partial

            from pymc_rdp.distributions.unknown_total import run_chain_unknown_total

            run = partial(run_chain_unknown_total, self)

        # every chain writes its draws into its slice of one array: stacking them afterwards
        # copied 270 MB on Adult (2 × 1,027 draws of 16,372 cells), 0.6 s of the minute
        theta = np.empty((chains, int(draws), int(self._net[4][-1])))

        def one(c: int) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
            return run(int(draws), int(tune), int(seeds[c]), deadline=deadline, out=theta[c])

        if cores == 1 or chains == 1:
            results = [one(c) for c in range(chains)]
        else:
            with ThreadPoolExecutor(max_workers=int(cores)) as pool:
                results = list(pool.map(one, range(chains)))
        wanted = int(draws)
        draws = min(len(th) for th, _, _ in results)  # a time limit may cut chains unequally
        stats = [{key: s[:draws] for key, s in st.items()} for _, st, _ in results]
        elapsed = time.perf_counter() - start
        if time_limit is not None and draws == 1 < wanted:
            # every chain keeps its first draw, so one draw means the limit passed before a
            # chain's first kept draw ended
            warnings.warn(
                f"time_limit={time_limit:g} s passed before a chain's first kept draw ended: "
                f"every chain was cut to 1 draw of the {wanted} asked for (sampling, with {tune} "
                f"tuning iterations and any compiling, took {elapsed:.1f} s); raise time_limit "
                "or lower tune",
                UserWarning,
                skip_file_prefixes=(_PACKAGE_DIR,),  # the analyst's call, however it came in
            )
        theta = theta[:, :draws]  # chain, draw, cells
        off = self._net[4]
        post = {}
        dims = {}
        for i, v in enumerate(self.nodes):
            post[f"{v}_cpt"] = theta[:, :, off[i] : off[i + 1]].reshape(chains, draws, -1)
            dims[f"{v}_cpt"] = [f"{v}_cell"]
        sample_stats = {key: np.stack([s[key] for s in stats]) for key in stats[0]}
        if "n_records" in sample_stats:  # an unknown N is a parameter of the posterior
            post["n_records"] = sample_stats.pop("n_records")
        idata = from_dict(
            {"posterior": post, "sample_stats": sample_stats}, coords=self.coords, dims=dims
        )
        idata.attrs["sampler"] = "data_augmentation"
        idata.attrs["moves"] = ",".join(self.moves)
        idata.attrs["row_moves"] = json.dumps(self.row_moves)
        idata.attrs["weighted_pairs"] = json.dumps(self.weighted_pairs)
        idata.attrs["sampling_time"] = float(elapsed)
        if time_limit is not None:
            idata.attrs["time_limit"] = time_limit
        if self.accountant is not None:
            from pymc_rdp.distributions.private_nodes import attach_ledger

            attach_ledger(idata, accountant=self.accountant)
        return idata


def sample_augmentation(
    source: Any,
    draws: int = 1000,
    tune: int = 200,
    chains: int = 2,
    random_seed: int | None = None,
    time_limit: float | None = None,
    **options: Any,
) -> Any:
    """Sample the exact posterior of a fitted :class:`pymc_rdp.BayesianNetwork` (or of a
    :class:`DataAugmentation`) by data augmentation; returns an ArviZ DataTree (see
    :meth:`DataAugmentation.sample`, which also takes ``time_limit``). ``options`` go to
    :meth:`DataAugmentation.from_network`.
    """
    if isinstance(source, DataAugmentation):
        if options:
            raise ValueError("options are only used when building from a network")
        da = source
    else:
        da = DataAugmentation.from_network(source, **options)
    return da.sample(
        draws=draws, tune=tune, chains=chains, random_seed=random_seed, time_limit=time_limit
    )
