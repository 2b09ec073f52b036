"""DirichletTableMechanism: a CPT charged as one release, moves within and across rows.

The attacks: under replace-one neighbours a record may leave one parent configuration (row) and
join another. The product of independent row Dirichlets has a Rényi divergence that adds over
rows, so that move costs a removal in one row plus an addition in the other. Charging the rows
as parallel partitions (the largest row cost) under-charged it.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pymc as pm
import pytest
from scipy.special import gammaln

import pymc_rdp.distributions as D
from pymc_rdp.privacy import rdp
from pymc_rdp.privacy.accountant import Accountant
from pymc_rdp.privacy.dirichlet_divergence import exact_add_remove_pieces, renyi_divergence
from pymc_rdp.privacy.mechanisms import (
    DirichletMechanism,
    DirichletTableMechanism,
    mechanism_from_dict,
)

SQRT2 = math.sqrt(2.0)
BIG = 1e7  # background count: the add/remove pieces are suprema approached as a row grows


def _divergence(r, alpha, c, c2, lam):
    """D_λ(∏ₐ Dir(rₐcₐ + αₐ) ‖ ∏ₐ Dir(rₐc2ₐ + αₐ)): a sum over the rows."""
    r = np.broadcast_to(np.asarray(r, dtype=float), (c.shape[0],))[:, None]
    return float(renyi_divergence(r * c + alpha, r * c2 + alpha, lam).sum())


def _rounding(r, alpha, c, c2, lam):
    """A bound on the float error of the divergence: log Γ terms of size up to ~1e8 cancel."""
    r = np.broadcast_to(np.asarray(r, dtype=float), (c.shape[0],))[:, None]
    u, v = r * c + alpha, r * c2 + alpha
    mag = sum(np.abs(gammaln(x)).sum() + np.abs(gammaln(x.sum(-1))).sum() for x in (u, v))
    return 1e-12 + 64 * np.finfo(float).eps * lam * mag / (lam - 1)


def _across_rows_attack(r, alpha, lam):
    """The worst pair found for a move across the two rows of a 2 × 2 table: the record leaves
    (row a, state 0) and joins (row b, state 0), each row holding BIG records in state 1."""
    best = 0.0
    for a, b in ((0, 1), (1, 0)):
        c = np.array([[0.0, BIG], [0.0, BIG]])
        c2 = c.copy()
        c[a, 0] = 1.0
        c2[b, 0] = 1.0
        best = max(best, _divergence(r, alpha, c, c2, lam))
    return best


def _old_charge(r, alpha, lam):
    """The former charge: rows as parallel partitions, each with its own exact histogram curve."""
    return float(np.max(DirichletMechanism(r, alpha, SQRT2, 1.0, analysis="exact").rdp(lam)))


def _release_charge(r, alpha, counts, lam):
    """What release() charges for one draw of a DirichletRelease CPT, read from the accountant."""
    mech = DirichletMechanism(r, alpha, SQRT2, 1.0, analysis="exact")
    with pm.Model() as model:
        D.DirichletRelease("cpt", counts, mech)
    acc = Accountant(orders=np.array([lam]))
    D.release_dirichlet(model, draws=1, accountant=acc)
    return float(acc.rdp()[0])


def test_attack_per_category_alpha_two_rows() -> None:
    """Per-category α (2, 10), r = 0.5392, λ = 2: rows in parallel charged 0.2201, the move of a
    record between the rows (state 0 in both) reaches 0.3325."""
    r, alpha, lam = 0.5392, np.array([2.0, 10.0]), 2.0
    attack = _across_rows_attack(r, alpha, lam)
    old = _old_charge(r, alpha, lam)
    assert old == pytest.approx(0.2201, abs=5e-4)
    assert attack == pytest.approx(0.3325, abs=5e-4)
    assert attack > 1.5 * old  # the former charge was broken by this pair
    charge = _release_charge(r, alpha, np.array([[1, 0], [0, 0]]), lam)
    assert charge >= attack
    # the supremum over the across-row moves: A(α₍₁₎ + s) + B(α₍₁₎), attained as BIG → ∞
    assert charge == pytest.approx(attack, rel=1e-5)


def test_attack_one_setting_per_row() -> None:
    """One setting per row (r, α) = (0.17, 0.78) and (2.08, 38), λ = 5.4: removing the record from
    row 0 and adding it to row 1 costs more than either row's own replace-one change."""
    r, alpha, lam = np.array([0.17, 2.08]), np.array([[0.78, 0.78], [38.0, 38.0]]), 5.4
    attack = _across_rows_attack(r, alpha, lam)
    old = _old_charge(r, alpha, lam)
    assert attack > 1.2 * old
    charge = _release_charge(r, alpha, np.array([[3, 1], [0, 2]]), lam)
    assert charge >= attack
    assert charge == pytest.approx(attack, rel=1e-5)


