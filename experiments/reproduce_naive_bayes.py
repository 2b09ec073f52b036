r"""Reproduce the naive Bayes experiments of the Dirichlet-mechanism paper, with its bugs fixed.

Ponnoprat (TMLR 2023), "Dirichlet Mechanism for Differentially Private KL Divergence
Minimization", Section 6: a categorical naive Bayes classifier is released privately on Adult,
German credit and digits, and its test cross-entropy and accuracy are compared across mechanisms.

Protocol (the paper's, as implemented by :class:`pymc_rdp.models.naive_bayes.NaiveBayes`):

* one 70/30 train/test split with ``random_state=1`` (:func:`pymc_rdp.datasets.paper_split`,
  preprocessing fitted on the training part; as in the paper, the quantile bin edges and the
  state lists are taken from the training split and treated as public, which the fits declare
  with ``categories="from-data"``: the ledgers flag them as outside the guarantee, the ε columns
  are those of the mechanisms); the split is the same in every repeat, and the
  repeats vary only the randomness of the mechanism (an independent seed per dataset, method,
  ε and repeat, derived with :class:`numpy.random.SeedSequence`);
* RDP budget ε at order λ = 5, ε on ``logspace(-3, 1, n)`` (n = 10 in the paper); the K + 1
  count tables (the class counts :math:`N_j` and one class-by-state table per feature) get
  ε/(K+1) each; replace-one neighbours (Δ₁ = 2, Δ₂ = √2, Δ∞ = 1 per table);
* methods: the Dirichlet mechanism (one exact draw per table row, Algorithm 1: r solves
  (λ r² Δ₂²/2) ψ′(α₀ + 3(λ−1) r Δ∞) = ε/(K+1) and α = α₀ + 4(λ−1) r Δ∞, α₀ = 1), the Gaussian
  and Laplace mechanisms (noisy counts clipped at 1e-6 and normalised), the non-private maximum
  likelihood fit with +0.1 smoothing and random guessing (cross-entropy log C, expected accuracy
  1/C for C classes).

Two variants that mimic the public reference code are also run, to measure how much of the
paper's Dirichlet numbers came from its bugs. They are **not** private at the claimed ε:

* ``dirichlet_ref_alpha``: r calibrated as above, but sampled with α = α₀ + (λ−1) r Δ∞ (the
  reference code's sampling concentration) instead of α₀ + 4(λ−1) r Δ∞;
* ``dirichlet_ref_alpha_class``: additionally the class table is built by summing the one-hot
  feature counts, i.e. K·N_j, whose sensitivity is K times the one assumed by the calibration.

For every method the CSV also reports ``true_rdp_epsilon``: the RDP ε at λ of what was actually
released, summed over the K + 1 tables (sequential composition, Mironov 2017, Prop. 1), using the
exact worst-case divergence of the Dirichlet mechanism on count histograms
(:func:`pymc_rdp.privacy.dirichlet_divergence.exact_histogram_rdp`) for the Dirichlet methods and
the
exact Gaussian and Laplace curves for the others.

Run ``python experiments/reproduce_naive_bayes.py`` (full grid) or with ``--quick``.
"""

from __future__ import annotations

import argparse
import copy
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from pymc_rdp import datasets
from pymc_rdp.cli.progress import Steps
from pymc_rdp.models.naive_bayes import NaiveBayes
from pymc_rdp.privacy.mechanisms import DirichletMechanism, UnsafeNoiseSeed

