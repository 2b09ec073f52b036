"""Summaries, tables and figures of the calibration study's records.

The records are the JSON lines of ``experiments/calibration_study.py`` (one per setting,
replicate and method, as :meth:`calibration_replicates.Setting.replicate` writes them):
:func:`load_records` reads them, :func:`group` and :func:`paired` arrange them per setting,
:func:`summarise` gives the coverage (with its standard error from the spread of the
per-replicate coverages), KL, held-out log-likelihood, times and ESS per method, and
:func:`report` prints the tables and draws the figures. Loaded by its path (:func:`_sibling`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def _sibling(name: str):
    """The module ``experiments/{name}.py`` (the scripts are loaded by their paths)."""
    import importlib.util
    import sys

    full = f"_experiments_{name}"
    if full not in sys.modules:
        spec = importlib.util.spec_from_file_location(full, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
    return sys.modules[full]


_replicates = _sibling("calibration_replicates")
aug = _replicates.aug
LEVELS = _replicates.LEVELS
METHODS = _replicates.METHODS
INTERVAL_METHODS = _replicates.INTERVAL_METHODS
N_RANK = _replicates.N_RANK
NOISE_KINDS = _replicates.NOISE_KINDS


# ----------------------------------------------------------------------------- aggregation


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return float(np.mean(xs)) if xs else None


def summarise(records: list[dict]) -> dict:
    """``method -> row`` for the records of one setting.

    ``cov50`` etc. pool every CPT entry of every replicate; ``se50`` etc. are the standard errors
    of those coverages from the spread of the per-replicate coverages (``sd / √R``; None for one
    replicate), which allows for the correlation of the entries within a replicate.
    """
    rows = {}
    for m in METHODS:
        recs = [r for r in records if r["method"] == m]
        if not recs:
            continue
        row = {"replicates": len(recs)}
        for q in LEVELS:
            name = int(q * 100)
            if m == "naive":
                row[f"cov{name}"] = row[f"se{name}"] = None
                continue
            pooled = np.concatenate([r["cover"][str(q)] for r in recs])
            per_rep = np.array([np.mean(r["cover"][str(q)]) for r in recs])
            row[f"cov{name}"] = float(pooled.mean())
            row[f"se{name}"] = (
                float(per_rep.std(ddof=1) / np.sqrt(len(recs))) if len(recs) > 1 else None
            )
        for f in ("kl", "heldout", "sample_s", "ess_s", "wall_s"):
            row[f] = _mean([r[f] for r in recs])
        ess = [r["min_ess"] for r in recs if r.get("min_ess") is not None]
        rhat = [r["max_rhat"] for r in recs if r.get("max_rhat") is not None]
        row["min_ess"] = float(min(ess)) if ess else None
        row["max_rhat"] = float(max(rhat)) if rhat else None
        rows[m] = row
    return rows


def load_records(paths) -> list[dict]:
    """Records of JSON-lines files; a later record of the same (setting, rep, method) wins."""
    seen = {}
    for path in paths:
        path = Path(path)
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by a stopped run
                continue
            seen[(r["key"], r["rep"], r["method"])] = r
    return list(seen.values())


def _sort_key(key: str):
    net, noise, eps, n = key.split("|")
    nets = ("asia", "sachs", "child", "alarm", "insurance")
    kinds = NOISE_KINDS
    kind = kinds.index(noise) if noise in kinds else 9
    return (nets.index(net) if net in nets else 9, net, kind, noise, float(eps), int(n))


def group(records: list[dict]) -> dict:
    """``setting key -> [records]`` in the table's order."""
    by = {}
    for r in records:
        by.setdefault(r["key"], []).append(r)
    return {k: sorted(by[k], key=lambda r: r["rep"]) for k in sorted(by, key=_sort_key)}


# ----------------------------------------------------------------------------- output


def markdown_table(results: dict) -> str:
    """The table of ``{key: summarise(records)}``; coverage as ``mean (standard error)``."""
    lines = [
        "| network | noise | ε | N | method | R | cov 50 | cov 80 | cov 95 | KL | held-out LL "
        "| sampling s | min ESS/s | min ESS | max r̂ |",
        "|---" * 15 + "|",
    ]

    def f(x, fmt):
        return "–" if x is None else format(x, fmt)

    def cov(r, q):
        c, s = r[f"cov{q}"], r[f"se{q}"]
        if c is None:
            return "–"
        return f"{c:.2f}" + ("" if s is None else f" ({s:.2f})")

    for key, rows in results.items():
        net, noise, eps, n = key.split("|")
        for m, r in rows.items():
            lines.append(
                f"| {net} | {noise} | {eps} | {int(n):,} | {m} | {r['replicates']} | "
                f"{cov(r, 50)} | {cov(r, 80)} | {cov(r, 95)} | {f(r['kl'], '.4f')} | "
                f"{f(r['heldout'], '.3f')} | {f(r['sample_s'], '.1f')} | {f(r['ess_s'], '.1f')} | "
                f"{f(r.get('min_ess'), '.0f')} | {f(r.get('max_rhat'), '.3f')} |"
            )
    return "\n".join(lines)