def _random_search(n: int, seed: int) -> float:
    """n random tables (2–4 rows, 2–4 states, a setting per row, per-category α, some large
    counts) and a random replace-one move (across rows in 3 of 4 cases), λ ∈ [1.1, 50]: the
    exact divergence (both directions) never exceeds the table charge. Returns the largest
    ratio of the divergence to the former per-row charge."""
    rng = np.random.default_rng(seed)
    worst_old = 0.0
    for _ in range(n):
        rows, k = rng.integers(2, 5), rng.integers(2, 5)
        lam = float(10 ** rng.uniform(math.log10(1.1), math.log10(50)))
        alpha = 10 ** rng.uniform(-1, 1.5, (rows, k))
        r = rng.uniform(0.05, 0.95, rows) * alpha.min(axis=1) / (lam - 1)
        c = rng.integers(0, 3, (rows, k)).astype(float)
        c[rng.random((rows, k)) < 0.3] += 10 ** rng.uniform(3, 7)
        a, i = rng.integers(rows), rng.integers(k)
        b = (a + rng.integers(1, rows)) % rows if rng.random() < 0.75 else a
        j = rng.integers(k) if b != a else (i + rng.integers(1, k)) % k
        c[a, i] = max(c[a, i], 1.0)
        c2 = c.copy()
        c2[a, i] -= 1
        c2[b, j] += 1
        # the record's own cells hold few records sometimes (the worst case)
        if rng.random() < 0.5:
            c[a, i], c2[a, i] = 1.0, 0.0
            c[b, j], c2[b, j] = (0.0, 1.0) if b != a else (c[b, j], c[b, j] + 1.0)
        d = max(_divergence(r, alpha, c, c2, lam), _divergence(r, alpha, c2, c, lam))
        table = DirichletTableMechanism(r, alpha, SQRT2, 1.0, rows=int(rows), analysis="exact")
        charge = float(table.rdp(lam))
        assert d <= charge + _rounding(r, alpha, c, c2, lam)
        worst_old = max(worst_old, d / _old_charge(r, alpha, lam))
    return worst_old


def test_random_search_never_above_the_charge() -> None:
    # the former per-row charge is exceeded by ≥ 1.5× somewhere in the search
    assert _random_search(3000, 20261201) > 1.5


@pytest.mark.slow
def test_random_search_large() -> None:
    for seed in range(5):
        _random_search(20_000, 300 + seed)


def test_theorem1_and_add_remove_are_the_largest_row() -> None:
    r, alpha = np.array([0.1, 0.4, 0.2]), np.array([[1.0, 3.0], [2.0, 2.0], [0.5, 9.0]])
    orders = np.array([1.5, 2.0, 5.0])
    t1 = DirichletTableMechanism(r, alpha, SQRT2, 1.0, rows=3)
    rows_t1 = DirichletMechanism(r, alpha, SQRT2, 1.0).rdp(orders)
    np.testing.assert_array_equal(t1.rdp(orders), rows_t1.max(axis=0))
    ar = DirichletTableMechanism(
        r, alpha, 1.0, 1.0, rows=3, analysis="exact", neighbours="add-remove"
    )
    rows_ar = DirichletMechanism(r, alpha, 1.0, 1.0, analysis="exact", neighbours="add-remove").rdp(
        orders
    )
    np.testing.assert_array_equal(ar.rdp(orders), rows_ar.max(axis=0))
    # replace-one exact: at least every row's own curve and never above Theorem 1
    ex = DirichletTableMechanism(r, alpha, SQRT2, 1.0, rows=3, analysis="exact")
    e = ex.rdp(orders)
    assert (e >= DirichletMechanism(r, alpha, SQRT2, 1.0, analysis="exact").rdp(orders)).all()
    assert (e <= t1.rdp(orders)).all()


