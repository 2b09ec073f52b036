"""Privacy and utility plots (matplotlib; posterior plots through ArviZ).

Every function draws on a matplotlib Axes (or Figure) and returns it; nothing is shown or saved,
so that the caller decides (``fig.savefig(path)``). The module selects no backend itself: scripts
that run without a display should call ``matplotlib.use("Agg")`` first (the ``pymc-rdp`` command
does).

* :func:`plot_rdp_curve` — the composed RDP curve ε(α) of an accountant (Mironov 2017, "Rényi
  Differential Privacy": sequential composition adds curves order by order, Prop. 1), or of any
  curve given on a grid of orders.
* :func:`plot_epsilon_delta` — the (ε, δ)-DP guarantee the curve converts to, as a function of δ
  (Balle et al. 2020, Theorem 21; Mironov 2017, Prop. 3 for comparison).
* :func:`plot_privacy_utility` — a utility metric against ε for several mechanisms.
* :func:`plot_cpt_posterior` — credible intervals of a Bayesian network's conditional
  probability table, drawn by ``arviz.plot_forest``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pymc_rdp._validation import check_orders
from pymc_rdp.privacy import rdp as _rdp

__all__ = [
    "plot_cpt_posterior",
    "plot_epsilon_delta",
    "plot_privacy_utility",
    "plot_rdp_curve",
]

#: δ grid of :func:`plot_epsilon_delta` when none is given.
DEFAULT_DELTAS = np.logspace(-12, -1, 45)

_MECHANISM_STYLE = {
    "dirichlet": {"color": "C0", "marker": "o"},
    "gaussian": {"color": "C1", "marker": "s"},
    "laplace": {"color": "C2", "marker": "^"},
    "randomized_response": {"color": "C4", "marker": "D"},
}


def _axes(ax: Any, figsize: tuple[float, float] = (6.4, 4.2)) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _fig, new = plt.subplots(figsize=figsize, layout="constrained")
    return new


def _is_accountant(obj: Any) -> bool:
    return hasattr(obj, "rdp") and hasattr(obj, "orders") and hasattr(obj, "ledger")


def _orders_and_curve(source: Any, curve: Any) -> tuple[np.ndarray, np.ndarray, Any]:
    """(orders, curve, accountant or None) from an accountant or from (orders, curve)."""
    if _is_accountant(source):
        if curve is not None:
            raise ValueError("curve must be None when an accountant is given")
        orders = np.asarray(source.orders, dtype=np.float64)
        return orders, np.asarray(source.rdp(), dtype=np.float64), source
    if curve is None:
        raise TypeError("give an Accountant, or orders and curve")
    orders = check_orders(source, "orders")
    values = np.asarray(curve, dtype=np.float64)
    if orders.ndim != 1:
        raise ValueError(f"orders must be 1-D, got shape {orders.shape}")
    if values.shape != orders.shape:
        raise ValueError(f"curve must have the shape of orders {orders.shape}, got {values.shape}")
    if np.isnan(values).any() or (values < 0).any():
        raise ValueError("curve must be >= 0 (inf allowed) and contain no NaN")
    idx = np.argsort(orders)
    return orders[idx], values[idx], None


def plot_rdp_curve(
    source: Any,
    curve: Any = None,
    *,
    ax: Any = None,
    show_entries: bool = True,
    max_entries: int = 8,
    label: str | None = None,
) -> Any:
    """Plot an RDP curve ε(α) against the order α, on log–log axes.

    For an accountant, the composed curve is drawn (sequential composition adds the curves of
    the releases order by order, Mironov 2017, "Rényi Differential Privacy", Prop. 1; parallel
    groups contribute their order-wise maximum), and, with ``show_entries``, the distinct curves
    of its ledger entries (at most ``max_entries``, the largest first). An RDP budget (ε at
    order λ) is marked as a point, the best order of an (ε, δ) budget's conversion as a vertical
    line. Orders where the curve is infinite (e.g. the Dirichlet mechanism beyond
    α > 1 + α₀/(r Δ∞)) are left out; the right end of the finite part is marked.

    Parameters
    ----------
    source : Accountant or array_like
        An accountant, or the orders (all > 1) of ``curve``.
    curve : array_like, optional
        The RDP curve on ``source`` (≥ 0, inf allowed); only with orders.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure by default.
    show_entries : bool
        Also draw the ledger entries' curves (accountant only).
    max_entries : int
        At most this many entry curves.
    label : str, optional
        Legend label of the main curve.

    Returns
    -------
    matplotlib.axes.Axes
    """
    orders, values, acc = _orders_and_curve(source, curve)
    ax = _axes(ax)
    finite = np.isfinite(values) & np.isfinite(orders) & (values > 0)
    main_label = label or ("composed RDP curve" if acc is not None else "RDP curve")
    if not finite.any():
        ax.text(
            0.5,
            0.5,
            "the curve is 0 or infinite at every order",
            transform=ax.transAxes,
            ha="center",
        )
    else:
        ax.plot(orders[finite], values[finite], color="k", lw=2.2, label=main_label, zorder=3)
        last = np.flatnonzero(finite)[-1]
        if last < orders.size - 1 and not np.isfinite(values[last + 1]):
            ax.plot(orders[last], values[last], "k>", ms=7, zorder=3)
            ax.annotate(
                "ε = ∞ beyond →",
                (orders[last], values[last]),
                textcoords="offset points",
                xytext=(-8, 0),
                ha="right",
                va="center",
                fontsize=8,
            )
    if acc is not None and show_entries:
        seen: dict[tuple, tuple[np.ndarray, list[str]]] = {}
        for e in acc.ledger:
            key = tuple(np.round(np.asarray(e.curve, dtype=np.float64), 12).tolist())
            name = e.tag or e.mechanism
            if key in seen:
                seen[key][1].append(name)
            else:
                seen[key] = (np.asarray(e.curve, dtype=np.float64), [name])
        items = sorted(
            seen.values(), key=lambda t: -float(np.nanmax(np.where(np.isfinite(t[0]), t[0], 0.0)))
        )
        if len(seen) > 1 or len(acc.ledger) > 1:
            for i, (c, names) in enumerate(items[: int(max_entries)]):
                ok = np.isfinite(c) & (c > 0)
                if not ok.any():
                    continue
                text = names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1} alike)"
                ax.plot(
                    orders[ok], c[ok], lw=1.0, ls="--", color=f"C{i % 10}", label=f"entry: {text}"
                )
        bo = getattr(acc, "budget_order", None)
        if bo is not None:
            eps_b, lam = bo
            ax.plot([lam], [eps_b], "r*", ms=12, label=f"budget ε={eps_b:g} at α={lam:g}", zorder=4)
        b = getattr(acc, "budget", None)
        if b is not None and len(acc.ledger):
            _, best = acc.epsilon_and_order(b[1])
            if np.isfinite(best):
                ax.axvline(
                    best, color="r", lw=0.8, ls=":", label=f"best order at δ={b[1]:g}: {best:g}"
                )
    ax.set_xscale("log")
    if finite.any():
        ax.set_yscale("log")
    ax.set_xlabel("Rényi order α")
    ax.set_ylabel("RDP ε(α)")
    ax.set_title("Rényi differential privacy curve")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return ax


def epsilon_delta_curve(
    source: Any,
    curve: Any = None,
    deltas: Any = None,
    method: str = "bbghs",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ε(δ) and the best order at each δ: :func:`pymc_rdp.privacy.rdp.to_dp` on a grid of δ.

    Parameters
    ----------
    source, curve
        An accountant, or orders and the curve on them (as :func:`plot_rdp_curve`).
    deltas : array_like, optional
        δ values in (0, 1); default :data:`DEFAULT_DELTAS` (1e-12 .. 1e-1).
    method : {"bbghs", "mironov"}
        Conversion rule (Balle et al. 2020, Thm 21, or Mironov 2017, Prop. 3).

    Returns
    -------
    deltas, epsilons, best_orders : numpy.ndarray
    """
    orders, values, _ = _orders_and_curve(source, curve)
    d = DEFAULT_DELTAS if deltas is None else np.asarray(deltas, dtype=np.float64)
    d = np.atleast_1d(d)
    if d.ndim != 1 or d.size == 0:
        raise ValueError("deltas must be a non-empty 1-D array")
    if np.isnan(d).any() or (d <= 0).any() or (d >= 1).any():
        raise ValueError("deltas must lie in the open interval (0, 1)")
    d = np.sort(d)
    eps, best = _rdp.to_dp(orders, values, d, method=method)
    return d, np.asarray(eps, dtype=np.float64), np.asarray(best, dtype=np.float64)