DATASETS: tuple[str, ...] = ("adult", "german_credit", "digits")
PRIVATE_METHODS: tuple[str, ...] = ("dirichlet", "gaussian", "laplace")
REFERENCE_METHODS: tuple[str, ...] = ("dirichlet_ref_alpha", "dirichlet_ref_alpha_class")
BASELINES: tuple[str, ...] = ("non_private", "random_guess")
ORDER = 5.0
ALPHA0 = 1.0
SMOOTHING = 0.1
SEED = 20230601
#: (Δ₂, Δ∞) of one count table for each neighbouring relation.
SENSITIVITIES = {"replace-one": (math.sqrt(2.0), 1.0), "add-remove": (1.0, 1.0)}
#: Columns of the results CSV.
COLUMNS: tuple[str, ...] = (
    "dataset",
    "method",
    "epsilon",
    "private",
    "repeats",
    "cross_entropy_mean",
    "cross_entropy_sd",
    "accuracy_mean",
    "accuracy_sd",
    "true_rdp_epsilon",
)
_LABELS = {
    "dirichlet": "Dirichlet",
    "gaussian": "Gaussian",
    "laplace": "Laplace",
    "dirichlet_ref_alpha": "Dirichlet, reference-code α (not private at ε)",
    "dirichlet_ref_alpha_class": "Dirichlet, reference-code α + class counts (not private)",
    "non_private": "non-private (MLE + 0.1)",
    "random_guess": "random guessing",
}
_STYLE = {
    "dirichlet": {"color": "C0", "marker": "o"},
    "gaussian": {"color": "C1", "marker": "s"},
    "laplace": {"color": "C2", "marker": "^"},
    "dirichlet_ref_alpha": {"color": "0.45", "marker": "x", "linestyle": ":"},
    "dirichlet_ref_alpha_class": {"color": "0.7", "marker": "+", "linestyle": ":"},
    "non_private": {"color": "k", "linestyle": "--"},
    "random_guess": {"color": "C3", "linestyle": "-."},
}


def epsilon_grid(count: int) -> np.ndarray:
    """The paper's budgets: ``count`` values of ε on ``logspace(-3, 1)``."""
    if count < 1:
        raise ValueError(f"the number of epsilons must be >= 1, got {count}")
    return np.logspace(-3.0, 1.0, count) if count > 1 else np.array([1e-3])


def _count_tables(model: NaiveBayes, X: pd.DataFrame, y: pd.Series) -> list[np.ndarray]:
    """Class counts N_j and the class-by-state table of every feature (as NaiveBayes builds)."""
    y_codes = pd.Index(model.classes_, dtype=object).get_indexer(y.to_numpy(dtype=object))
    n_classes = model.classes_.size
    tables = [np.bincount(y_codes, minlength=n_classes).astype(np.float64)]
    for i, states in enumerate(model.categories_):
        values = X.iloc[:, i].to_numpy(dtype=object)
        codes = pd.Index(states, dtype=object).get_indexer(values)
        seen = codes >= 0
        d = len(states)
        flat = y_codes[seen] * d + codes[seen]
        tables.append(
            np.bincount(flat, minlength=n_classes * d).reshape(n_classes, d).astype(np.float64)
        )
    return tables


def reference_mechanisms(
    epsilon: float,
    n_tables: int,
    order: float = ORDER,
    alpha0: float = ALPHA0,
    neighbours: str = "replace-one",
) -> tuple[DirichletMechanism, DirichletMechanism]:
    """The reference code's Dirichlet releases: (feature-table mechanism, class mechanism).

    r is calibrated as in Algorithm 1 for ε/(K+1) (``n_tables`` = K + 1), but the sampling
    concentration is α₀ + (λ−1) r Δ∞ instead of α₀ + 4(λ−1) r Δ∞. The class mechanism is the
    same draw applied to K·N_j, whose sensitivities are K·Δ₂ and K·Δ∞ (one record moves K
    counts); it is returned with those sensitivities so that its curve is the true one.
    """
    d2, dinf = SENSITIVITIES[neighbours]
    good = DirichletMechanism.calibrate(
        epsilon / n_tables * (1.0 - 1e-9), order, d2, dinf, alpha0=alpha0
    )
    r = float(good.r)
    alpha = alpha0 + (order - 1.0) * r * dinf
    k = n_tables - 1
    exact = {"analysis": "exact", "neighbours": neighbours}
    feature = DirichletMechanism(r, alpha, d2, dinf, **exact)
    klass = DirichletMechanism(r, alpha, k * d2, k * dinf, **exact)
    return feature, klass


