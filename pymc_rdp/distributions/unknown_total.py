"""An unknown number of records: a prior on N and birth/death moves of latent records.

Under add/remove neighbours (and whenever the caller has not declared it public) the number of
records ``N`` is private: it is exactly what a neighbour changes, so no exact total is released.
The sampler then treats ``N`` as a parameter with a proper prior ``p(N)`` on ``0..N_max`` and
targets

.. math::

    p(θ, N, x \\mid y) ∝ p(θ)\\, p(N) \\prod_{i=1}^{N} p(x_i \\mid θ)
    \\prod_v η_v(y_v \\mid s_v(x)),

where the released tables' totals carry the information about ``N`` (each noisy table sums to a
noisy ``N``); nothing is charged beyond the family tables themselves.

Birth/death move (a reversible-jump move between ``N`` and ``N ± 1``; Green 1995,
"Reversible jump Markov chain Monte Carlo computation and Bayesian model determination"): with
probability ½ propose a birth, a new record ``x* ~ p(x | θ)`` (forward sampling), else a death,
a record chosen uniformly. On the record counts ``n`` (all the target depends on) the birth
proposal has probability ``½ p(x* | θ)``, the reverse death ``½ n'_{x*} / (N + 1)``, and the
multinomial ratio is ``(N + 1) p(x* | θ) / n'_{x*}``, so the acceptance probability is

.. math:: \\min\\Bigl(1, \\frac{p(N + 1)}{p(N)} \\frac{η(y \\mid s + t(x^*))}{η(y \\mid s)}\\Bigr)

for a birth and ``min(1, p(N − 1)/p(N) · η(y | s − t(x_j)) / η(y | s))`` for the death of
record ``j``: the same mechanism ratio as the record move (Ju, Awan, Gong & Rao 2022), times the
prior ratio of ``N``. A proposal outside ``0..N_max`` is rejected. Only the record move
(``moves=("record",)``) runs with it: the collapsed moves' score is defined for a fixed ``N``.
"""

# ruff: noqa: NPY002
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from numba import njit

from pymc_rdp.distributions import _augmentation_kernels as k
from pymc_rdp.distributions import compile_ahead as ca
from pymc_rdp.distributions.augmentation_arrays import RECORD_DTYPE, draws_array

__all__ = ["birth_death", "check_total_prior", "initial_records", "run_chain_unknown_total"]


def check_total_prior(n_prior: Any) -> np.ndarray:
    """``log p(N)`` for ``N = 0..len(n_prior) − 1`` from probabilities (any positive scale).

    Raises
    ------
    ValueError
        Not a 1-D array of finite values ``>= 0`` with positive mass at some ``N >= 1``.
    """
    p = np.asarray(n_prior, dtype=np.float64)
    if p.ndim != 1 or p.size < 2 or not np.isfinite(p).all() or (p < 0).any():
        raise ValueError(
            "n_prior must be a 1-D array of probabilities p(N = 0), p(N = 1), ..., p(N_max) "
            f"(finite, >= 0), got shape {p.shape}"
        )
    if not (p[1:] > 0).any():
        raise ValueError("n_prior puts no mass on N >= 1")
    with np.errstate(divide="ignore"):
        return np.log(p / p.sum())


def default_total_prior(releases: dict[str, Any], cells: dict[str, int]) -> np.ndarray:
    """A flat prior on ``N`` from 0 to the largest released total plus 10 of its noise sds.

    The bound is post-processing of the releases (no charge); the posterior mass it cuts off is
    below ``Φ(−10)`` for Gaussian noise. Needs additive releases (Gaussian/Laplace): a
    Dirichlet release carries no total.
    """
    upper = 1.0
    for v, rel in releases.items():
        mech = getattr(rel, "mechanism", None)
        params = mech.params() if mech is not None else {}
        if "sigma" in params:
            sd = float(params["sigma"]) * math.sqrt(cells[v])
        elif "scale" in params or "t" in params:
            sd = math.sqrt(2.0 * cells[v]) * float(params.get("scale", params.get("t")))
        else:
            raise ValueError(
                f"releases[{v!r}]: no noisy total to bound N (mechanism "
                f"{getattr(mech, 'name', None)!r}); pass n_prior= or declare N public"
            )
        total = float(np.sum(np.asarray(rel.values, dtype=np.float64)))
        upper = max(upper, total + 10.0 * sd)
    return np.ones(math.ceil(upper) + 1)


def initial_records(da: Any, rng: np.random.Generator) -> np.ndarray:
    """Records to start a chain: ``N₀`` forward-sampled from :meth:`initial_cpts`, ``N₀`` the
    mean released total (additive releases) or the prior mode, within the prior's support."""
    from pymc_rdp.bn.structure import forward_sample

    logp = da.n_log_prior
    support = np.flatnonzero(np.isfinite(logp))
    totals = [float(o.y.sum()) for o in da.observations.values() if o.logt is None]
    guess = round(np.mean(totals)) if totals else int(np.argmax(logp))
    n0 = int(support[np.argmin(np.abs(support - guess))])
    n0 = max(n0, 0)
    codes = forward_sample(da.structure, da.initial_cpts(), da.cards, n0, rng)
    return np.ascontiguousarray(
        np.stack([codes[v] for v in da.nodes], axis=1)
        .astype(RECORD_DTYPE)
        .reshape(n0, len(da.nodes))
    )


