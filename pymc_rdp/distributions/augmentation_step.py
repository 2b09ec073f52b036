"""Data augmentation as a PyMC step method: ``pm.sample(step=pmr.DataAugmentation(...))``.

:class:`AugmentationStep` is the PyMC face of
:class:`~pymc_rdp.distributions.data_augmentation.DataAugmentation` (its base class). PyMC's
``pm.sample`` drives it like any other blocked step (Metropolis, NUTS):

* ``setup_chain(rng, tune, draws)`` (once per chain) starts the chain's latent records, forward
  sampled from the CPTs read from the releases; the records live in the step object, one copy per
  chain (each worker process of a multi-chain run holds its own copy; sequential chains reset it);
* ``step(point)`` runs ``sweeps`` iterations of the compiled moves from those records
  (:meth:`DataAugmentation.run_chain`: state in, CPT draw and acceptance rates out) and returns the
  point with the model's CPT variables set to a draw of ``θ | x`` (every row
  ``Dirichlet(α₀ + n_c)``), mapped to each variable's transformed space.

The step samples the *exact* posterior of the CPTs given the releases (the target of
:class:`DataAugmentation`), not the model's own likelihood: the model only supplies the variables.
A model fits when it has, for every node ``v``, a free variable ``{v}_cpt`` (the CPT, flat
``(configurations · states,)`` as :func:`pymc_rdp.distributions.flat_cpt.flat_cpt` or 2-D) or
``{v}_family`` (the whole family table of :class:`pymc_rdp.BayesianNetwork`'s ``margins="free"``
model), and no other free variable. For ``{v}_family`` the step draws
``φ_v ~ Dirichlet(α₀ + n_v)`` over the family's cells given the records' family table ``n_v``:
that model's prior is ``Dirichlet(α₀)`` over the cells, so ``φ_v | x`` is exactly that, and its
row-normalised form (the model's deterministic ``{v}_cpt``) is ``Dirichlet(α₀ + n_c)`` per row,
the CPT conditional of the exact posterior (aggregation property of the Dirichlet; Frigyik,
Kapila & Gupta 2010, Sec. 2.3). :meth:`AugmentationStep.build_model` gives a model with flat
``{v}_cpt`` variables for releases that have none (e.g. Dirichlet-mechanism fits).

The step is never chosen automatically (``competence`` is ``INCOMPATIBLE``); its own
:meth:`DataAugmentation.sample` is the fast path (no point dictionaries, no transforms).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from pymc.step_methods.compound import BlockedStep, Competence

__all__ = ["AugmentationStep"]


class AugmentationStep(BlockedStep):
    """PyMC step-method protocol of the data-augmentation sampler (see the module notes).

    Subclasses set, in their constructor, the sampler's state and then call
    :meth:`_init_step`. The model is bound on first use of :attr:`vars` (the model on the
    context stack, as ``pm.sample`` runs inside ``with model:``) or by :meth:`bind`.
    """

    name = "data_augmentation"
    default_blocked = True

    # BlockedStep.__new__ needs a model on the context stack; this sampler is also used without
    # one (its own ``sample``), so the model is bound lazily instead.
    def __new__(cls, *args: Any, **kwargs: Any) -> AugmentationStep:
        return object.__new__(cls)

    def __getnewargs_ex__(self) -> tuple[tuple, dict]:
        return (), {}

    def _init_step(self, sweeps: int = 1) -> None:
        if isinstance(sweeps, bool) or not isinstance(sweeps, (int, np.integer)) or sweeps < 1:
            raise ValueError(f"sweeps must be an integer >= 1, got {sweeps!r}")
        self.sweeps = int(sweeps)
        names = [f"accept_{m}" for m in self.moves]
        if self.n_records is None:
            names += ["accept_birth_death"]
        self.stats_dtypes_shapes = {n: (np.float64, []) for n in names}
        if self.n_records is None:
            self.stats_dtypes_shapes["n_records"] = (np.int64, [])
        self.stats_dtypes = [{n: d for n, (d, _) in self.stats_dtypes_shapes.items()}]
        self._bound: list[Any] | None = None
        self._writers: list[tuple[str, str, int, tuple[int, ...], Any]] = []
        self._x: np.ndarray | None = None
        self.rng = np.random.default_rng()

    # ------------------------------------------------------------------ the model

    @property
    def vars(self) -> list[Any]:  # type: ignore[override]
        """The model's value variables this step sets (binds the model in context first)."""
        if self._bound is None:
            self.bind()
        return list(self._bound or [])

    @vars.setter
    def vars(self, value: Any) -> None:  # BlockedStep declares ``vars`` as a class attribute
        raise AttributeError("the variables of a DataAugmentation step come from bind(model)")

    def bind(self, model: Any = None) -> AugmentationStep:
        """Attach the step to ``model`` (default: the model on the context stack).

        Raises
        ------
        ValueError
            A node without a ``{node}_cpt`` or ``{node}_family`` free variable, a variable whose
            size is not the node's number of cells, or free variables that are not CPTs
            (continuous nodes, noise scales, ``n_records``...): the step cannot sample them.
        """
        import pytensor
        import pytensor.tensor as pt
        from pymc.model import modelcontext

        model = modelcontext(model)
        free = {rv.name: rv for rv in model.free_RVs}
        off = self._net[4]
        writers = []
        bound = []
        claimed = set()
        for i, v in enumerate(self.nodes):
            cells = int(off[i + 1] - off[i])
            for kind in ("cpt", "family"):
                rv = free.get(f"{v}_{kind}")
                if rv is not None:
                    break
            else:
                raise ValueError(
                    f"model: no free variable {v}_cpt or {v}_family for node {v!r}; the "
                    "data-augmentation step sets every node's CPT (build one with "
                    "DataAugmentation.build_model())"
                )
            shape = tuple(int(s) for s in rv.type.shape) if None not in rv.type.shape else None
            if shape is None or int(np.prod(shape)) != cells:
                raise ValueError(
                    f"model: {rv.name} has shape {rv.type.shape}, but node {v!r} has "
                    f"{len(self.configs[v])} parent configurations × {self.cards[v]} states "
                    f"= {cells} cells"
                )
            value = model.rvs_to_values[rv]
            transform = model.rvs_to_transforms.get(rv)
            forward = None
            if transform is not None:
                inp = pt.tensor(dtype="float64", shape=shape, name=f"{rv.name}_untransformed")
                out = transform.forward(inp, *rv.owner.inputs)
                forward = pytensor.function([inp], out, on_unused_input="ignore")
            writers.append((value.name, kind, i, shape, forward))
            bound.append(value)
            claimed.add(rv.name)
        others = sorted(set(free) - claimed)
        if others:
            raise ValueError(
                f"model: free variables {others} are not CPTs of the network's nodes "
                f"{list(self.nodes)}; the data-augmentation step samples the CPTs of a discrete "
                "network from released family tables only (continuous nodes and other "
                "parameters are not supported)"
            )
        self._bound = bound
        self._writers = writers
        return self

    def build_model(self) -> Any:
        """A PyMC model with one flat ``{node}_cpt`` variable per node (``Dirichlet(α₀)`` rows,
        dims ``{node}_cell``, the coordinates of :attr:`coords`) and no likelihood: the
        variables for ``with da.build_model(): pm.sample(step=da)``."""
        import pymc as pm

        from pymc_rdp.distributions.flat_cpt import flat_cpt

        with pm.Model(coords=self.coords) as model:
            for v in self.nodes:
                shape = (len(self.configs[v]), self.cards[v])
                flat_cpt(f"{v}_cpt", np.full(shape, self.alpha0), dims=f"{v}_cell")
        return model

    # ------------------------------------------------------------ the chain state

    @staticmethod
    def competence(var: Any, has_grad: Any) -> Competence:
        """Never assigned automatically: pass the step to ``pm.sample(step=...)``."""
        return Competence.INCOMPATIBLE

    def setup_chain(self, rng: Any, tune: int, draws: int) -> None:
        """Start a chain: a new generator and latent records (forward-sampled from
        :meth:`initial_cpts`; for an unknown N, as many records as the releases suggest)."""
        from pymc.util import get_random_generator

        self.rng = get_random_generator(rng, copy=False)
        self._x = self._initial_state(self.rng)

    def _initial_state(self, rng: np.random.Generator) -> np.ndarray:
        if self.n_records is None:
            from pymc_rdp.distributions.unknown_total import initial_records

            return initial_records(self, rng)
        return self._records(rng)

    def _advance(self, seed: int) -> tuple[np.ndarray, dict[str, float]]:
        """``sweeps`` iterations from the chain's records; the last CPT draw and its stats."""
        if self.n_records is None:
            from pymc_rdp.distributions.unknown_total import run_chain_unknown_total

            theta, stats, x = run_chain_unknown_total(
                self, 1, self.sweeps - 1, seed, records=self._x
            )
        else:
            theta, stats, x = self.run_chain(1, self.sweeps - 1, seed, records=self._x)
        self._x = x
        out: dict[str, float] = {}
        for key, val in stats.items():
            out[key] = int(val[0]) if key == "n_records" else float(val[0])
        return theta[0], out

    def step(self, point: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list]:
        """One draw: ``sweeps`` iterations of the moves, then the CPT variables set to
        ``θ | x``. The incoming CPT values are not used (the records are the state)."""
        from pymc_rdp.distributions import _augmentation_kernels as k

        if self._bound is None:
            self.bind()
        if self._x is None:
            self.setup_chain(None, 0, 0)
        theta, stats = self._advance(int(self.rng.integers(0, 2**31 - 1)))
        new = dict(point)
        off = self._net[4]
        cell_n = None
        for name, kind, i, shape, forward in self._writers:
            if kind == "cpt":
                value = theta[off[i] : off[i + 1]].reshape(shape)
            else:
                if cell_n is None:
                    cell_n = np.zeros(int(off[-1]), dtype=np.int64)
                    row_n = np.zeros(int(self._net[5][-1]), dtype=np.int64)
                    k.tabulate(self._x, self._net, cell_n, row_n)
                g = self.rng.standard_gamma(self.alpha0 + cell_n[off[i] : off[i + 1]])
                value = (g / g.sum()).reshape(shape)
            value = np.asarray(value, dtype=np.float64)
            new[name] = np.asarray(forward(value) if forward is not None else value)
        return new, [stats]
