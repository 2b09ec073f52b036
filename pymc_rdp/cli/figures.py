"""The figures of a run: the ledger's curves, the privacy-utility comparison and a few CPTs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FigureJob", "figure_jobs", "save_figure"]

#: one figure to draw: file name, a function drawing it, resolution
FigureJob = tuple[str, Callable[[], Any], int]


def figure_jobs(
    bn: Any,
    idata: Any,
    *,
    mechanism: str,
    noise_aware: bool,
    comparison: Any = None,
    reference: dict[str, float] | None = None,
    order: float | None = None,
    delta: float | None = None,
    ref_idata: Any = None,
    cpt_nodes: Sequence[str] | None = None,
) -> list[FigureJob]:
    """The figures of a run, each drawn when its function is called (a matplotlib Figure).

    ``rdp_curve.png`` and ``epsilon_delta.png`` of the ledger, ``privacy_utility.png`` when a
    ``comparison`` frame is given (columns mechanism, epsilon, log_likelihood), and
    ``cpt_<node>.png`` for ``cpt_nodes`` (default: the three nodes with the fewest parent
    configurations), with the non-private posterior ``ref_idata`` beside the private one.
    """
    import matplotlib

    matplotlib.use("Agg")

    from pymc_rdp import plots

    acc = bn.accountant
    jobs: list[FigureJob] = [
        ("rdp_curve.png", lambda: plots.plot_rdp_curve(acc).figure, 110),
        ("epsilon_delta.png", lambda: plots.plot_epsilon_delta(acc).figure, 110),
    ]
    if comparison is not None:

        def utility() -> Any:
            ax = plots.plot_privacy_utility(
                comparison, reference=reference or {}, ylabel="held-out log-likelihood per record"
            )
            budget = f"ε at Rényi order {order:g}" if order is not None else f"ε at δ = {delta:g}"
            ax.set_title(f"Privacy–utility of the released CPTs (budget: {budget})", fontsize=10)
            return ax.figure

        jobs.append(("privacy_utility.png", utility, 110))
    private_label = f"private ({mechanism})"
    for v in _cpt_figure_nodes(bn, cpt_nodes):

        def cpt(v: str = v) -> Any:
            if ref_idata is not None:
                data: Any = {private_label: idata, "non-private posterior": ref_idata}
                configs = _pick_configs(bn, v, ref_idata if not noise_aware else idata)
            else:
                data = idata
                configs = _pick_configs(bn, v, idata)
            return plots.plot_cpt_posterior(
                data, v, parent_configs=configs, states=_states_to_show(bn, v)
            )

        jobs.append((f"cpt_{_safe_name(v)}.png", cpt, 100))
    return jobs


def save_figure(job: FigureJob, folder: Path) -> str:
    """Draw one figure, save it in ``folder`` and close it; returns its file name."""
    import matplotlib.pyplot as plt

    name, draw, dpi = job
    fig = draw()
    try:
        fig.savefig(Path(folder) / name, dpi=dpi)
    finally:
        plt.close(fig)
    return name


def _cpt_figure_nodes(bn: Any, wanted: Sequence[str] | None, limit: int = 3) -> list[str]:
    if wanted is not None:
        return [v for v in wanted if v in bn.parents]
    nodes = sorted(bn.nodes, key=lambda v: (len(bn.parent_configurations(v)), bn.cards[v]))
    return nodes[:limit]


def _pick_configs(bn: Any, node: str, idata: Any, k: int = 4) -> list[str]:
    """Parent configurations to draw: the ones with the narrowest posteriors (post-processing)."""
    configs = bn.parent_configurations(node)
    if len(configs) <= k:
        return configs
    draws = bn.cpt_draws(idata, node)  # (draws, configs, states)
    if draws.shape[0] > 1:
        spread = draws.std(axis=0).sum(axis=1)
        idx = np.argsort(spread, kind="stable")[:k]
        return [configs[i] for i in sorted(idx)]
    return configs[:k]


def _states_to_show(bn: Any, node: str, max_states: int = 12) -> list[str] | None:
    states = [str(s) for s in bn.states[node]]
    return None if len(states) <= max_states else states[:max_states]


def _safe_name(node: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in node)