def plot_epsilon_delta(
    source: Any,
    deltas: Any = None,
    *,
    curve: Any = None,
    ax: Any = None,
    compare_mironov: bool = True,
) -> Any:
    """Plot the (ε, δ)-DP guarantee of an RDP curve as a function of δ.

    For each δ, ε(δ) = min over orders α of ε(α) + log((α−1)/α) − (log δ + log α)/(α−1)
    (Balle et al. 2020, "Hypothesis testing interpretations and Rényi differential privacy",
    Theorem 21; :func:`pymc_rdp.privacy.rdp.to_dp`), the value :meth:`Accountant.epsilon` returns.
    With
    ``compare_mironov`` the looser ε(α) + log(1/δ)/(α−1) (Mironov 2017, Prop. 3) is drawn dashed.
    An (ε, δ) budget is marked as a point.

    Parameters
    ----------
    source : Accountant or array_like
        An accountant, or orders (then ``curve`` is required).
    deltas : array_like, optional
        δ values in (0, 1); default 45 values from 1e-12 to 1e-1 (log-spaced).
    curve : array_like, optional
        The RDP curve on the orders ``source``.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure by default.
    compare_mironov : bool
        Also draw Mironov's conversion.

    Returns
    -------
    matplotlib.axes.Axes
        The first line (label ``"ε(δ)"``) holds exactly the δ and ε values computed.
    """
    d, eps, _ = epsilon_delta_curve(source, curve, deltas)
    ax = _axes(ax)
    ax.plot(d, eps, color="k", lw=2.2, label="ε(δ)", zorder=3)
    if compare_mironov:
        _, eps_m, _ = epsilon_delta_curve(source, curve, d, method="mironov")
        ax.plot(d, eps_m, color="0.45", lw=1.2, ls="--", label="ε(δ), Mironov 2017 Prop. 3")
    if _is_accountant(source):
        b = getattr(source, "budget", None)
        if b is not None:
            ax.plot([b[1]], [b[0]], "r*", ms=12, label=f"budget (ε, δ) = ({b[0]:g}, {b[1]:g})")
    ax.set_xscale("log")
    ax.set_xlabel("δ")
    ax.set_ylabel("ε")
    ax.set_title("(ε, δ)-DP guarantee of the composed curve")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return ax


