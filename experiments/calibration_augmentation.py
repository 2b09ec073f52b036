"""The data-augmentation part of the calibration study, and TARP coverage.

Used by ``experiments/calibration_study.py`` (method ``augmentation``, release kinds
``discrete_gaussian``, ``discrete_laplace`` and ``dirichlet``):

* :func:`fit_augmentation` releases a replicate's family tables exactly as
  :meth:`pymc_rdp.BayesianNetwork.fit` does (the mechanism word of :data:`KIND_MECHANISM`, the
  number of records declared public, reproducible noise from ``pmr.UnsafeNoiseSeed``: a
  simulation, not a release) and samples the analyst's posterior with
  ``sample(sampler="augmentation")`` (:class:`pymc_rdp.DataAugmentation` with its default moves);
  it returns the CPT draws with the chains' convergence diagnostics (minimum bulk ESS, largest
  split r̂ over every CPT entry).
* :func:`tarp_fractions` and :func:`expected_coverage` are the "tests of accuracy with random
  points" of Lemos, Coogan, Hezaveh & Perreault-Levasseur (ICML 2023, "Sampling-based accuracy
  testing of posterior estimators for general inference"): for a simulation with true parameter
  ``θ*``, posterior draws ``θ_1..θ_S`` and a random reference point ``θ_r``,

  .. math:: f = \\frac{1}{S} \\sum_s 1\\{d(θ_s, θ_r) < d(θ^*, θ_r)\\},

  the posterior mass of the ball around ``θ_r`` through ``θ*``. If the draws come from the true
  posterior, ``f`` is uniform on [0, 1] over the simulations for any distribution of ``θ_r``
  chosen without ``θ*``, so the expected coverage probability ``ECP(α) = P(f < α)`` is the
  diagonal; ``d`` is the Euclidean distance over all CPT entries.
* :func:`tarp_figure` draws the ECP curves per setting.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

#: study release kind -> the mechanism word of ``BayesianNetwork.fit``
KIND_MECHANISM = {
    "discrete_gaussian": "gaussian",
    "discrete_laplace": "laplace",
    "dirichlet": "dirichlet",
}
#: reference points per replicate for TARP
N_TARP_REFERENCES = 8
#: credibility levels at which the ECP curve is tabulated
TARP_GRID = np.linspace(0.0, 1.0, 41)


# ----------------------------------------------------------------------------- TARP


def tarp_fractions(samples: np.ndarray, truth: np.ndarray, references: np.ndarray) -> np.ndarray:
    """The TARP statistic ``f`` of one simulation for each reference point.

    Parameters
    ----------
    samples : numpy.ndarray
        (S, d) posterior draws.
    truth : numpy.ndarray
        (d,) the true parameter.
    references : numpy.ndarray
        (R, d) reference points, drawn without knowledge of ``truth``.

    Returns
    -------
    numpy.ndarray
        (R,) the fraction of draws strictly closer to each reference point than ``truth``
        (Lemos et al. 2023, Algorithm 2).
    """
    samples = np.asarray(samples, dtype=np.float64)
    truth = np.asarray(truth, dtype=np.float64)
    references = np.atleast_2d(np.asarray(references, dtype=np.float64))
    if samples.ndim != 2 or samples.shape[0] < 1:
        raise ValueError(f"samples must have shape (draws, dims), got {samples.shape}")
    d = samples.shape[1]
    if truth.shape != (d,):
        raise ValueError(f"truth must have shape ({d},), got {truth.shape}")
    if references.shape[1] != d:
        raise ValueError(f"references must have shape (R, {d}), got {references.shape}")
    d_samples = np.linalg.norm(samples[None, :, :] - references[:, None, :], axis=-1)
    d_truth = np.linalg.norm(truth[None, :] - references, axis=-1)
    return np.mean(d_samples < d_truth[:, None], axis=1)


def expected_coverage(fractions, levels=TARP_GRID) -> np.ndarray:
    """``ECP(α) = mean(f < α)`` over the simulations (and reference points) at each level α.

    Equal to ``levels`` in expectation when the posterior draws are exact (Lemos et al. 2023,
    Theorem 3); above the diagonal at high credibility for an under-confident posterior, below it
    for an over-confident or biased one.
    """
    f = np.asarray(fractions, dtype=np.float64).reshape(-1)
    if f.size == 0:
        raise ValueError("fractions must not be empty")
    if np.any((f < 0) | (f > 1)):
        raise ValueError("fractions must lie in [0, 1]")
    levels = np.asarray(levels, dtype=np.float64)
    return np.mean(f[None, :] < levels[:, None], axis=1)


def prior_references(st, cards: dict, count: int, rng: np.random.Generator) -> np.ndarray:
    """(count, entries) flat CPTs drawn from the ``Dirichlet(1)`` prior: TARP's references."""
    out = []
    for v in st.order:
        rows = int(np.prod([cards[p] for p in st.parents[v]], dtype=np.int64))
        out.append(rng.dirichlet(np.ones(cards[v]), size=(count, rows)).reshape(count, -1))
    return np.concatenate(out, axis=1)


