"""Which sampler :meth:`pymc_rdp.BayesianNetwork.sample` runs, and the data-augmentation run.

``sampler="augmentation"`` (the default of every noise-aware fit: Gaussian and Laplace tables,
per-family or joint, Dirichlet-released CPTs, and randomised records over more than
:data:`~pymc_rdp.distributions.records_model.NUTS_DEFAULT_JOINT_STATES` joint states) draws the
exact posterior of the CPTs given the releases with :class:`pymc_rdp.DataAugmentation` (its fast
path, :meth:`DataAugmentation.sample`).
``sampler="nuts"`` keeps the earlier behaviour: NUTS on the fit's PyMC model (per-family or joint
likelihood), or for a Dirichlet fit the released CPTs as one draw (no NUTS model exists for
them). For randomised records it is NUTS on their exact likelihood
(:mod:`pymc_rdp.distributions.records_model`), up to a million joint states of the nodes, and
their default up to a hundred thousand: its mixing does not depend on how little information
the randomization leaves, where data augmentation's does.
Fits without privacy draw their conjugate posterior exactly and the naive baseline returns its
point CPTs whatever the default; asking them for ``"augmentation"`` is refused.
"""

from __future__ import annotations

from typing import Any

from pymc_rdp.curation.table_budget import TABLE_MECHANISMS

__all__ = ["SAMPLERS", "resolve_sampler", "sample_augmented"]

SAMPLERS = ("augmentation", "nuts")


def resolve_sampler(bn: Any, sampler: str | None) -> str:
    """``"augmentation"`` or ``"nuts"`` for a fitted network (module notes).

    Raises
    ------
    ValueError
        ``sampler`` is not one of :data:`SAMPLERS` (or None), or ``"augmentation"`` for a fit
        without releases or for the naive baseline.
    """
    if sampler is not None and sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS} or None, got {sampler!r}")
    if bn.mechanism == "randomized_response":  # records: NUTS while small, else augmentation
        from pymc_rdp.distributions.records_model import (
            MAX_JOINT_STATES,
            NUTS_DEFAULT_JOINT_STATES,
            joint_states,
        )

        size = joint_states([bn.cards[v] for v in bn.nodes])
        if sampler == "nuts" and size > MAX_JOINT_STATES:
            raise ValueError(
                f"sampler='nuts': the exact likelihood of randomised records is modelled over "
                f"the nodes' joint states, {size:,} here (over {MAX_JOINT_STATES:,}); call "
                "sample() without sampler= (the exact posterior by data augmentation)"
            )
        if sampler is None:
            return "nuts" if size <= NUTS_DEFAULT_JOINT_STATES else "augmentation"
        return sampler
    released = TABLE_MECHANISMS.get(bn.mechanism)  # None: no privacy, or the naive baseline
    aware = released is not None and (released.releases_probabilities or bool(bn.noise_aware))
    if not aware:
        if sampler == "augmentation":
            what = "no privacy" if bn.mechanism == "none" else "noise_aware=False"
            raise ValueError(
                f"sampler='augmentation' needs a noise-aware fit; this fit ({what}) has an exact "
                "or point posterior: call sample() without sampler="
            )
        return "nuts"
    return sampler or "augmentation"


def sample_augmented(
    bn: Any,
    draws: int,
    tune: int,
    chains: int,
    random_seed: Any,
    time_limit: float | None = None,
    **options: Any,
) -> Any:
    """The exact posterior of ``bn``'s CPTs by data augmentation, as an ArviZ DataTree.

    ``time_limit`` goes to :meth:`pymc_rdp.DataAugmentation.sample` (wall seconds after which
    the chains keep no further draw); ``options`` go to
    :meth:`pymc_rdp.DataAugmentation.from_network` (``moves``, ``block_size``, ``n_prior``...).
    A Dirichlet fit without a public ``N`` needs ``n_prior``.
    """
    from pymc_rdp.distributions.data_augmentation import DataAugmentation

    if bn.mechanism == "randomized_response":
        from pymc_rdp.distributions.records_model import MAX_JOINT_STATES, joint_states
        from pymc_rdp.models.network_randomized import warn_slow_mixing

        size = joint_states([bn.cards[v] for v in bn.nodes])
        warn_slow_mixing({v: r.mechanism for v, r in bn.releases.items()}, size <= MAX_JOINT_STATES)
    da = DataAugmentation.from_network(bn, **options)
    return da.sample(
        draws=draws, tune=tune, chains=chains, random_seed=random_seed, time_limit=time_limit
    )