def pooled_table(grouped: dict) -> str:
    """Coverage pooled over N and ε per network, noise and method (s.e. over the fits)."""
    by = {}
    for key, recs in grouped.items():
        net, noise, _, _ = key.split("|")
        by.setdefault(f"{net}|{noise}", []).extend(recs)
    lines = [
        "| network | noise | method | fits | cov 50 | cov 80 | cov 95 |",
        "|---" * 7 + "|",
    ]
    for k, recs in by.items():
        net, noise = k.split("|")
        for m, r in summarise(recs).items():
            if r["cov50"] is None:
                continue
            cells = [
                f"{r[f'cov{q}']:.3f}" + ("" if r[f"se{q}"] is None else f" ± {r[f'se{q}']:.3f}")
                for q in (50, 80, 95)
            ]
            lines.append(
                f"| {net} | {noise} | {m} | {r['replicates']} | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


def time_table(records: list[dict], replicates: int = 100) -> str:
    """Mean seconds per NUTS fit per network, noise and method, and the cost of a full study.

    Sampling time, and wall time with the compilation of the templates spread over the fits;
    ``settings`` counts the (ε, N) settings of the row's network and noise in ``records`` (of any
    method), and the last column is what ``replicates`` replicates of those settings would take:
    wall seconds per fit × ``replicates`` × settings.
    """
    by, settings = {}, {}
    for r in records:
        settings.setdefault((r["network"], r["noise"]), set()).add(r["key"])
        if r["sample_s"] is not None:
            by.setdefault((r["network"], r["noise"], r["method"]), []).append(r)
    lines = [
        "| network | noise | method | fits | settings | sampling s / fit | wall s / fit "
        f"| {replicates} replicates × settings, hours |",
        "|---" * 8 + "|",
    ]
    for (net, noise, m), recs in sorted(
        by.items(), key=lambda kv: _sort_key(f"{kv[0][0]}|{kv[0][1]}|0|0")
    ):
        samp = float(np.mean([r["sample_s"] for r in recs]))
        wall = float(np.mean([r["wall_s"] for r in recs]))
        k = len(settings[(net, noise)])
        lines.append(
            f"| {net} | {noise} | {m} | {len(recs)} | {k} | {samp:.1f} | {wall:.1f} | "
            f"{wall * replicates * k / 3600:.1f} |"
        )
    return "\n".join(lines)


def outside_target(
    results: dict, tol: float = 0.08, methods=("joint", "per-family", "augmentation")
) -> list:
    """(key, method, level, coverage, se) where a noise-aware coverage misses nominal by > tol."""
    out = []
    for key, rows in results.items():
        for m in methods:
            if m not in rows:
                continue
            for q in LEVELS:
                c = rows[m][f"cov{int(q * 100)}"]
                if c is not None and abs(c - q) > tol:
                    out.append((key, m, q, c, rows[m][f"se{int(q * 100)}"]))
    return out


_KIND_LABEL = {
    "gaussian": "G",
    "laplace": "L",
    "discrete_gaussian": "dG",
    "discrete_laplace": "dL",
    "dirichlet": "Dir",
}


def figures(
    grouped: dict, outdir: Path, prefix: str = "calibration", tol: float = 0.08
) -> list[Path]:
    """Coverage per setting (one row of panels per network), rank histograms per network and the
    TARP curves, as ``{prefix}_coverage.png``, ``{prefix}_ranks_{network}.png`` and
    ``{prefix}_tarp.png``; the grey band of the coverage panels is nominal ± ``tol``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy import stats

    outdir.mkdir(parents=True, exist_ok=True)
    results = {k: summarise(v) for k, v in grouped.items()}
    networks = list(dict.fromkeys(k.split("|")[0] for k in results))
    written = []
    fig, axes = plt.subplots(
        len(networks),
        len(LEVELS),
        figsize=(4.6 * len(LEVELS), 3.2 * len(networks)),
        squeeze=False,
        sharey="col",
    )
    markers = {"joint": "o", "per-family": "s", "non-private": "^", "augmentation": "D"}
    for i, net in enumerate(networks):
        keys = [k for k in results if k.split("|")[0] == net]
        x = np.arange(len(keys))
        for j, q in enumerate(LEVELS):
            ax = axes[i, j]
            name = int(q * 100)
            ax.axhspan(q - tol, q + tol, color="0.9", zorder=0)
            ax.axhline(q, color="k", lw=1, zorder=1)
            for k_m, m in enumerate(INTERVAL_METHODS):
                xs, ys, es = [], [], []
                for xi, k in zip(x, keys, strict=True):
                    r = results[k].get(m)
                    if r is None or r[f"cov{name}"] is None:
                        continue
                    xs.append(xi + (k_m - 1.5) * 0.15)
                    ys.append(r[f"cov{name}"])
                    es.append(2 * (r[f"se{name}"] or 0.0))
                if xs:
                    ax.errorbar(
                        xs,
                        ys,
                        yerr=es,
                        fmt=markers[m],
                        ms=4,
                        lw=0.8,
                        capsize=0,
                        color=f"C{k_m}",
                        label=m,
                    )
            for xi in range(3, len(keys), 3):
                ax.axvline(xi - 0.5, color="0.7", lw=0.5)
            ax.set_xticks(
                x,
                [
                    "{} ε={} N={}".format(_KIND_LABEL.get(k.split("|")[1], "?"), *k.split("|")[2:])
                    for k in keys
                ],
                rotation=75,
                fontsize=6,
            )
            ax.set_title(f"{net}: central {name}% intervals", fontsize=9)
        axes[i, 0].set_ylabel("coverage (± 2 s.e.)")
    axes[0, 0].legend(fontsize=7, loc="lower left")
    fig.suptitle(
        f"Coverage of the true CPT entries; grey band: nominal ± {100 * tol:g} points", fontsize=10
    )
    fig.tight_layout()
    path = outdir / f"{prefix}_coverage.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    n_bins = 20
    for net in networks:
        groups = {}
        for k, recs in grouped.items():
            knet, noise, eps, _ = k.split("|")
            if knet == net:
                groups.setdefault(f"{noise}, ε={eps}", []).extend(recs)
        methods = [
            m for m in INTERVAL_METHODS if any(r["method"] == m for g in groups.values() for r in g)
        ]
        fig, axes = plt.subplots(
            len(methods),
            len(groups),
            figsize=(2.8 * len(groups), 2.0 * len(methods)),
            squeeze=False,
        )
        for j, (g, recs) in enumerate(groups.items()):
            for i, m in enumerate(methods):
                ax = axes[i, j]
                rr = [r for r in recs if r["method"] == m]
                if not rr:
                    ax.axis("off")
                    continue
                ranks = np.concatenate([r["ranks"] for r in rr])
                L = rr[0]["n_rank"]
                bins = np.linspace(-0.5, L + 0.5, n_bins + 1)
                ax.hist(ranks, bins=bins, color=f"C{INTERVAL_METHODS.index(m)}")
                # 99% band of a bin count under uniform ranks, if the ranks were independent
                p = 1.0 / n_bins
                lo, hi = stats.binom.ppf([0.005, 0.995], ranks.size, p)
                ax.axhspan(lo, hi, color="0.8", zorder=0)
                ax.axhline(ranks.size * p, color="k", lw=0.8)
                ax.set_yticks([])
                ax.set_xticks([0, L])
                ax.tick_params(labelsize=6)
                ax.set_title(f"{g}: {len(rr)} fits", fontsize=7)
                if j == 0:
                    ax.set_ylabel(m, fontsize=8)
        fig.suptitle(
            f"{net}: SBC ranks of the true CPT entries among {N_RANK} draws, pooled over N\n"
            "line: uniform; band: 99% range of a bin if the ranks were independent",
            fontsize=8,
        )
        fig.tight_layout()
        path = outdir / f"{prefix}_ranks_{net}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    path = aug.tarp_figure(grouped, outdir / f"{prefix}_tarp.png")
    if path is not None:
        written.append(path)
    return written


def paired(grouped: dict) -> dict:
    """Per setting, only the replicates that every method of the setting has."""
    out = {}
    for key, recs in grouped.items():
        reps = {}
        for r in recs:
            reps.setdefault(r["method"], set()).add(r["rep"])
        common = set.intersection(*reps.values())
        out[key] = [r for r in recs if r["rep"] in common]
    return out


def report(
    records: list[dict],
    figures_dir: Path | None,
    prefix: str = "calibration",
    tol: float = 0.08,
) -> dict:
    """Print the tables (and misses of the ±``tol`` target), draw the figures; returns results.

    The per-setting table compares the methods on the same replicates (those that all of them
    have: the cheap methods may have run more); the pooled coverage table uses every fit.
    """
    everything = group(records)
    grouped = paired(everything)
    results = {k: summarise(v) for k, v in grouped.items()}
    print(markdown_table(results))
    print("\ncoverage pooled over N and ε (mean ± s.e. over fits):\n")
    print(pooled_table(everything))
    print("\nseconds per NUTS fit:\n")
    print(time_table(records))
    print("\nTARP expected coverage (pooled over replicates and reference points):\n")
    print(aug.tarp_table(grouped))
    print("\nTARP expected coverage pooled over N and ε:\n")
    print(aug.tarp_pooled_table(grouped))
    misses = outside_target(results, tol)
    if misses:
        print(f"\nnoise-aware coverage outside nominal ± {tol:g}:")
        for key, m, q, c, se in misses:
            print(f"  {key} {m} {int(q * 100)}%: {c:.3f} (se {'–' if se is None else f'{se:.3f}'})")
    if figures_dir is not None and results:
        for path in figures(grouped, figures_dir, prefix, tol):
            print("wrote", path)
    return results
