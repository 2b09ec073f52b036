"""Values released record by record (randomized response) in the data-augmentation sampler.

The oracle enumerates every assignment of joint states to the N ordered records, weighted by the
records' Dirichlet-multinomial marginal, the randomized-response likelihood of each released
value given its record and any table release's density; the CPTs' posterior moments are then
exact mixtures of Dirichlet moments."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from test_distributions_data_augmentation import (
    _family_tables,
    _log_eta,
    max_z,
    mixed_moments,
    score_and_moments,
)

from pymc_rdp.distributions.data_augmentation import DataAugmentation
from pymc_rdp.privacy.mechanisms import (
    CategoricalRandomizedResponse,
    GaussianMechanism,
    RandomizedResponse,
)

STRUCTURE = {"a": [], "b": ["a"], "c": ["a", "b"]}
STATES = {"a": [0, 1], "b": [0, 1, 2], "c": [0, 1]}
N = 4

RR_A = CategoricalRandomizedResponse(0.75, 2)
RR_B = CategoricalRandomizedResponse(0.6, 3)
RR_C = RandomizedResponse(0.7)  # binary randomized response, bits as released values
# fixed released values: the test is about the posterior, not the noise
RELEASED = {
    "a": (np.array([0, 1, 1, 0]), RR_A),
    "b": (np.array([2, 0, 1, 1]), RR_B),
    "c": (np.array([1.0, 0.0, 1.0, 1.0]), RR_C),
}
TABLE_B = (np.array([[0.4, 1.9, 1.2], [-0.6, 0.3, 1.1]]), GaussianMechanism(1.2, math.sqrt(2)))


def _log_m(mech, k: int) -> np.ndarray:
    q = (1.0 - mech.p) / (k - 1)
    out = np.full((k, k), math.log(q))
    np.fill_diagonal(out, math.log(mech.p))
    return out


def exact_record_moments(structure, states, randomized, tables, n, alpha0=1.0):
    """Exact E[θ], E[θ²] of every CPT entry given values released record by record
    (``randomized``: node -> (values, mechanism)) and table releases (``tables``)."""
    nodes = list(structure)
    cards = {v: len(states[v]) for v in nodes}
    shape = [cards[v] for v in nodes]
    n_joint = int(np.prod(shape))
    decoded = np.array(np.unravel_index(np.arange(n_joint), shape)).T  # joint -> node values
    # per record and joint state: log of the released values' probability
    rec = np.zeros((n, n_joint))
    for v, (values, mech) in randomized.items():
        log_m = _log_m(mech, cards[v])
        codes = np.asarray(values).astype(int)
        rec += log_m[decoded[:, nodes.index(v)]][:, codes].T
    logw, first, second = [], [], []
    for assign in itertools.product(range(n_joint), repeat=n):
        joint = np.bincount(assign, minlength=n_joint)
        fam = _family_tables(joint, structure, cards)
        score, m1, m2 = score_and_moments(fam, cards, alpha0)
        logw.append(float(rec[np.arange(n), list(assign)].sum()) + score + _log_eta(fam, tables))
        first.append(m1)
        second.append(m2)
    return mixed_moments(logw, first, second, nodes)


@pytest.fixture(scope="module")
def exact_all_released():
    return exact_record_moments(STRUCTURE, STATES, RELEASED, {}, N)


@pytest.fixture(scope="module")
def exact_mixed():
    released = {v: RELEASED[v] for v in ("a", "c")}
    return exact_record_moments(STRUCTURE, STATES, released, {"b": TABLE_B}, N)


@pytest.mark.parametrize(
    "moves",
    [
        ("gibbs",),
        ("gibbs", "subtree"),
        ("subtree",),
        ("gibbs", "pair"),
        ("gibbs", "gibbs", "subtree", "diffuse_pair"),
    ],
)
def test_released_records_match_enumeration(moves, exact_all_released):
    """Every node released record by record; the moves that change a parent carry the released
    child along with its value kept (``"subtree"`` alone exercises that path only)."""
    da = DataAugmentation(STRUCTURE, STATES, RELEASED, N, moves=moves, block_size=2)
    idata = da.sample(draws=15000, tune=200, chains=2, random_seed=5)
    assert max_z(idata, exact_all_released) < 4.5


def test_released_records_with_guided_pairs_match_enumeration(exact_all_released):
    """Subtree moves alone whose pairs keep their directions (every node): the released
    children move along with their values kept, the directions reversed on rejections."""
    da = DataAugmentation(
        STRUCTURE, STATES, RELEASED, N, moves=("subtree",), block_size=2, guided_pairs=True
    )
    idata = da.sample(draws=15000, tune=200, chains=2, random_seed=6)
    assert max_z(idata, exact_all_released) < 4.5


@pytest.mark.parametrize("moves", [("gibbs", "subtree"), ("subtree",)])
def test_released_records_beside_a_table_release_match_enumeration(moves, exact_mixed):
    """a and c released record by record, b's family table with Gaussian noise."""
    releases = {"a": RELEASED["a"], "b": TABLE_B, "c": RELEASED["c"]}
    da = DataAugmentation(STRUCTURE, STATES, releases, N, moves=moves, block_size=2)
    idata = da.sample(draws=15000, tune=200, chains=2, random_seed=8)
    assert max_z(idata, exact_mixed) < 4.5


