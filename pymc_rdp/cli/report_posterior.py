"""The report's posterior tables: CPT means with 94% intervals and convergence diagnostics.

Post-processing only: the parent configurations shown are the most populated by the *released*
values (row sums of released noisy counts; for released CPTs, the parent marginals implied by
the released network), never by the raw counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["diagnostics", "populated_configs", "posterior_section"]

#: thresholds of the convergence warning (Vehtari et al. 2021, "Rank-normalization, folding,
#: and localization: an improved R-hat", Bayesian Analysis 16(2): r̂ < 1.01, ESS > 100 per chain)
RHAT_MAX = 1.01
ESS_PER_CHAIN = 100


def populated_configs(bn: Any, node: str, k: int = 3) -> list[int]:
    """Indices of ``node``'s ``k`` most populated parent configurations by the released values,
    in decreasing order (ties: declaration order)."""
    from pymc_rdp.bn.structure import family_marginal

    n_configs = len(bn.parent_configurations(node))
    release = bn.releases.get(node) if bn.releases else None
    counts = release is not None and not release.mechanism.releases_probabilities
    values = release.values if counts else None
    if values is not None and np.size(values) == n_configs * bn.cards[node]:
        weight = np.asarray(values, dtype=np.float64).reshape(n_configs, -1).sum(axis=1)
    elif bn.parents[node]:
        weight = np.asarray(family_marginal(bn.structure, node, bn.cpts, bn.cards), dtype=float)
    else:
        weight = np.ones(1)
    order = np.argsort(-weight, kind="stable")
    return [int(i) for i in order[:k]]


def diagnostics(idata: Any) -> dict[str, Any] | None:
    """``{"chains", "draws", "max_rhat", "min_ess_bulk", "min_ess_tail", "divergences", "ok",
    "per_variable"}`` over every posterior variable, or None for fewer than 4 draws per chain.

    ``per_variable`` maps each variable to ``{"entries", "max_rhat", "min_ess_bulk",
    "over_rhat"}``: its number of entries, its extremes and how many entries reach
    r̂ >= :data:`RHAT_MAX`. (Which entry is worst is left out of the report: it varies with the
    chain, so two neighbouring datasets' reports would differ in more than their numbers.)
    """
    import arviz as az

    post = idata["posterior"]
    chains, draws = int(post.sizes["chain"]), int(post.sizes["draw"])
    if draws < 4:
        return None
    rhat_ds = az.rhat(idata) if chains > 1 else None
    bulk_ds = az.ess(idata, method="bulk")
    tail_ds = az.ess(idata, method="tail")

    def _values(ds: Any, name: str) -> np.ndarray:
        return np.asarray(ds[name].to_numpy(), dtype=float).ravel()

    def _extreme(ds: Any, fn: Any) -> float:
        vals = np.concatenate([_values(ds, k) for k in ds.data_vars])
        vals = vals[np.isfinite(vals)]
        return float(fn(vals)) if vals.size else float("nan")

    per_variable: dict[str, dict[str, Any]] = {}
    for name in bulk_ds.data_vars:
        bulk = _values(bulk_ds, name)
        rh = _values(rhat_ds, name) if rhat_ds is not None else np.full(bulk.shape, np.nan)
        per_variable[str(name)] = {
            "entries": int(bulk.size),
            "max_rhat": float(np.nanmax(rh)) if np.isfinite(rh).any() else float("nan"),
            "min_ess_bulk": float(np.nanmin(bulk)) if np.isfinite(bulk).any() else float("nan"),
            "over_rhat": int(np.sum(rh >= RHAT_MAX)),
        }
    rhat = _extreme(rhat_ds, np.max) if rhat_ds is not None else float("nan")
    bulk = _extreme(bulk_ds, np.min)
    tail = _extreme(tail_ds, np.min)
    div = 0
    children = getattr(idata, "children", {})
    if "sample_stats" in children and "diverging" in idata["sample_stats"].data_vars:
        div = int(np.asarray(idata["sample_stats"]["diverging"].to_numpy()).sum())
    ok = (chains == 1 or rhat < RHAT_MAX) and min(bulk, tail) > ESS_PER_CHAIN * chains and div == 0
    return {
        "chains": chains,
        "draws": draws,
        "max_rhat": rhat,
        "min_ess_bulk": bulk,
        "min_ess_tail": tail,
        "divergences": div,
        "ok": bool(ok),
        "per_variable": per_variable,
    }


def posterior_section(bn: Any, idata: Any, k: int = 3, prob: float = 0.94) -> list[str]:
    """Markdown lines: the diagnostics (with a warning when they fail) and, per node, the
    posterior mean and central ``prob`` interval of each state (declared order) for the ``k``
    most populated parent configurations."""
    lines: list[str] = []
    add = lines.append
    d = diagnostics(idata)
    if d is None:
        add(
            "Convergence diagnostics: none (the posterior holds one draw per chain, the released "
            "values; there is no Markov chain to diagnose)."
        )
    else:
        rhat = "n/a (one chain)" if d["chains"] == 1 else f"{d['max_rhat']:.3f}"
        add(
            f"Convergence diagnostics over every variable ({d['chains']} chain(s) × "
            f"{d['draws']} draws): max r̂ {rhat}, min bulk ESS {d['min_ess_bulk']:.0f}, "
            f"min tail ESS {d['min_ess_tail']:.0f}, divergences {d['divergences']}."
        )
        if not d["ok"]:
            longer = "`--draws`, `--tune`, `--chains`"
            limit = getattr(idata, "attrs", {}).get("time_limit")
            if limit is not None:  # the chains stopped at the clock: the limit bounds them
                longer = f"a longer `--time-limit` than {float(limit):g} s, or more {longer}"
            add("")
            add(
                f"**Warning: the sampler has not converged** (wanted r̂ < {RHAT_MAX}, ESS > "
                f"{ESS_PER_CHAIN} per chain, no divergences): do not use these intervals; "
                f"run longer ({longer})."
            )
        add("")
        add(
            f"Per variable (r̂ < {RHAT_MAX} is a bar for one quantity: over thousands of "
            "entries a few exceed it by chance even with independent draws, so read the count "
            "beside the extreme):"
        )
        add("")
        add(f"| variable | entries | max r̂ | entries with r̂ ≥ {RHAT_MAX} | min bulk ESS |")
        add("|---|---|---|---|---|")
        for name, v in d["per_variable"].items():
            rh = "n/a" if d["chains"] == 1 else f"{v['max_rhat']:.3f}"
            over = "n/a" if d["chains"] == 1 else f"{v['over_rhat']:,}"
            add(f"| {name} | {v['entries']:,} | {rh} | {over} | {v['min_ess_bulk']:.0f} |")
    lo, hi = (1 - prob) / 2, 1 - (1 - prob) / 2
    for v in bn.nodes:
        draws = bn.cpt_draws(idata, v)
        configs = bn.parent_configurations(v)
        states = [str(s) for s in bn.states[v]]
        add("")
        single = draws.shape[0] == 1
        what = "the value" if single else f"mean [{prob:.0%} interval]"
        add(f"**{v}** — {what} per state, most populated parent configurations:")
        add("")
        add("| parent configuration | " + " | ".join(states) + " |")
        add("|---" * (len(states) + 1) + "|")
        for c in populated_configs(bn, v, k):
            x = draws[:, c, :]
            mean, q_lo, q_hi = (
                x.mean(axis=0),
                np.quantile(x, lo, axis=0),
                np.quantile(x, hi, axis=0),
            )
            cells = [
                f"{m:.3f}" if single else f"{m:.3f} [{a:.3f}, {b:.3f}]"
                for m, a, b in zip(mean, q_lo, q_hi, strict=True)
            ]
            add(f"| {configs[c]} | " + " | ".join(cells) + " |")
    return lines