def test_across_rows_is_removal_plus_addition() -> None:
    """Two rows with one shared setting and per-category α: the charge is A(α₍₁₎+s) + B(α₍₁₎),
    the sum of the add/remove pieces of the smallest concentration."""
    r, alpha, orders = 0.3, np.array([0.9, 4.0, 2.0]), np.array([1.5, 2.0, 3.0])
    t = DirichletTableMechanism(r, alpha, SQRT2, 1.0, rows=2, analysis="exact")
    rem, add = exact_add_remove_pieces(orders, r, 0.9)
    one_cell = rdp.dirichlet(orders, r, 0.9, 1.0, 1.0)
    np.testing.assert_allclose(
        t.rdp(orders), np.minimum(rem, one_cell) + np.minimum(add, one_cell), rtol=1e-15
    )
    # one row: only moves within the row (distinct states)
    one = DirichletTableMechanism(r, alpha, SQRT2, 1.0, rows=1, analysis="exact")
    np.testing.assert_array_equal(
        one.rdp(orders), DirichletMechanism(r, alpha, SQRT2, 1.0, analysis="exact").rdp(orders)
    )
    assert (t.rdp(orders) > one.rdp(orders)).all()


def test_ledger_entry_recomputes_from_its_parameters() -> None:
    mech = DirichletMechanism(
        np.array([0.2, 0.5]), np.array([[1.0, 3.0], [2.0, 6.0]]), SQRT2, 1.0, analysis="exact"
    )
    with pm.Model() as model:
        D.DirichletRelease("cpt", np.array([[1, 2], [3, 0]]), mech, tag="t")
    acc = Accountant()
    D.release_dirichlet(model, draws=3, accountant=acc)
    [entry] = acc.ledger  # one entry for the table, no parallel partitions to merge
    assert entry.mechanism == "dirichlet_table" and entry.group is None
    back = mechanism_from_dict(json.loads(json.dumps(entry.mechanism_dict())))
    assert isinstance(back, DirichletTableMechanism) and back.rows == 2
    np.testing.assert_array_equal(entry.curve, 3 * back.rdp(acc.orders))
    np.testing.assert_array_equal(acc.rdp(), entry.curve)
    restored = Accountant.from_json(acc.to_json())
    np.testing.assert_array_equal(restored.rdp(), acc.rdp())


def test_calibrated_mechanisms_meet_their_target_as_tables(rng: np.random.Generator) -> None:
    """Paper-calibrated settings (Theorem 1 at λ, one ε per row): the exact table charge, moves
    across rows included, stays ≤ the largest row's target, and so does the attack."""
    for _ in range(200):
        lam = float(10 ** rng.uniform(math.log10(1.5), 2))
        eps = 10 ** rng.uniform(-3, 1, 3)
        m = DirichletMechanism.calibrate(eps, lam, SQRT2, 1.0)
        per_row = DirichletTableMechanism(m.r, m.alpha, SQRT2, 1.0, rows=3, analysis="exact")
        assert float(per_row.rdp(lam)) <= eps.max()
        shared = DirichletTableMechanism(m.r[0], m.alpha[0], SQRT2, 1.0, rows=3, analysis="exact")
        assert float(shared.rdp(lam)) <= eps[0]
        r2, a2 = m.r[:2], np.repeat(m.alpha[:2, None], 2, axis=1)
        assert _across_rows_attack(r2, a2, lam) <= eps[:2].max() * (1 + 1e-9)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"rows": 0}, ValueError, "rows"),
        ({"rows": 2.5}, TypeError, "rows"),
        ({"rows": True}, TypeError, "rows"),
        ({"r": np.array([0.1, 0.2, 0.3])}, ValueError, "one setting per row"),
        ({"l2_sensitivity": 1.0}, ValueError, "l2_sensitivity"),
        ({"linf_sensitivity": 0.5, "l2_sensitivity": SQRT2}, ValueError, "linf_sensitivity"),
        ({"analysis": "tight"}, ValueError, "analysis"),
        ({"neighbours": "swap"}, ValueError, "neighbours"),
        ({"r": -1.0}, ValueError, "r"),
    ],
)
def test_bad_input(kwargs, exc, match) -> None:
    args = {"r": 0.2, "alpha": 1.0, "l2_sensitivity": SQRT2, "linf_sensitivity": 1.0, "rows": 2}
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        DirichletTableMechanism(**args)


def test_from_mechanism_and_release_shape() -> None:
    m = DirichletMechanism(0.5, 2.0, SQRT2, 1.0)
    t = DirichletTableMechanism.from_mechanism(m, 3)
    assert t.params() == {**m.params(), "rows": 3}
    draws = t.release(np.array([[1, 2], [0, 0], [5, 1]]))
    assert draws.shape == (3, 2)
    np.testing.assert_allclose(draws.sum(axis=-1), 1.0)
    with pytest.raises(ValueError, match="rows"):
        t.release(np.array([[1, 2]]))
    with pytest.raises(TypeError, match="mechanism"):
        DirichletTableMechanism.from_mechanism("dirichlet", 3)
