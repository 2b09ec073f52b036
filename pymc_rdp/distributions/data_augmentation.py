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
:mod:`pymc_rdp.distributions.augmentation_arrays`, the checks and defaults of the states,
moves and move sizes in :mod:`pymc_rdp.distributions.augmentation_settings`, and a chain's
moves, their adapted settings and the state they share in
:mod:`pymc_rdp.distributions.augmentation_chain` (:meth:`DataAugmentation.run_chain` keeps the
loop over iterations).
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


# --------------------------------------------------------------------------- the sampler


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
    guided_pairs : bool or dict, optional
        Per node, whether a subtree proposal keeps the direction of each pair of states in
        each row and reverses it only when a proposal is rejected, so that a row's counts keep
        moving one way between rejections
        (:func:`~pymc_rdp.distributions.augmentation_moves.guided_row_proposal`; the pair is
        drawn in proportion to its records whatever ``weighted_pairs`` says). Default: every
        node of a count release; in a harness of two seeds the minimum ESS per core-second
        rose 1.68 times on alarm and 1.26 times on insurance and was even on asia, sachs and
        child (``docs/performance.md``, "Persistent directions for the subtree moves' pairs of
        states"). None when every release is a Dirichlet-mechanism release: on Adult's (the
        demo's) the entries of rows holding ≥ 20 records mixed faster, but the minimum over
        every entry did not rise.
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
        guided_pairs: bool | Mapping[str, bool] | None = None,
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
        self.guided_pairs = per_node_flag(
            guided_pairs, "guided_pairs", lambda v: not dirichlet, nodes
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

    def _chain_start(self, seed: int, records: np.ndarray | None = None) -> np.ndarray:
        """A chain's first records from ``seed``: the compiled kernels' generator seeded from
        it, then ``records`` checked or, if None, records drawn forward from the initial CPTs
        with the same generator. :meth:`run_chain` starts every chain here, so a caller that
        drives :class:`~pymc_rdp.distributions.augmentation_chain.ChainMoves` itself from the
        same seed makes the same draws."""
        from pymc_rdp.distributions import _augmentation_kernels as k

        rng = np.random.default_rng(seed)
        k.seed(int(rng.integers(0, 2**31 - 1)))
        return self._records(rng) if records is None else self._checked_records(records)

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
        from pymc_rdp.distributions.augmentation_chain import CALLS_AHEAD, ChainMoves
        from pymc_rdp.distributions.compile_ahead import compile_ahead

        adapt = records is None if adapt is None else bool(adapt)
        chain = ChainMoves(self, self._chain_start(seed, records), tune, adapt)
        x = chain.x
        out = draws_array(out, draws, chain.theta.shape[0])
        stats = {f"accept_{m}": np.empty(draws) for m in self.moves}
        with compile_ahead(chain.compile_ahead_calls()) as helper:
            for it in range(tune + draws):
                chain.begin(it)
                rates, sums, runs = {}, {}, {}
                for m, move in enumerate(self.moves):
                    if it == 0 and m > 0 and move in CALLS_AHEAD:
                        helper.wait()  # its kernels: loaded once the helper has them
                    rate = chain.run(move, it, later=bool(runs.get(move)))
                    if rate is None:
                        continue  # a later sweep with no node to visit: no call, no rate
                    sums[move] = sums.get(move, 0.0) + rate  # a move listed more than once:
                    runs[move] = runs.get(move, 0) + 1  # the mean rate of its sweeps
                    rates[move] = sums[move] / runs[move]
                if it >= tune:
                    out[it - tune] = chain.draw_theta()
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
        idata.attrs["guided_pairs"] = json.dumps(self.guided_pairs)
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