def _exact_dirichlet_epsilon(mech: DirichletMechanism, order: float, neighbours: str) -> float:
    exact = DirichletMechanism(
        mech.r,
        mech.alpha,
        mech.l2_sensitivity,
        mech.linf_sensitivity,
        analysis="exact",
        neighbours=neighbours,
    )
    return float(exact.rdp(np.array([order]))[0])


def _reference_fit(
    template: NaiveBayes,
    tables: list[np.ndarray],
    epsilon: float,
    with_class_bug: bool,
    noise: UnsafeNoiseSeed,
    order: float,
    neighbours: str,
) -> tuple[NaiveBayes, float]:
    """A naive Bayes model released the reference code's way, and its true ε at ``order``."""
    n_tables = len(tables)
    feature_mech, class_mech = reference_mechanisms(epsilon, n_tables, order, neighbours=neighbours)
    if with_class_bug:
        class_counts = sum(t.sum(axis=1) for t in tables[1:])  # K·N_j without missing values
        class_release = class_mech.release(class_counts, noise)
        class_eps = float(class_mech.rdp(np.array([order]))[0])
    else:
        class_release = feature_mech.release(tables[0], noise)
        class_eps = float(feature_mech.rdp(np.array([order]))[0])
    releases = [class_release] + [feature_mech.release(t, noise) for t in tables[1:]]
    tiny = np.finfo(np.float64).tiny
    probs = [np.clip(np.asarray(p, dtype=np.float64), tiny, None) for p in releases]
    probs = [p / p.sum(axis=-1, keepdims=True) for p in probs]
    model = copy.copy(template)
    model.class_log_prior_ = np.log(probs[0])
    model.feature_log_prob_ = [np.log(p) for p in probs[1:]]
    true_eps = class_eps + (n_tables - 1) * float(feature_mech.rdp(np.array([order]))[0])
    return model, true_eps


