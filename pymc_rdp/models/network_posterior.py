"""Posterior draws of a fitted :class:`pymc_rdp.BayesianNetwork`'s CPTs.

:func:`sample_network` is the body of :meth:`pymc_rdp.BayesianNetwork.sample`: it dispatches to
data augmentation, exact conjugate draws, the point CPTs as one draw or NUTS (the choice:
:mod:`pymc_rdp.models.posterior_sampling`), attaches the ledger and stores the posterior mean.
:func:`cpt_draws` reads one node's CPT draws back as a 3-D array. Sampling is post-processing of
the releases and never charges the accountant.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import sys
from typing import Any

import numpy as np

from pymc_rdp.distributions.bn_models import cell_dim, cpt_name, table_dims
from pymc_rdp.models.network_fit import normalise_rows

__all__ = [
    "NUTS_ENGINES",
    "check_nuts_engine",
    "cpt_draws",
    "is_point_model",
    "nuts_chain_cores",
    "sample_network",
]

#: ``pm.sample``'s NUTS engines and the packages each needs (``pip install 'pymc-rdp[extra]'``)
NUTS_ENGINES: dict[str, tuple[tuple[str, ...], str | None]] = {
    "pymc": ((), None),
    "nutpie": (("nutpie",), "nutpie"),
    "numpyro": (("jax", "numpyro"), "jax"),
    "blackjax": (("jax", "blackjax"), None),
}


def nuts_chain_cores(chains: int, kwargs: dict[str, Any]) -> int | None:
    """Processes for PyMC's NUTS chains when the caller gave no ``cores``, or None (PyMC's own).

    PyMC's default, ``min(4, os.cpu_count() // 2)``, takes half the CPUs for hardware threads,
    so on a 2-CPU machine it runs the chains one after another. Where PyMC starts its chain
    processes by ``fork`` (its default on Linux, which needs no ``if __name__ == "__main__"``
    guard in the caller's script), the chains get ``min(chains, os.cpu_count())`` processes:
    the same draws, chain for chain, in about half the wall time on two cores
    (``benchmarks/bench_randomized_records.py --nuts-cores``). Left to PyMC: a caller's ``cores`` or
    ``mp_ctx``, another engine (nutpie runs its chains in threads), another start method, and a
    process that has loaded JAX (``jaxlib``), whose threads make ``fork`` unsafe (JAX warns of
    deadlocks).
    """
    if "cores" in kwargs or "mp_ctx" in kwargs:
        return None
    if isinstance(chains, bool) or not isinstance(chains, (int, np.integer)) or chains < 2:
        return None  # one chain, or a value for PyMC to refuse with its own message
    # jax's compiled library, not the lazy placeholder that ArviZ puts in sys.modules["jax"]
    if kwargs.get("nuts_sampler", "pymc") != "pymc" or "jaxlib" in sys.modules:
        return None
    if importlib.util.find_spec("nutpie") is not None and "nuts_sampler" not in kwargs:
        return None  # PyMC may pick nutpie
    # the start method set in this process, else the platform's default (listed first)
    method = multiprocessing.get_start_method(allow_none=True)
    if (method or multiprocessing.get_all_start_methods()[0]) != "fork":
        return None
    return min(int(chains), os.cpu_count() or 1)


def check_nuts_engine(nuts_sampler: Any) -> None:
    """Refuse an unknown NUTS engine, or one whose packages are not installed.

    Raises
    ------
    ValueError
        ``nuts_sampler`` is not one of :data:`NUTS_ENGINES` (or None: PyMC's choice).
    ImportError
        A package the engine needs is missing (the message names the install command).
    """
    if nuts_sampler is None:
        return
    if nuts_sampler not in NUTS_ENGINES:
        raise ValueError(
            f"nuts_sampler must be one of {sorted(NUTS_ENGINES)} or None, got {nuts_sampler!r}"
        )
    packages, extra = NUTS_ENGINES[nuts_sampler]
    missing = [m for m in packages if importlib.util.find_spec(m) is None]
    if missing:
        how = f"pip install 'pymc-rdp[{extra}]'" if extra else f"pip install {' '.join(missing)}"
        raise ImportError(
            f"nuts_sampler={nuts_sampler!r} needs {', '.join(missing)}, not installed: {how}"
        )


def sample_network(
    bn: Any,
    draws: int,
    tune: int,
    chains: int,
    random_seed: Any,
    sampler: str | None,
    /,
    **kwargs: Any,
) -> Any:
    """Posterior draws of ``bn``'s CPTs as an ArviZ DataTree carrying the ledger.

    The options and the samplers are those of :meth:`pymc_rdp.BayesianNetwork.sample`; the
    result is also stored as ``bn.idata`` and, for a noise-aware fit, its posterior mean as
    ``bn``'s point CPTs.
    """
    bn._check_fitted()
    import arviz as az

    from pymc_rdp.models.posterior_sampling import resolve_sampler, sample_augmented

    use = resolve_sampler(bn, sampler)
    nuts = not (
        use == "augmentation"
        or bn._posterior_params is not None
        or (bn._point_cpts is not None and bn.model is not None and bn._is_point_model())
    )
    if "nuts_sampler" in kwargs:
        if not nuts:
            raise ValueError(
                "nuts_sampler applies to NUTS on a Gaussian/Laplace fit's model "
                "(sample(sampler='nuts', nuts_sampler=...)); this fit samples without NUTS"
            )
        check_nuts_engine(kwargs["nuts_sampler"])
    coords = dict(bn.coords)
    dims = {cpt_name(v): [cell_dim(v)] for v in bn.nodes}
    if use == "augmentation":
        idata = sample_augmented(bn, draws, tune, chains, random_seed, **kwargs)
    elif bn._posterior_params is not None:
        rng = np.random.default_rng(random_seed)
        post = {
            cpt_name(v): _dirichlet_draws(rng, a, chains, draws).reshape(chains, draws, -1)
            for v, a in bn._posterior_params.items()
        }
        idata = az.from_dict({"posterior": post}, coords=coords, dims=dims)
    elif bn._point_cpts is not None and bn.model is not None and bn._is_point_model():
        post = {cpt_name(v): bn._point_cpts[v].reshape(1, 1, -1) for v in bn.nodes}
        idata = az.from_dict({"posterior": post}, coords=coords, dims=dims)
    else:
        from pymc_rdp.distributions import sample as _sample

        cores = nuts_chain_cores(chains, kwargs)
        if cores is not None:
            kwargs["cores"] = cores
        idata = _sample(
            draws,
            model=bn.model,
            accountant=bn.accountant,
            tune=tune,
            chains=chains,
            random_seed=random_seed,
            **kwargs,
        )
    _attach(idata, bn.model, bn.accountant)
    bn.idata = idata
    if bn.noise_aware or bn.mechanism == "randomized_response":  # the posterior mean
        bn._point_cpts = {v: normalise_rows(bn.cpt_draws(idata, v).mean(axis=0)) for v in bn.nodes}
    return idata


def is_point_model(bn: Any) -> bool:
    """The released (Dirichlet) or naive CPTs: nothing to infer."""
    mech = bn.family_mechanism
    return mech is not None and (mech.releases_probabilities or not bn.noise_aware)


def cpt_draws(bn: Any, idata: Any, node: str) -> np.ndarray:
    """Draws of ``node``'s CPT: float64 array (draws, parent configurations, child states).

    Chains are stacked (chain-major). Reads the flat layout ``{node}_cell`` of
    :class:`pymc_rdp.BayesianNetwork`'s posteriors and the 2-D layout
    ``({node}_parent_config, {node}_state)``.
    """
    bn._check_node(node)
    da = idata["posterior"][cpt_name(node)]
    if cell_dim(node) in da.dims:
        shape = (len(bn.parent_configurations(node)), len(bn._known_states()[node]))
        arr = da.transpose("chain", "draw", cell_dim(node)).to_numpy()
        return np.asarray(arr.reshape(-1, *shape), dtype=np.float64)
    dc, ds = table_dims(node)
    arr = da.transpose("chain", "draw", dc, ds).to_numpy()
    return np.asarray(arr.reshape(-1, arr.shape[2], arr.shape[3]), dtype=np.float64)


def _dirichlet_draws(
    rng: np.random.Generator, a: np.ndarray, chains: int, draws: int
) -> np.ndarray:
    g = rng.standard_gamma(np.broadcast_to(a, (chains, draws, *a.shape)))
    return g / g.sum(axis=-1, keepdims=True)


def _attach(idata: Any, model: Any, accountant: Any) -> None:
    """Store the model's private nodes and the accountant (JSON) in the DataTree's attrs."""
    from pymc_rdp.distributions import attach_ledger

    attach_ledger(idata, model=model, accountant=accountant)