@njit(cache=True, nogil=True)
def birth_death(xbuf, n, n_moves, theta, log_prior, net, obs, cell_n, row_n):
    """``n_moves`` birth/death proposals (module notes) on the records ``xbuf[:n]``.

    ``xbuf`` has room for ``len(log_prior) − 1`` records; the tables are updated in place.
    Returns the new ``n`` and the number of accepted proposals.
    """
    card, n_par, par, stride, cell_off, row_off, _n_ch, _ch = net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = obs
    d = xbuf.shape[1]
    n_max = log_prior.shape[0] - 1
    cells = np.empty(d, dtype=np.int64)
    rows = np.empty(d, dtype=np.int64)
    accepted = 0
    for _ in range(n_moves):
        if np.random.random() < 0.5:  # birth
            if n >= n_max:
                continue
            k.forward_record(theta, net, xbuf[n], rows, cells)
            delta = log_prior[n + 1] - log_prior[n]
            for v in range(d):
                delta += k._shift(
                    v, cells[v], rows[v], np.int64(1), False, cell_n, row_n,
                    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
                )  # fmt: skip
            if math.log(1.0 - np.random.random()) < delta:
                n += 1
                accepted += 1
            else:
                for v in range(d):
                    cell_n[cells[v]] -= 1
                    row_n[rows[v]] -= 1
        else:  # death
            if n == 0:
                continue
            j = np.random.randint(0, n)
            for v in range(d):
                k._locate(xbuf, j, v, card, n_par, par, stride, cell_off, row_off, rows, cells, v)
            delta = log_prior[n - 1] - log_prior[n]
            for v in range(d):
                delta += k._shift(
                    v, cells[v], rows[v], np.int64(-1), False, cell_n, row_n,
                    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
                )  # fmt: skip
            if math.log(1.0 - np.random.random()) < delta:
                n -= 1
                accepted += 1
                for v in range(d):
                    xbuf[j, v] = xbuf[n, v]
            else:
                for v in range(d):
                    cell_n[cells[v]] += 1
                    row_n[rows[v]] += 1
    return n, accepted


def run_chain_unknown_total(
    da: Any,
    draws: int,
    tune: int,
    seed: int,
    records: np.ndarray | None = None,
    deadline: float | None = None,
    out: np.ndarray | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """One chain with ``N`` unknown: per iteration θ | x, a record sweep and
    ``da.birth_death_moves`` birth/death proposals (same θ), then the kept draw θ | x.

    ``deadline`` (a ``time.perf_counter()`` value) stops the chain after the first kept draw
    that ends at or after it, and ``out`` receives the draws, as in
    :meth:`DataAugmentation.run_chain`.

    Returns the (kept draws, cells) CPT draws, the stats (``accept_record``,
    ``accept_birth_death``, ``n_records`` per draw) and the final records.
    """
    rng = np.random.default_rng(seed)
    k.seed(int(rng.integers(0, 2**31 - 1)))
    d = len(da.nodes)
    log_prior = np.ascontiguousarray(da.n_log_prior, dtype=np.float64)
    n_max = log_prior.size - 1
    x = initial_records(da, rng) if records is None else da._checked_records(records, n_max)
    n = int(x.shape[0])
    xbuf = np.zeros((n_max + 1, d), dtype=RECORD_DTYPE)
    xbuf[:n] = x
    net, obs = da._net, da._obs
    n_cells = int(net[4][-1])
    cell_n = np.zeros(n_cells, dtype=np.int64)
    row_n = np.zeros(int(net[5][-1]), dtype=np.int64)
    k.tabulate(xbuf[:n], net, cell_n, row_n)
    theta = np.empty(n_cells)
    buf = np.empty(int(net[0].max()))
    out = draws_array(out, draws, n_cells)
    stats = {
        "accept_record": np.empty(draws),
        "accept_birth_death": np.empty(draws),
        "n_records": np.empty(draws, dtype=np.int64),
    }
    moves = int(da.birth_death_moves)
    # the birth/death kernel, called after the record sweep's, compiled meanwhile by a helper
    # process where neither this process nor numba's cache has it (compile_ahead)
    ahead = [(birth_death, (xbuf, n, moves, theta, log_prior, net, obs, cell_n, row_n))]
    with ca.compile_ahead(ahead) as helper:
        for it in range(tune + draws):
            k.draw_theta(cell_n, da._alpha, net, theta, buf)
            acc = k.record_sweep(xbuf[:n], theta, net, obs, cell_n, row_n) / max(1, n)
            if it == 0:
                helper.wait()  # birth_death: loaded once the helper has it
            n, born = birth_death(xbuf, n, moves, theta, log_prior, net, obs, cell_n, row_n)
            if it >= tune:
                k.draw_theta(cell_n, da._alpha, net, theta, buf)
                out[it - tune] = theta
                stats["accept_record"][it - tune] = acc
                stats["accept_birth_death"][it - tune] = born / max(1, moves)
                stats["n_records"][it - tune] = n
                if deadline is not None and time.perf_counter() >= deadline:
                    kept = it - tune + 1
                    return out[:kept], {key: s[:kept] for key, s in stats.items()}, xbuf[:n].copy()
            if it == 0:
                helper.stop()  # every kernel has run
    return out, stats, xbuf[:n].copy()