def _results_frame(results: Any) -> Any:
    import pandas as pd

    if isinstance(results, pd.DataFrame):
        return results
    if isinstance(results, Mapping):
        return pd.DataFrame(results)
    if isinstance(results, Sequence) and not isinstance(results, (str, bytes)):
        return pd.DataFrame(list(results))
    raise TypeError(
        f"results must be a DataFrame, a dict of columns or a list of rows, got {type(results)}"
    )


def plot_privacy_utility(
    results: Any,
    *,
    x: str = "epsilon",
    y: str = "log_likelihood",
    by: str = "mechanism",
    reference: Mapping[str, float] | None = None,
    ax: Any = None,
    ylabel: str | None = None,
) -> Any:
    """Plot a utility metric against the privacy budget, one line per mechanism.

    Repeated rows (same ``by`` and ``x``) are averaged; with repeats, their range is shaded.

    Parameters
    ----------
    results : pandas.DataFrame, dict of columns or list of dict rows
        Columns ``x`` (the budget, > 0; log axis), ``y`` (the metric) and ``by``.
    x, y, by : str
        Column names.
    reference : dict, optional
        ``label -> value`` drawn as horizontal lines (e.g. the non-private fit).
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure by default.
    ylabel : str, optional
        Label of the vertical axis (default: ``y``).

    Returns
    -------
    matplotlib.axes.Axes
    """
    df = _results_frame(results)
    missing = [c for c in (x, y, by) if c not in df.columns]
    if missing:
        raise ValueError(f"results: missing column(s) {missing}; has {list(df.columns)}")
    if len(df) == 0:
        raise ValueError("results is empty")
    xs = np.asarray(df[x], dtype=np.float64)
    if np.isnan(xs).any() or (xs <= 0).any():
        raise ValueError(f"results[{x!r}] must be > 0 (it is drawn on a log axis)")
    ax = _axes(ax)
    for i, (name, part) in enumerate(df.groupby(by, sort=False)):
        g = part.groupby(x)[y].agg(["mean", "min", "max", "count"]).sort_index()
        style = _MECHANISM_STYLE.get(str(name), {"color": f"C{(i + 5) % 10}", "marker": "o"})
        ax.plot(g.index, g["mean"], label=str(name), lw=1.6, ms=5, **style)
        if (g["count"] > 1).any():
            ax.fill_between(g.index, g["min"], g["max"], color=style["color"], alpha=0.15)
    for j, (lab, val) in enumerate((reference or {}).items()):
        ax.axhline(float(val), color="0.3", ls=("--", ":", "-.")[j % 3], lw=1.0, label=lab)
    ax.set_xscale("log")
    grid = np.unique(xs)
    if grid.size <= 12:
        ax.set_xticks(grid, [f"{g:g}" for g in grid])
        ax.minorticks_off()
    ax.set_xlabel("privacy budget ε" if x == "epsilon" else x)
    ax.set_ylabel(ylabel or y)
    ax.set_title("Privacy–utility trade-off")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return ax