def flat(draws: dict, st) -> np.ndarray:
    """``node -> (S, rows, states)`` draws as one (S, entries) array, nodes in ``st.order``."""
    return np.concatenate([draws[v].reshape(draws[v].shape[0], -1) for v in st.order], axis=1)


def tarp_record(draws: dict, truth: dict, st, cards: dict, rng: np.random.Generator) -> list:
    """The TARP fractions of one replicate for :data:`N_TARP_REFERENCES` prior references."""
    truth_flat = np.concatenate([truth[v].reshape(-1) for v in st.order])
    refs = prior_references(st, cards, N_TARP_REFERENCES, rng)
    return tarp_fractions(flat(draws, st), truth_flat, refs).tolist()


# ----------------------------------------------------------------------------- the fit


def _diagnostics(idata) -> tuple[float, float]:
    """(smallest bulk ESS, largest r̂) over the CPT entries (variables ``*_cpt``)."""
    import arviz as az

    names = [v for v in idata["posterior"].data_vars if str(v).endswith("_cpt")]
    out = []
    for fn, pick in ((az.ess, np.nanmin), (az.rhat, np.nanmax)):
        res = fn(idata, var_names=names)
        res = res["posterior"] if "posterior" in getattr(res, "children", {}) else res
        vals = [float(pick(res[v].to_numpy())) for v in res.data_vars]
        out.append(min(vals) if pick is np.nanmin else max(vals))
    return out[0], out[1]


def fit_augmentation(setting, df, release_seed: int, mcmc_seed: int, draws, tune, chains):
    """Release ``df``'s family tables as ``BayesianNetwork.fit`` does and sample by augmentation.

    Returns ``(draws, info)``: ``node -> (chains · draws, rows, states)`` CPT draws and a dict with
    ``sample_s`` (the sampler's own time, compilation of cached kernels included), ``min_ess``,
    ``max_rhat``, ``moves`` and the acceptance rate of each move.
    """
    from pymc_rdp.models.bayesian_network import BayesianNetwork
    from pymc_rdp.privacy.mechanisms import UnsafeNoiseSeed

    mechanism = KIND_MECHANISM[setting.noise]
    bn = BayesianNetwork(setting.structure, states=setting.given).fit(
        df,
        mechanism=mechanism,
        epsilon=setting.epsilon,
        order=5.0,
        public_total=setting.n,
        # simulated data: reproducible (not private) noise keeps the study repeatable
        noise_source=UnsafeNoiseSeed(release_seed),
    )
    t0 = time.perf_counter()
    idata = bn.sample(
        draws=draws, tune=tune, chains=chains, random_seed=mcmc_seed, sampler="augmentation"
    )
    sample_s = time.perf_counter() - t0
    post = {v: bn.cpt_draws(idata, v) for v in setting.st.order}
    min_ess, max_rhat = _diagnostics(idata)
    accept = {}  # a move's mean rate over the draws where it proposed (None: it never did)
    for k in idata["sample_stats"].data_vars:
        if str(k).startswith("accept_"):
            rates = idata["sample_stats"][k].to_numpy()
            rates = rates[np.isfinite(rates)]
            accept[str(k)] = float(rates.mean()) if rates.size else None
    info = {
        "sample_s": sample_s,
        "min_ess": min_ess,
        "max_rhat": max_rhat,
        "moves": str(idata.attrs.get("moves")),
        "row_moves": idata.attrs.get("row_moves"),
        "accept": accept,
    }
    return post, info


# ----------------------------------------------------------------------------- figure