def test_the_released_values_stay_fixed_and_the_records_move():
    rng = np.random.default_rng(1)
    n = 300
    a = rng.integers(0, 2, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = rng.integers(0, 2, n)
    released = {
        "a": (RR_A.release(a), RR_A),
        "b": (RR_B.release(b), RR_B),
        "c": (RR_C.release(c), RR_C),
    }
    da = DataAugmentation(STRUCTURE, STATES, released, n)
    assert da.moves == ("gibbs", "gibbs", "subtree", "diffuse_pair")
    start = da._records(np.random.default_rng(0))
    assert start.shape == (n, 6)
    _, stats, x = da.run_chain(30, 10, 3, records=start)
    for col, v in enumerate("abc"):
        np.testing.assert_array_equal(x[:, 3 + col], np.asarray(released[v][0]).astype(int))
    assert (x[:, :3] != start[:, :3]).any()
    assert 0.0 < float(np.mean(stats["accept_subtree"])) <= 1.0
    # records given with altered released values are refused
    bad = x.copy()
    bad[0, 3] = 1 - bad[0, 3]
    with pytest.raises(ValueError, match="released values"):
        da.run_chain(2, 0, 1, records=bad)
    with pytest.raises(ValueError, match="shape"):
        da.run_chain(2, 0, 1, records=x[:, :3])


def test_bad_releases_of_records_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"releases\['a'\].*4 released values"):
        DataAugmentation(STRUCTURE, STATES, RELEASED, 5)
    with pytest.raises(ValueError, match=r"releases\['b'\].*0\.\.2"):
        DataAugmentation(STRUCTURE, STATES, {**RELEASED, "b": (np.array([0, 3, 1, 1]), RR_B)}, N)
    with pytest.raises(ValueError, match=r"releases\['b'\].*over 2 values"):
        DataAugmentation(STRUCTURE, STATES, {**RELEASED, "b": (np.array([0, 1, 1, 1]), RR_A)}, N)
    with pytest.raises(ValueError, match=r"releases\['a'\].*1-D"):
        DataAugmentation(STRUCTURE, STATES, {**RELEASED, "a": (np.zeros((2, 2), int), RR_A)}, N)
    with pytest.raises(ValueError, match=r"releases\['c'\].*integer"):
        DataAugmentation(STRUCTURE, STATES, {**RELEASED, "c": (np.array([0.5, 0, 1, 1]), RR_C)}, N)
    with pytest.raises(ValueError, match="n_records=N"):
        DataAugmentation(STRUCTURE, STATES, RELEASED, None, n_prior=np.ones(10))
    with pytest.raises(ValueError, match="keep the released values fixed"):
        DataAugmentation(STRUCTURE, STATES, RELEASED, N, moves=("record",))


def test_the_pymc_step_samples_the_same_posterior(exact_all_released):
    """``pm.sample(step=da)`` on released records: the chain's state keeps the released values
    and the CPTs' moments agree with the enumeration."""
    import pymc as pm

    da = DataAugmentation(STRUCTURE, STATES, RELEASED, N, moves=("gibbs", "subtree"))
    with da.build_model():
        idata = pm.sample(
            step=da, draws=3000, tune=100, chains=2, cores=1, random_seed=3,
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip
    for col, v in enumerate("abc"):
        np.testing.assert_array_equal(da._x[:, 3 + col], np.asarray(RELEASED[v][0]).astype(int))
    assert max_z(idata, exact_all_released) < 4.5