def _unflatten(da: Any, node: str, cell: str, dc: str, ds: str) -> Any:
    """A flat CPT (dim ``{node}_cell``, labels ``"config | node=state"`` or ``"node=state"``,
    configuration-major) as the 2-D ``(dc, ds)`` array."""
    import xarray as xr

    configs: list[str] = []
    states: list[str] = []
    for label in (str(x) for x in da[cell].to_numpy()):
        config, sep, rest = label.rpartition(" | ")
        config = config if sep else "(none)"
        state = rest[len(node) + 1 :] if rest.startswith(f"{node}=") else rest
        if config not in configs:
            configs.append(config)
        if state not in states:
            states.append(state)
    if len(configs) * len(states) != da.sizes[cell]:
        raise ValueError(f"node: the labels of {cell!r} are not a configuration × state grid")
    arr = da.transpose("chain", "draw", cell).to_numpy()
    arr = arr.reshape(arr.shape[0], arr.shape[1], len(configs), len(states))
    return xr.DataArray(
        arr, dims=("chain", "draw", dc, ds), coords={dc: configs, ds: states}, name=da.name
    )


def _cpt_array(idata: Any, var: str, dc: str, ds: str, label: str) -> Any:
    try:
        post = idata["posterior"].to_dataset()
    except (KeyError, TypeError, AttributeError):
        post = None
    if post is None or var not in post.data_vars:
        raise ValueError(f"node: {label}has no posterior variable {var!r}")
    da = post[var]
    cell = f"{var[: -len('_cpt')]}_cell"
    if set(da.dims) == {"chain", "draw", cell}:
        da = _unflatten(da, var[: -len("_cpt")], cell, dc, ds)
    if set(da.dims) != {"chain", "draw", dc, ds}:
        raise ValueError(f"node: {var!r} must have dims (chain, draw, {dc}, {ds}), got {da.dims}")
    return da.transpose("chain", "draw", dc, ds)


