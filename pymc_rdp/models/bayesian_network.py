"""Private discrete Bayesian networks: release the family tables, then model or use the releases.

:class:`BayesianNetwork` takes a fixed structure (a DAG) and learns its conditional probability
tables (CPTs) from a table of sensitive records under Rényi differential privacy (RDP). The
class, its state and its documentation live here; the work of its methods lives in
:mod:`pymc_rdp.models.network_fit` (options, counting, the releases, the model),
:mod:`pymc_rdp.models.network_posterior` (posterior draws of the CPTs) and
:mod:`pymc_rdp.models.network_records` (held-out log-likelihood, synthetic records).

Privacy
-------
The sufficient statistics are the family tables ``n_v[c, k]`` (records whose parents of ``v`` are
in configuration ``c`` and whose ``v`` is in state ``k``). Each record adds exactly one count to
each of the ``K`` tables. Per table, one record changes the counts by

* replace-one neighbours (same number of records): ``-1`` in one cell, ``+1`` in another, so
  ``Δ₁ = 2``, ``Δ₂ = √2``, ``Δ∞ = 1``;
* add-remove neighbours: ``+1`` in one cell, so ``Δ₁ = Δ₂ = Δ∞ = 1``

(the counting-query sensitivities; Ponnoprat, TMLR 2023, "Dirichlet Mechanism for Differentially
Private KL Divergence Minimization", Sec. 5). Whether the moved record stays in its parent
configuration or not, these are the sensitivities of the whole table, so one table is one
release and one spend; the rows (parent configurations) hold disjoint records and need no further
charge. The ``K`` tables compose sequentially (Mironov 2017, "Rényi Differential Privacy",
Prop. 1): with a budget ε at order λ each table gets ε/K at λ; with an (ε, δ) budget one common
noise level is searched so that the ``K``-fold composition converts to at most (ε, δ) with
:func:`pymc_rdp.privacy.rdp.to_dp`. Every release is charged to :attr:`BayesianNetwork.accountant`
*before* its noise is drawn; if the whole fit does not fit into the accountant's budget nothing
is charged and nothing is released.

Mechanisms
----------
``"dirichlet"``
    One exact draw per table, row by row, ``θ̃_c ~ Dirichlet(r n[c, :] + α)`` (Ponnoprat 2023,
    Theorem 1 and Algorithm 1, through :class:`pymc_rdp.DirichletMechanism`). The released CPTs
    are the result; :attr:`BayesianNetwork.model` holds them as ``pm.Data``.
``"gaussian"`` / ``"laplace"``
    The flattened family table plus exactly sampled integer noise: the discrete Gaussian or
    discrete Laplace mechanism (:class:`pymc_rdp.DiscreteGaussianMechanism`,
    :class:`pymc_rdp.DiscreteLaplaceMechanism`, calibrated with their own RDP curves; the ledger
    records ``discrete_gaussian`` / ``discrete_laplace``). Floating-point noise is never added to
    counts (Mironov 2012). With ``noise_aware=True`` a PyMC model puts
    ``Dirichlet(alpha0)`` priors on every CPT row and observes each release through
    :class:`pymc_rdp.NoisyCounts` with the latent true counts marginalised. With
    ``noise_aware=False`` the CPTs are the paper's naive baseline: noisy counts clipped at 1e-6
    and normalised per row.
``"randomized_response"``
    Not tables but the records themselves, each node's value randomised on its own (k-ary
    randomized response, :class:`pymc_rdp.CategoricalRandomizedResponse`), one released row per
    record; one record's row is the only one that differs between neighbours, so the fit costs
    the nodes' curves summed, one charge per node (:mod:`pymc_rdp.models.network_randomized`).
    It needs ``public_total=len(df)`` (the rows publish ``N``) and replace-one neighbours; any
    frame the table fits read will do (its engine codes the records, which are collected and
    randomised in memory). ``sample()`` draws the exact posterior: by NUTS on the rows' exact
    likelihood (:attr:`model`) up to 100,000 joint states of the nodes (a million with
    ``sampler="nuts"``), by data augmentation beyond; :attr:`cpts` is a moment estimate until
    then, the posterior mean after.
``"none"``
    No privacy: the conjugate posterior ``Dirichlet(alpha0 + n[c, :])`` of every row.

The per-family likelihood
-------------------------
The noise-aware model observes each family table through :class:`pymc_rdp.NoisyCounts` as if the
tables were independent; ``fit(..., margins=...)`` chooses the parent weights of that
approximation (the model, its measured coverage and its trade-offs:
:mod:`pymc_rdp.distributions.bn_models`).

``fit(..., noise_model="joint")`` replaces the per-family terms by one likelihood of all tables
together with their exact between-table covariance (the linear-query model of
:mod:`pymc_rdp.distributions.joint_likelihood`), which removes the approximation at a higher cost
per
gradient.

The record count ``N`` is computed from the private records and is never used or published
unless the caller declares it public (``fit(..., public_total=N)``, recorded in the ledger as a
``"public_total"`` declaration), under either neighbouring relation: with ``--missing drop`` or
per-region releases it is exactly what a neighbour changes. Otherwise ``N`` is estimated from the
releases (the mean of the noisy table totals, rounded), which is post-processing and costs
nothing; the Dirichlet mechanism publishes no total at all.

Noise
-----
Privacy noise comes from the operating system's entropy (``noise_source=None``), never from a
user seed; ``noise_source=pmr.UnsafeNoiseSeed(k)`` gives reproducible, **non-private** releases
for tests, marked ``"unsafe_noise"`` (outside the guarantee) in the ledger. ``random_seed`` of
:meth:`BayesianNetwork.sample` steers only the MCMC.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from pymc_rdp.bn.structure import NetworkStructure, cell_labels, config_labels, parse_structure
from pymc_rdp.curation.domains import FROM_DATA, check_states
from pymc_rdp.distributions.bn_models import (
    AUTO_MULTINOMIAL_CELLS,
    CoordsDict,
    cell_dim,
    table_dims,
)
from pymc_rdp.models import network_fit, network_posterior, network_records
from pymc_rdp.models.network_fit import NAIVE_FLOOR

__all__ = ["AUTO_MULTINOMIAL_CELLS", "NAIVE_FLOOR", "BayesianNetwork", "cell_labels"]


class BayesianNetwork:
    """A discrete Bayesian network whose CPTs are learnt under Rényi differential privacy.

    Parameters
    ----------
    structure : dict, networkx.DiGraph or pgmpy model
        ``{child: [parents, ...]}`` with every node a key (roots map to ``[]``), a
        ``networkx.DiGraph`` with edges parent -> child, or a pgmpy ``DiscreteBayesianNetwork``
        (its CPDs, if any, supply the state names). The order of a node's parents fixes the order
        of its parent configurations (the first parent varies slowest, as in pgmpy).
    states : dict or "from-data", optional
        ``node -> ordered list of states``: the public domain of each node (a pgmpy model's
        state names are used for the nodes it covers). States never observed are kept as zero
        counts, so the released tables' shapes are fixed by the declaration, and a value outside
        a node's states is refused at fit time (nothing released or charged). Every node needs
        declared states for a private fit. ``"from-data"`` (for all undeclared nodes, or as the
        value of one node) is the explicit opt-in to read states from the records
        (:func:`pymc_rdp.curation.domains.states_from_data`: float, identifier and high-cardinality
        columns are still refused); the ledger then records ``states_from_data`` as outside the
        guarantee. ``mechanism="none"`` (no privacy) reads undeclared states from the data.

    Raises
    ------
    ValueError
        The structure has a directed cycle (named), a parent that is not a node, or ``states``
        names an unknown node, is empty or repeats a state.
    TypeError
        ``states`` is not a dict or ``"from-data"``, or a node's states are not a list.

    Examples
    --------
    >>> bn = BayesianNetwork({"smoker": [], "cancer": ["smoker"]})  # doctest: +SKIP
    >>> bn.fit(df, mechanism="dirichlet", epsilon=1.0, order=5.0)  # doctest: +SKIP
    >>> bn.cpts["cancer"]  # doctest: +SKIP
    """

    def __init__(
        self, structure: Any, states: Mapping[str, Sequence[Hashable]] | str | None = None
    ):
        self.structure: NetworkStructure
        self.structure, model_states = parse_structure(structure)
        given: dict[str, list[Hashable]] = dict(model_states or {})
        self._states_from_data = isinstance(states, str) and states == FROM_DATA
        self._from_data_nodes: set[str] = set()
        if states is not None and not self._states_from_data:
            if isinstance(states, str):
                raise ValueError(f"states must be a dict or {FROM_DATA!r}, got {states!r}")
            if isinstance(states, Mapping):  # per-node opt-in: {node: "from-data"}
                opted = {k for k, v in states.items() if isinstance(v, str) and v == FROM_DATA}
                states = {k: v for k, v in states.items() if k not in opted}
                self._from_data_nodes = opted
            given.update(check_states(states, known=list(self.structure.parents)))
            unknown = sorted(self._from_data_nodes - set(self.structure.parents))
            if unknown:
                raise ValueError(f"states: {unknown} are not nodes of the structure")
            for v in self._from_data_nodes:
                given.pop(v, None)
        self._given_states = given
        self._reset()

    # ------------------------------------------------------------------ state

    def _reset(self) -> None:
        self.accountant: Any = None
        self.mechanism: str | None = None
        self.family_mechanism: Any = None
        self.noise_aware: bool | None = None
        self.noise_model: str | None = None
        self.neighbours: str | None = None
        self.states: dict[str, list[Hashable]] = {}
        self.cards: dict[str, int] = {}
        self.n_records: int | None = None
        self.releases: dict[str, Any] = {}
        self.model: Any = None
        self.idata: Any = None
        self._point_cpts: dict[str, np.ndarray] | None = None
        self._posterior_params: dict[str, np.ndarray] | None = None
        self._fitted = False

    @property
    def nodes(self) -> tuple[str, ...]:
        """The nodes in topological order."""
        return self.structure.order

    @property
    def parents(self) -> dict[str, tuple[str, ...]]:
        """``node -> parents`` (ordered)."""
        return dict(self.structure.parents)

    def _known_states(self) -> Mapping[str, Sequence[Hashable]]:
        """The fitted states, or before a fit the declared ones (every node needs them)."""
        if self.states:
            return self.states
        if all(v in self._given_states for v in self.nodes):
            return self._given_states
        self._check_fitted()
        return self.states

    def parent_configurations(self, node: str) -> list[str]:
        """Labels of ``node``'s parent configurations, e.g. ``"age=3,sex=Male"``.

        Available before a fit when the states of ``node``'s parents are declared.
        """
        self._check_node(node)
        states = self.states or self._given_states
        if not all(p in states for p in self.structure.parents[node]):
            self._check_fitted()
        return config_labels(self.structure.parents[node], states)

    @property
    def coords(self) -> dict[str, list[str]]:
        """The named coordinates of the models and posteriors: ``{node}_cell`` for every node.

        Each CPT is one flat variable over its cells (configuration-major, labels
        ``"parent=a,other=b | node=x"``; :meth:`cpt_draws` gives back the 2-D tables): one
        dim per node keeps ArviZ's whole-posterior functions (``az.summary``, which stack all
        dims of all variables together) within NumPy's 32 dimensions for networks of up to 30
        nodes. Available before a fit when every node's states are declared. (Calling
        ``bn.coords()`` still works but is deprecated.)
        """
        states = self._known_states()
        out = CoordsDict()
        for v in self.nodes:
            out[cell_dim(v)] = cell_labels(v, self.structure.parents[v], states)
        return out

    def _table_coords(self) -> dict[str, list[str]]:
        """``{node}_parent_config`` and ``{node}_state`` (the observed tables' dims)."""
        states = self._known_states()
        out: dict[str, list[str]] = {}
        for v in self.nodes:
            dc, ds = table_dims(v)
            out[dc] = config_labels(self.structure.parents[v], states)
            out[ds] = [str(s) for s in states[v]]
        return out

    # -------------------------------------------------------------------- fit

    def fit(
        self,
        df: Any,
        mechanism: Literal[
            "dirichlet", "gaussian", "laplace", "randomized_response", "none"
        ] = "dirichlet",
        epsilon: float | None = None,
        order: float | None = None,
        delta: float | None = None,
        neighbours: Literal["replace-one", "add-remove"] = "replace-one",
        accountant: Any = None,
        noise_aware: bool = True,
        alpha0: float = 1.0,
        noise_source: Any = None,
        likelihood: Literal["auto", "multinomial", "poissonised"] = "auto",
        margins: Literal["free", "network"] = "free",
        noise_model: Literal["per-family", "joint"] = "per-family",
        public_total: int | None = None,
        random_state: Any = None,
    ) -> BayesianNetwork:
        """Release every family table privately and build the model.

        Parameters
        ----------
        df : data frame
            One record per row, one column per node (other columns are ignored). Missing values
            are refused with a ValueError: drop or impute them before fitting. A pandas frame is
            counted in memory; any other frame narwhals supports (Polars, PyArrow, DuckDB,
            PySpark, Ibis) is counted by its own engine
            (:func:`pymc_rdp.curation.counting.count_tables`).
        mechanism : {"dirichlet", "gaussian", "laplace", "randomized_response", "none"}
            How each family table is released, or for ``"randomized_response"`` each record
            (see the module notes).
        epsilon : float
            The privacy budget of the whole fit (> 0): ε at ``order`` or ε of (ε, δ).
        order : float, optional
            Rényi order λ > 1 of an RDP budget ε. Exactly one of ``order`` and ``delta``.
        delta : float, optional
            δ in (0, 1) of an (ε, δ)-DP budget.
        neighbours : {"replace-one", "add-remove"}
            The neighbouring relation, which fixes the sensitivities of a table.
        accountant : Accountant, optional
            Charged with every release. Default: the accountant of this network's previous
            private fit (refits of the same data are releases too, and averaging them defeats
            the noise), else a new accountant with the budget (``Accountant.at_order(epsilon,
            order)`` or ``Accountant((epsilon, delta))``), kept for later refits. A refit with
            the whole budget again is therefore refused.
        noise_aware : bool
            Gaussian/Laplace only: model the noise (True) or use the naive clip-and-normalise
            CPTs (False).
        alpha0 : float
            Prior concentration of every CPT row (``Dirichlet(alpha0)``) and the Dirichlet
            mechanism's base concentration.
        noise_source : None or NoiseSource
            ``None`` (default): all privacy noise from the operating system's entropy.
            ``pmr.UnsafeNoiseSeed(k)``: reproducible, **non-private** releases for tests (the
            ledger records an ``"unsafe_noise"`` declaration outside the guarantee). An int or a
            NumPy generator is refused (TypeError).
        likelihood : {"auto", "multinomial", "poissonised"}
            Noise-aware models only: how a family table's latent counts are marginalised.
            ``"multinomial"``: ``Multinomial(N, p_v)`` with :class:`NoisyCounts`' default mode
            (Gaussian noise: the multinomial's normal approximation plus the noise, a
            multivariate normal evaluated in closed form, linear in the cells; Laplace noise:
            the exact sum, the scale mixture or independent cells, as NoisyCounts chooses).
            ``"poissonised"``: independent cells ``Poisson(N p_v)`` convolved with the noise
            (the law of the cells when the total is Poisson, close to the multinomial when every
            cell probability is small). ``"auto"``: multinomial for Gaussian noise and for
            Laplace tables of at most 64 cells, Poissonised for larger Laplace tables.
        margins : {"free", "network"}
            Noise-aware models only: the parent-configuration probabilities ``P(pa(v) = c)`` in
            family ``v``'s likelihood. ``"free"``: separate parent weights per family (the
            family table ``{v}_family`` is sampled, the CPT ``{v}_cpt`` is its row-normalised
            form), so that each table informs only its own CPT (calibrated; discards the
            tables' redundant information about the parents).
            ``"network"``: the network's own marginal, exact by variable elimination (uses all
            the information but counts the records' parent margins once per table: over-
            confident, see the module notes).
        noise_model : {"per-family", "joint"}
            Noise-aware models only. ``"per-family"``: one :class:`NoisyCounts` term per family
            (the approximation above: ``likelihood`` and ``margins`` apply). ``"joint"``: the
            faithful linear-query model of all tables at once, ``y ~ N(N Q p, N Q(diag p −
            p pᵀ)Qᵀ + diag σ²)`` with ``p`` the network's joint distribution
            (:func:`pymc_rdp.distributions.joint_likelihood.build_joint_model`; Laplace noise
            through
            its latent scale mixture). Calibrated where the per-family model is not, and one to
            three orders of magnitude slower per gradient on networks the size of alarm (see
            ``docs/calibration.md``).
        public_total : int, optional
            The number of records, declared public by the caller (known outside the data). It
            must equal ``len(df)``; it is recorded in the ledger (``"public_total"``), stored as
            :attr:`n_records` and used as the models' ``N``. Default: ``N`` is not published and
            the noise-aware models use the mean of the released table totals.
        random_state : None
            No longer accepted: ``fit`` runs no MCMC and its randomness is privacy noise, which a
            user seed never steers. Any value other than ``None`` raises TypeError; use
            ``noise_source`` here and ``sample(random_seed=...)`` for the MCMC.

        Returns
        -------
        BayesianNetwork
            ``self``.

        Raises
        ------
        ValueError
            Bad data (missing column, empty, missing values, values outside given states) or a bad
            budget (non-positive ε, order ≤ 1, δ outside (0, 1), both or neither of order/delta).
        BudgetExceededError
            The fit does not fit into ``accountant``'s remaining budget; nothing was released.
        """
        return network_fit.fit_network(
            self,
            df,
            mechanism=mechanism,
            epsilon=epsilon,
            order=order,
            delta=delta,
            neighbours=neighbours,
            accountant=accountant,
            noise_aware=noise_aware,
            alpha0=alpha0,
            noise_source=noise_source,
            likelihood=likelihood,
            margins=margins,
            noise_model=noise_model,
            public_total=public_total,
            random_state=random_state,
        )

    # ------------------------------------------------------------ sampling

    def sample(
        self,
        draws: int = 1000,
        tune: int = 1000,
        chains: int = 2,
        random_seed: Any = None,
        sampler: Literal["augmentation", "nuts"] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Posterior draws of the CPTs as an ArviZ DataTree carrying the ledger.

        * noise-aware Gaussian/Laplace and Dirichlet fits, ``sampler="augmentation"`` (the
          default): the exact posterior given the releases by data augmentation
          (:class:`pymc_rdp.DataAugmentation`; extra keyword arguments go to
          :meth:`~pymc_rdp.DataAugmentation.from_network`, e.g. ``n_prior`` for a Dirichlet fit
          without a public ``N``, except ``time_limit``, which caps the sampling's wall seconds
          as in :meth:`~pymc_rdp.DataAugmentation.sample`); an unknown ``N`` is sampled too
          (``n_records``);
        * ``sampler="nuts"``: NUTS on :attr:`model` (``pymc_rdp.sample``; extra keyword
          arguments go to ``pm.sample``; without ``cores``, a process per chain where PyMC
          forks them: :func:`pymc_rdp.models.network_posterior.nuts_chain_cores`) for
          Gaussian/Laplace fits and for randomised records (their exact likelihood, up to a
          million joint states of the nodes; their default up to 100,000, data augmentation
          beyond); for a Dirichlet fit the released CPTs as one chain of one draw.
          ``nuts_sampler`` picks the engine: ``"pymc"``, ``"nutpie"`` (add ``backend="jax"``
          and ``compile_kwargs={"gradient_backend": "jax"}`` to compile with JAX, the fastest
          cold start: ``pip install 'pymc-rdp[jax]'``), ``"numpyro"`` or ``"blackjax"``; an
          engine that is not installed raises ImportError naming the install command
          (:func:`pymc_rdp.models.network_posterior.check_nuts_engine`). Left out, PyMC
          chooses (nutpie when it is installed);
        * ``"none"``: exact draws from the conjugate ``Dirichlet(alpha0 + counts)`` rows (its
          :attr:`cpts` stay the exact posterior mean);
        * the naive baseline: its CPTs as one chain of one draw (``draws``, ``tune`` ignored).

        For a Dirichlet fit :attr:`cpts` stays the released point CPTs
        (:mod:`pymc_rdp.models.posterior_sampling`).

        Sampling is post-processing of the releases and never charges the accountant. The result
        is also stored as :attr:`idata`; for a noise-aware model its posterior mean becomes
        :attr:`cpts`.
        """
        return network_posterior.sample_network(
            self, draws, tune, chains, random_seed, sampler, **kwargs
        )

    def _is_point_model(self) -> bool:
        """The released (Dirichlet) or naive CPTs: nothing to infer."""
        return network_posterior.is_point_model(self)

    def cpt_draws(self, idata: Any, node: str) -> np.ndarray:
        """Draws of ``node``'s CPT: float64 array (draws, parent configurations, child states).

        Chains are stacked (chain-major). Reads the flat layout ``{node}_cell`` of this class's
        posteriors and the 2-D layout ``({node}_parent_config, {node}_state)``.
        """
        return network_posterior.cpt_draws(self, idata, node)

    @property
    def cpts(self) -> dict[str, np.ndarray]:
        """Point CPTs ``node -> (parent configurations, states)``.

        The released CPTs (Dirichlet mechanism, naive baseline), the conjugate posterior mean
        (``"none"``), or the posterior mean of the last :meth:`sample` (noise-aware models).
        """
        self._check_fitted()
        if self._point_cpts is None:
            raise RuntimeError(
                "the noise-aware model has no CPT estimate yet: call .sample() first"
            )
        return {v: c.copy() for v, c in self._point_cpts.items()}

    def cpt_frame(self, node: str) -> pd.DataFrame:
        """``cpts[node]`` as a DataFrame indexed by configuration labels, one column per state."""
        coords = self._table_coords()
        dc, ds = table_dims(node)
        return pd.DataFrame(self.cpts[node], index=coords[dc], columns=coords[ds])

    # ---------------------------------------------------------- evaluation

    def log_likelihood(self, df: pd.DataFrame, unseen: Literal["raise", "skip"] = "raise") -> float:
        """Mean log-likelihood per record of held-out data under :attr:`cpts`.

        .. math:: \\frac1n \\sum_{i=1}^n \\sum_v \\log \\hat\\theta_v[\\mathrm{pa}_i(v), x_{iv}]

        (the paper's test log-likelihood of released CPTs; Ponnoprat 2023, Sec. 6).

        Parameters
        ----------
        df : pandas.DataFrame
            Held-out records, one column per node; no missing values.
        unseen : {"raise", "skip"}
            A value outside a node's fitted states raises ValueError ("raise"), or its record is
            left out of the mean ("skip"; at least one record must remain).
        """
        return network_records.log_likelihood(self, df, unseen)

    def sample_data(
        self,
        n: int,
        random_seed: int | np.random.Generator | None = None,
        *,
        random_state: Any = None,
    ) -> pd.DataFrame:
        """``n`` synthetic records by forward sampling of :attr:`cpts` (post-processing).

        ``random_seed`` (an int, a NumPy generator or None) steers the sampling, as in
        :meth:`sample`; ``random_state`` is its deprecated name.

        Returns a DataFrame with one categorical column per node (categories = the states).
        """
        return network_records.sample_data(self, n, random_seed, random_state)

    def synthesize(
        self, m: int, n: int | None = None, random_state: int | np.random.Generator | None = None
    ) -> list[pd.DataFrame]:
        """``m`` synthetic datasets, one per posterior draw of the last :meth:`sample`
        (post-processing: no privacy cost, the ledger is unchanged); analyse them with
        :func:`pymc_rdp.rubins_rules`. See :func:`pymc_rdp.models.synthesis.synthesize`."""
        from pymc_rdp.models.synthesis import synthesize

        return synthesize(self, m, n=n, random_state=random_state)

    def to_pgmpy(self) -> Any:
        """A pgmpy ``DiscreteBayesianNetwork`` holding :attr:`cpts` (with state names)."""
        from pymc_rdp.bn.pgmpy_export import to_pgmpy

        return to_pgmpy(self.structure, self.cpts, self.cards, self.states)

    # ------------------------------------------------------------- helpers

    def _check_fitted(self) -> None:
        if not self._fitted:
            raise RuntimeError("the network is not fitted: call .fit(df, ...) first")

    def _check_node(self, node: str) -> None:
        if node not in self.structure.parents:
            raise ValueError(f"node {node!r} is not a node of the network {list(self.nodes)}")

    def __repr__(self) -> str:
        status = f"fitted with {self.mechanism!r}" if self._fitted else "not fitted"
        return f"BayesianNetwork({len(self.nodes)} nodes, {status})"
