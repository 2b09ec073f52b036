"""A reduced calibration check of the data-augmentation posterior (the full study is slow).

Replicates of the generative model: CPTs from the ``Dirichlet(1)`` prior, ``N`` records from
them, every family table released with Gaussian noise. If the sampler targets the posterior,
the true CPT entries fall in the central 80% posterior intervals at a rate of 0.8 over
replicates (Cook, Gelman & Rubin 2006, "Validation of software for Bayesian models using
posterior quantiles"). The same check must reject a posterior that reads the noisy counts as
exact (``Dirichlet(1 + max(y, 0))`` rows).
"""

from __future__ import annotations

import numpy as np

from pymc_rdp.bn.structure import family_table, forward_sample, parse_structure
from pymc_rdp.distributions.data_augmentation import DataAugmentation
from pymc_rdp.privacy.mechanisms import GaussianMechanism

STRUCTURE = {"a": [], "b": ["a"], "c": ["a", "b"]}
STATES = {"a": [0, 1], "b": [0, 1, 2], "c": [0, 1]}
N = 60
SIGMA = 4.0
REPLICATES = 24
LEVEL = 0.8


def _replicate(rng: np.random.Generator):
    structure, _ = parse_structure(STRUCTURE)
    cards = {v: len(s) for v, s in STATES.items()}
    cpts = {}
    for v in structure.order:
        rows = int(np.prod([cards[p] for p in STRUCTURE[v]], dtype=np.int64))
        cpts[v] = rng.dirichlet(np.ones(cards[v]), size=rows)
    codes = forward_sample(structure, cpts, cards, N, rng)
    tables = {v: family_table(codes, v, STRUCTURE[v], cards) for v in structure.order}
    noisy = {v: t + rng.normal(0.0, SIGMA, t.shape) for v, t in tables.items()}
    return cpts, noisy


def _coverage(cpts, lower, upper) -> np.ndarray:
    return np.concatenate(
        [((lower[v] <= cpts[v]) & (cpts[v] <= upper[v])).reshape(-1) for v in cpts]
    )


def test_central_intervals_cover_at_their_level():
    rng = np.random.default_rng(20261201)
    mech = GaussianMechanism(SIGMA, np.sqrt(2.0))
    q = ((1 - LEVEL) / 2, (1 + LEVEL) / 2)
    hits, naive_hits = [], []
    for rep in range(REPLICATES):
        cpts, noisy = _replicate(rng)
        releases = {v: (y, mech) for v, y in noisy.items()}
        da = DataAugmentation(STRUCTURE, STATES, releases, N)
        idata = da.sample(draws=300, tune=100, chains=2, random_seed=rep)
        lower, upper = {}, {}
        for v in cpts:
            draws = idata["posterior"][f"{v}_cpt"].to_numpy().reshape(-1, *cpts[v].shape)
            lower[v], upper[v] = np.quantile(draws, q, axis=0)
        hits.append(_coverage(cpts, lower, upper))
        # the noise-blind posterior: the released counts read as exact counts
        nlow, nup = {}, {}
        for v, y in noisy.items():
            alpha = 1.0 + np.maximum(y, 0.0)
            sample = np.stack([rng.dirichlet(a, size=600) for a in alpha], axis=1)
            nlow[v], nup[v] = np.quantile(sample, q, axis=0)
        naive_hits.append(_coverage(cpts, nlow, nup))
    coverage = float(np.mean(np.concatenate(hits)))
    naive = float(np.mean(np.concatenate(naive_hits)))
    # 24 replicates × 20 entries, correlated within a replicate: wide tolerance
    assert abs(coverage - LEVEL) < 0.08, coverage
    assert naive < LEVEL - 0.12, naive