def plot_cpt_posterior(
    idata: Any,
    node: str,
    *,
    parent_configs: Sequence[Any] | None = None,
    states: Sequence[Any] | None = None,
    max_configs: int = 6,
    ci_prob: float = 0.94,
    title: str | None = None,
) -> Any:
    """Posterior credible intervals of one conditional probability table, by ``arviz.plot_forest``.

    The variable ``{node}_cpt`` with dims ``({node}_parent_config, {node}_state)`` (the layout
    of :class:`pymc_rdp.BayesianNetwork`) is drawn as one interval per (parent configuration,
    state): the thick bar is the central 50% interval, the thin one the central ``ci_prob``
    interval, the dot the posterior mean. A release that is a single exact draw (the Dirichlet
    mechanism) has one draw: its intervals collapse to the released value.

    Parameters
    ----------
    idata : xarray.DataTree or dict of {str: xarray.DataTree}
        Has a ``posterior`` group holding ``{node}_cpt``. A dict draws several results side by
        side (one colour each, with a legend), e.g. a private release and a reference posterior;
        they must share the coordinates. Their draws are pooled over chains; a single-draw
        result is repeated to the others' length, and longer results are cut to the shortest.
    node : str
        The child variable.
    parent_configs : sequence, optional
        Labels (or integer positions) of the parent configurations to draw; default the first
        ``max_configs``.
    states : sequence, optional
        Labels (or positions) of the child states to draw; default all.
    max_configs : int
        How many configurations by default.
    ci_prob : float
        Probability of the outer interval, in (0.5, 1).
    title : str, optional
        Figure title (default: ``P(node | parents)`` and what is drawn).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import arviz as az

    var = f"{node}_cpt"
    dc, ds = f"{node}_parent_config", f"{node}_state"
    if not 0.5 < float(ci_prob) < 1.0:
        raise ValueError(f"ci_prob must lie in (0.5, 1), got {ci_prob!r}")
    if isinstance(max_configs, bool) or not isinstance(max_configs, (int, np.integer)):
        raise TypeError(f"max_configs must be an int, got {max_configs!r}")
    if max_configs < 1:
        raise ValueError(f"max_configs must be >= 1, got {max_configs!r}")
    several = isinstance(idata, Mapping) and not hasattr(idata, "children")
    if several:
        if not idata:
            raise ValueError("idata: the dict of results is empty")
        arrays = {str(k): _cpt_array(v, var, dc, ds, f"{k!r} ") for k, v in idata.items()}
    else:
        arrays = {"": _cpt_array(idata, var, dc, ds, "idata ")}
    first = next(iter(arrays.values()))
    all_configs = [str(c) for c in first[dc].to_numpy()]
    all_states = [str(s) for s in first[ds].to_numpy()]
    for k, da in arrays.items():
        if [str(c) for c in da[dc].to_numpy()] != all_configs or [
            str(x) for x in da[ds].to_numpy()
        ] != all_states:
            raise ValueError(f"idata: result {k!r} has other parent configurations or states")

    def pick(values: Sequence[Any] | None, labels: list[str], name: str, default: int) -> list:
        if values is None:
            return labels[:default]
        out = []
        for v in values:
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                if not 0 <= int(v) < len(labels):
                    raise ValueError(f"{name}: position {v} out of range (0..{len(labels) - 1})")
                out.append(labels[int(v)])
            elif str(v) in labels:
                out.append(str(v))
            else:
                more = "..." if len(labels) > 5 else ""
                raise ValueError(f"{name}: {v!r} is not one of {labels[:5]}{more}")
        if not out:
            raise ValueError(f"{name} must not be empty")
        return out

    configs = pick(parent_configs, all_configs, "parent_configs", int(max_configs))
    chosen_states = pick(states, all_states, "states", len(all_states))
    # one parent per line keeps long configuration labels readable
    shown = [re.sub(r",(?=[^,\s=]+=)", "\n", c) for c in configs]
    if len(set(shown)) != len(shown):
        shown = configs
    values = {}
    for k, da in arrays.items():
        label_idx = [all_configs.index(c) for c in configs]
        state_idx = [all_states.index(c) for c in chosen_states]
        v = da.to_numpy()[:, :, label_idx][:, :, :, state_idx]
        values[k] = v
    single = all(v.shape[0] * v.shape[1] == 1 for v in values.values())
    if several:
        flat = {k: v.reshape(1, -1, *v.shape[2:]) for k, v in values.items()}
        lengths = [v.shape[1] for v in flat.values() if v.shape[1] > 1]
        n = min(lengths) if lengths else 1
        values = {
            k: np.broadcast_to(v, (1, n, *v.shape[2:])) if v.shape[1] == 1 else v[:, :n]
            for k, v in flat.items()
        }

    def tree(v: np.ndarray) -> Any:
        return az.from_dict(
            {"posterior": {var: np.array(v, dtype=np.float64)}},
            coords={dc: shown, ds: chosen_states},
            dims={var: [dc, ds]},
        )

    data = {k: tree(v) for k, v in values.items()} if several else tree(values[""])
    n_rows = len(configs) * len(chosen_states)
    longest = max(len(line) for c in shown for line in c.split("\n"))
    longest_state = max(len(s) for s in chosen_states)
    label_w = 0.8 + 0.1 * (min(longest, 60) + min(longest_state, 30))
    forest_w = 4.5
    rows_h = max(1.2, 0.36 * n_rows * (1.0 + 0.35 * (len(values) - 1)))
    below = 0.6 + (0.45 if several else 0.0)  # inches for the axis labels (and the legend)
    height = 0.55 + below + rows_h
    pc = az.plot_forest(
        data,
        var_names=[var],
        combined=True,
        labels=[dc, ds],
        ci_probs=(0.5, float(ci_prob)),
        point_estimate="mean",
        backend="matplotlib",
        figure_kwargs={
            "figsize": (label_w + forest_w, height),
            "width_ratios": [label_w, forest_w],
        },
    )
    fig = pc.viz["figure"].item()
    label_ax = pc.viz["plot"].sel(column="labels").item()
    if len(label_ax.get_xticks()) == 2:
        label_ax.set_xticks(label_ax.get_xticks(), ["parents", node])
    fig.subplots_adjust(top=1.0 - 0.55 / height, bottom=below / height)
    if several:
        pc.add_legend(
            "model",
            loc="lower center",
            bbox_to_anchor=(0.5, 0.0),
            ncols=len(values),
            fontsize=9,
            title=None,
            frameon=False,
        )
    if title is None:
        parents = "" if all_configs == ["(none)"] else " | parents"
        if single:
            title = f"P({node}{parents}): the released values (a single draw)"
        else:
            title = f"P({node}{parents}): mean, 50% and {ci_prob:.0%} intervals"
    fig.suptitle(title, fontsize=11)
    return fig