def run(
    datasets_: Sequence[str] = DATASETS,
    repeats: int = 10,
    n_epsilons: int = 10,
    order: float = ORDER,
    reference: bool = True,
    seed: int = SEED,
    verbose: bool = False,
    neighbours: str = "replace-one",
) -> pd.DataFrame:
    """Run the grid and return one row per (dataset, method, ε, repeat).

    ``neighbours`` is the neighbouring relation of every release (the paper's protocol:
    replace-one; ``"add-remove"`` halves Δ₁ and Δ₂² of a table).

    Columns: dataset, method, epsilon (NaN for the baselines), repeat, cross_entropy, accuracy,
    true_rdp_epsilon (RDP ε at ``order`` of what was released; inf for the non-private fit).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if neighbours not in SENSITIVITIES:
        raise ValueError(f"neighbours must be one of {tuple(SENSITIVITIES)}, got {neighbours!r}")
    unknown = [d for d in datasets_ if d not in DATASETS]
    if unknown:
        raise ValueError(f"datasets must be among {DATASETS}, got {unknown}")
    epsilons = epsilon_grid(n_epsilons)
    methods = PRIVATE_METHODS + (REFERENCE_METHODS if reference else ())
    rows: list[dict] = []
    steps = Steps(len(datasets_), quiet=not verbose)
    for d_idx, name in enumerate(datasets_):
        with steps.step(name, total=len(methods) * len(epsilons) * repeats) as advance:
            X_train, X_test, y_train, y_test = datasets.paper_split(name, random_state=1)
            n_classes = int(pd.unique(y_train).size)
            mle = NaiveBayes(mechanism="none", smoothing=SMOOTHING).fit(X_train, y_train)
            n_tables = X_train.shape[1] + 1
            rows.append(
                dict(
                    dataset=name,
                    method="non_private",
                    epsilon=np.nan,
                    repeat=0,
                    cross_entropy=mle.cross_entropy(X_test, y_test),
                    accuracy=mle.score(X_test, y_test),
                    true_rdp_epsilon=np.inf,
                )
            )
            rows.append(
                dict(
                    dataset=name,
                    method="random_guess",
                    epsilon=np.nan,
                    repeat=0,
                    cross_entropy=math.log(n_classes),
                    accuracy=1.0 / n_classes,
                    true_rdp_epsilon=0.0,
                )
            )
            tables = _count_tables(mle, X_train, y_train) if reference else []
            for m_idx, method in enumerate(methods):
                for e_idx, eps in enumerate(epsilons):
                    for rep in range(repeats):
                        rng = np.random.default_rng([seed, d_idx, m_idx, e_idx, rep])
                        if method in PRIVATE_METHODS:
                            model = NaiveBayes(
                                # the paper's protocol: the states of the training split (explicit,
                                # flagged opt-in; the paper treats them as public)
                                categories="from-data",
                                classes="from-data",
                                mechanism=method,
                                epsilon=float(eps),
                                order=order,
                                alpha0=ALPHA0,
                                neighbours=neighbours,
                                # public data: reproducible (not private) noise for the study
                                noise_source=UnsafeNoiseSeed(int(rng.integers(2**62))),
                            ).fit(X_train, y_train)
                            if method == "dirichlet":
                                true_eps = n_tables * _exact_dirichlet_epsilon(
                                    model.mechanism_, order, neighbours
                                )
                            else:
                                true_eps = float(model.accountant_.rdp(np.array([order]))[0])
                        else:
                            model, true_eps = _reference_fit(
                                mle,
                                tables,
                                float(eps),
                                with_class_bug=method == "dirichlet_ref_alpha_class",
                                noise=UnsafeNoiseSeed(int(rng.integers(2**62))),
                                order=order,
                                neighbours=neighbours,
                            )
                        rows.append(
                            dict(
                                dataset=name,
                                method=method,
                                epsilon=float(eps),
                                repeat=rep,
                                cross_entropy=model.cross_entropy(X_test, y_test),
                                accuracy=model.score(X_test, y_test),
                                true_rdp_epsilon=true_eps,
                            )
                        )
                        advance(1)
    return pd.DataFrame(rows)


def summarise(raw: pd.DataFrame) -> pd.DataFrame:
    """Mean and sample sd across repeats per dataset, method and ε (columns :data:`COLUMNS`)."""
    keys = ["dataset", "method", "epsilon"]
    grouped = raw.groupby(keys, dropna=False, sort=False)
    out = grouped.agg(
        repeats=("repeat", "size"),
        cross_entropy_mean=("cross_entropy", "mean"),
        cross_entropy_sd=("cross_entropy", "std"),
        accuracy_mean=("accuracy", "mean"),
        accuracy_sd=("accuracy", "std"),
        true_rdp_epsilon=("true_rdp_epsilon", "mean"),
    ).reset_index()
    out[["cross_entropy_sd", "accuracy_sd"]] = out[["cross_entropy_sd", "accuracy_sd"]].fillna(0.0)
    out["private"] = out["method"].isin((*PRIVATE_METHODS, "random_guess"))
    return out.loc[:, list(COLUMNS)]


def plot(summary: pd.DataFrame, metric: str, path: Path) -> None:
    """One panel per dataset: ``metric`` (mean ± sd band) against ε on a log axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(summary["dataset"]))
    fig, axes = plt.subplots(
        1, len(names), figsize=(4.6 * len(names), 3.9), layout="constrained", squeeze=False
    )
    private = summary[summary["epsilon"].notna()]
    for ax, name in zip(axes[0], names, strict=True):
        sub = private[private["dataset"] == name]
        for method in dict.fromkeys(sub["method"]):
            s = sub[sub["method"] == method].sort_values("epsilon")
            mean = s[f"{metric}_mean"].to_numpy()
            sd = s[f"{metric}_sd"].to_numpy()
            style = _STYLE.get(method, {})
            ax.plot(s["epsilon"], mean, label=_LABELS.get(method, method), ms=4, **style)
            ax.fill_between(
                s["epsilon"], mean - sd, mean + sd, color=style.get("color"), alpha=0.15
            )
        for method in BASELINES:
            base = summary[(summary["dataset"] == name) & (summary["method"] == method)]
            if len(base):
                style = {k: v for k, v in _STYLE[method].items() if k != "marker"}
                ax.axhline(
                    float(base[f"{metric}_mean"].iloc[0]), label=_LABELS[method], lw=1.2, **style
                )
        ax.set_xscale("log")
        if metric == "cross_entropy":
            ax.set_yscale("log")
        ax.set_xlabel("ε (RDP, λ = 5)")
        ax.set_ylabel("test " + metric.replace("_", "-"))
        ax.set_title(name.replace("_", " "))
        ax.grid(True, which="major", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize="small")
    fig.suptitle(f"Private naive Bayes: test {metric.replace('_', '-')} (mean ± sd)")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(summary: pd.DataFrame, metric: str = "cross_entropy") -> str:
    """A compact text table of ``metric`` means: one block per dataset, ε by method."""
    blocks = []
    for name in dict.fromkeys(summary["dataset"]):
        sub = summary[summary["dataset"] == name]
        grid = sub[sub["epsilon"].notna()].pivot(
            index="epsilon", columns="method", values=f"{metric}_mean"
        )
        grid = grid.loc[:, [m for m in PRIVATE_METHODS + REFERENCE_METHODS if m in grid.columns]]
        for method in BASELINES:
            base = sub[sub["method"] == method]
            grid[method] = float(base[f"{metric}_mean"].iloc[0])
        grid.columns = [
            c.replace("dirichlet_ref_alpha_class", "ref_a+cls").replace(
                "dirichlet_ref_alpha", "ref_a"
            )
            for c in grid.columns
        ]
        blocks.append(f"{name}: test {metric}\n" + grid.to_string(float_format="{:.4f}".format))
    return "\n\n".join(blocks)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=None)
    parser.add_argument("--repeats", type=int, default=None, help="repeats (default 10)")
    parser.add_argument("--epsilons", type=int, default=None, help="number of ε (default 10)")
    parser.add_argument("--out", type=Path, default=Path("docs/figures"))
    parser.add_argument(
        "--quick", action="store_true", help="German credit, 3 ε, 2 repeats (unless given)"
    )
    parser.add_argument("--no-reference", action="store_true", help="skip the buggy variants")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--neighbours",
        choices=tuple(SENSITIVITIES),
        default="replace-one",
        help="neighbouring relation of the releases (default replace-one)",
    )
    args = parser.parse_args(argv)
    names = args.datasets or (["german_credit"] if args.quick else list(DATASETS))
    repeats = args.repeats or (2 if args.quick else 10)
    n_eps = args.epsilons or (3 if args.quick else 10)

    start = time.perf_counter()
    raw = run(
        names,
        repeats,
        n_eps,
        reference=not args.no_reference,
        seed=args.seed,
        verbose=True,
        neighbours=args.neighbours,
    )
    summary = summarise(raw)
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.neighbours == "replace-one" else "_" + args.neighbours.replace("-", "_")
    csv = args.out / f"repro_naive_bayes{suffix}.csv"
    summary.to_csv(csv, index=False, float_format="%.6g")
    plot(summary, "cross_entropy", args.out / f"repro_nb_cross_entropy{suffix}.png")
    plot(summary, "accuracy", args.out / f"repro_nb_accuracy{suffix}.png")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table(summary, "cross_entropy"))
        print()
        print(table(summary, "accuracy"))
    print(f"\nwrote {csv} and figures in {args.out} ({time.perf_counter() - start:.1f} s)")
    return summary


if __name__ == "__main__":
    main()