def tarp_table(grouped: dict, methods=("augmentation", "non-private")) -> str:
    """Per setting and method: fits, ECP at 0.5/0.8/0.95 and the largest |ECP(α) − α|."""
    lines = [
        "| network | release | ε | N | method | R | ECP 50 | ECP 80 | ECP 95 | max dev. |",
        "|---" * 10 + "|",
    ]
    for key, recs in grouped.items():
        net, noise, eps, n = key.split("|")
        for m in methods:
            f = [x for r in recs if r["method"] == m for x in (r.get("tarp") or [])]
            if not f:
                continue
            reps = sum(1 for r in recs if r["method"] == m and r.get("tarp"))
            ecp = expected_coverage(f)
            at = expected_coverage(f, [0.5, 0.8, 0.95])
            dev = float(np.max(np.abs(ecp - TARP_GRID)))
            lines.append(
                f"| {net} | {noise} | {eps} | {int(n):,} | {m} | {reps} | {at[0]:.2f} | "
                f"{at[1]:.2f} | {at[2]:.2f} | {dev:.2f} |"
            )
    return "\n".join(lines)


def _pooled(grouped: dict, methods) -> dict:
    """``(network, kind) -> {method: (replicates, fractions)}`` pooled over ε and N."""
    out: dict = {}
    for key, recs in grouped.items():
        net, noise, _, _ = key.split("|")
        for m in methods:
            rr = [r for r in recs if r["method"] == m and r.get("tarp")]
            if rr:
                reps, f = out.setdefault((net, noise), {}).get(m, (0, []))
                out[(net, noise)][m] = (reps + len(rr), f + [x for r in rr for x in r["tarp"]])
    return out


def tarp_pooled_table(grouped: dict, methods=("augmentation", "non-private")) -> str:
    """Per network, release kind and method, pooled over ε and N: fits, ECP at 0.5/0.8/0.95,
    the largest |ECP(α) − α| and the binomial standard error at α = 0.5 over the fits."""
    lines = [
        "| network | release | method | fits | ECP 50 | ECP 80 | ECP 95 | max dev. | s.e. (0.5) |",
        "|---" * 9 + "|",
    ]
    for (net, noise), by in _pooled(grouped, methods).items():
        for m, (reps, f) in by.items():
            at = expected_coverage(f, [0.5, 0.8, 0.95])
            dev = float(np.max(np.abs(expected_coverage(f) - TARP_GRID)))
            lines.append(
                f"| {net} | {noise} | {m} | {reps} | {at[0]:.2f} | {at[1]:.2f} | {at[2]:.2f} | "
                f"{dev:.2f} | {0.5 / np.sqrt(reps):.2f} |"
            )
    return "\n".join(lines)


def tarp_figure(grouped: dict, path: Path, methods=("augmentation", "non-private")) -> Path | None:
    """ECP curves pooled over ε and N: one panel per network, one colour per release kind
    (solid: ``methods[0]``, dotted: ``methods[1]`` on the same replicates); the grey band is
    ± 2 binomial standard errors over the smallest number of fits of a panel's curves (each fit
    counted once: its reference points share its data)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pooled = _pooled(grouped, methods)
    if not pooled:
        return None
    networks = list(dict.fromkeys(net for net, _ in pooled))
    fig, axes = plt.subplots(1, len(networks), figsize=(3.8 * len(networks), 3.6), squeeze=False)
    for ax, net in zip(axes[0], networks, strict=True):
        kinds = [k for n, k in pooled if n == net]
        fits = min(reps for k in kinds for reps, _ in pooled[(net, k)].values())
        se = np.sqrt(TARP_GRID * (1 - TARP_GRID) / fits)
        ax.fill_between(TARP_GRID, TARP_GRID - 2 * se, TARP_GRID + 2 * se, color="0.88")
        ax.plot([0, 1], [0, 1], color="k", lw=0.8)
        for c, kind in enumerate(kinds):
            for j, m in enumerate(methods):
                if m not in pooled[(net, kind)]:
                    continue
                reps, f = pooled[(net, kind)][m]
                ax.plot(
                    TARP_GRID,
                    expected_coverage(f),
                    "-" if j == 0 else ":",
                    lw=1.2,
                    color=f"C{c}",
                    label=f"{kind}, {m} ({reps} fits)",
                )
        ax.set_title(f"{net}: pooled over ε and N", fontsize=8)
        ax.set_xlabel("credibility level α", fontsize=7)
        ax.set_ylabel("expected coverage", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.legend(fontsize=5, loc="upper left")
    fig.suptitle(
        "TARP expected coverage (Lemos et al. 2023), 8 prior reference points per fit; "
        "band: ± 2 s.e. over the fits",
        fontsize=8,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
