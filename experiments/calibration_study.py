"""Simulation-based calibration of private Bayesian-network posteriors.

For each replicate: CPT rows are drawn from the prior ``Dirichlet(1)``, ``N`` records are forward
sampled, every family table is released with the Gaussian (or Laplace) mechanism at a total budget
ε at order λ = 5 (ε/K per family, as :class:`pymc_rdp.BayesianNetwork` does), and the CPTs are
inferred by

* ``joint``: the joint linear-query model (:mod:`pymc_rdp.distributions.joint_likelihood`; Laplace
noise
  as a scale mixture of normals), NUTS;
* ``per-family``: :class:`pymc_rdp.BayesianNetwork`'s noise-aware model (one ``NoisyCounts``
  term per family), NUTS, on the same releases;
* ``naive``: the clipped and normalised noisy tables of the same releases (a point estimate: no
  intervals);
* ``non-private``: the exact conjugate posterior ``Dirichlet(1 + counts)``;
* ``augmentation``: the exact posterior given the releases by data augmentation
  (``BayesianNetwork.fit(...).sample(sampler="augmentation")``, :class:`pymc_rdp.DataAugmentation`
  with its default moves, ``--chains`` chains of ``--tune`` + ``--draws`` iterations), the number
  of records declared public. It fits the release kinds ``discrete_gaussian``,
  ``discrete_laplace`` and ``dirichlet`` (``--noise``): the family tables released exactly as
  ``BayesianNetwork.fit(mechanism="gaussian" | "laplace" | "dirichlet")`` releases them (the
  integer mechanisms, and the Dirichlet mechanism's released CPT rows), and the kinds ``gaussian``
  and ``laplace`` of the NUTS methods with the same mechanisms
  (:mod:`calibration_augmentation`, beside this script).

Per replicate and method the record also holds the TARP fractions of the posterior draws for
eight reference points drawn from the prior (Lemos et al. 2023, "Sampling-based accuracy testing
of posterior estimators for general inference"; ``calibration_augmentation.tarp_fractions``), and
for the data-augmentation fits the smallest bulk ESS, the largest r̂ over the CPT entries and the
moves' acceptance rates.

If the inference is calibrated, the true CPT entry falls in the central q-interval of its
posterior with probability q, and its rank among L posterior draws is uniform on 0..L
(Talts et al. 2018, "Validating Bayesian inference algorithms with simulation-based
calibration"). Reported: coverage of the central 50/80/95% intervals over all CPT entries and
replicates (with a standard error from the spread of the per-replicate coverages, which accounts
for the correlation of the entries within a replicate), SBC rank histograms, the mean
KL(true row ‖ posterior-mean row), the mean held-out log-likelihood per record (2,000 fresh
records from the true network), NUTS sampling time and minimum ESS (over the CPT entries) per
second.

Every replicate is seeded by (seed, setting, replicate) alone, so that the methods see the same
truth and the same releases whichever of them run and in whichever order, and an interrupted run
resumes where it stopped. Each finished (setting, replicate, method) is appended to the
JSON-lines file ``--out``; ``--resume`` skips what it holds; ``--report`` rebuilds the table and
the figures from such files without fitting anything. Each model structure is compiled once (see
:class:`_Template`); the joint model is sampled with nutpie and the per-family model with PyMC's
NUTS by default (``--joint-sampler``, ``--family-sampler``), one chain.

Run::

    python experiments/calibration_study.py --replicates 10 --out results.jsonl
    python experiments/calibration_study.py --report --from-json results.jsonl

    python experiments/calibration_study.py --methods augmentation non-private \
        --noise discrete_gaussian discrete_laplace dirichlet --chains 2 --tune 40 --draws 80 \
        --out experiments/results/calibration_augmentation.jsonl --resume --tolerance 0.05 \
        --figure-prefix calibration_augmentation

Default grid: asia, Gaussian, N ∈ {100, 1000, 10000}, ε ∈ {0.1, 1}. The full study
(``--networks asia sachs child --noise gaussian laplace --replicates 100``) takes days on one core.
Figures: ``docs/figures/{prefix}_coverage.png``, ``{prefix}_ranks_{network}.png`` and
``{prefix}_tarp.png`` (``--figure-prefix``, default ``calibration``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import logging
import time
import warnings
import zlib
from pathlib import Path

import numpy as np

LEVELS = (0.5, 0.8, 0.95)
METHODS = ("joint", "per-family", "naive", "non-private", "augmentation")
INTERVAL_METHODS = ("joint", "per-family", "non-private", "augmentation")
#: the methods that fit the Gaussian/Laplace releases of the NUTS study (release kinds
#: ``gaussian`` and ``laplace``)
NUTS_METHODS = ("joint", "per-family", "naive")
N_RANK = 99
N_HELDOUT = 2000
ROOT = Path(__file__).resolve().parents[1]


def _sibling(name: str):
    """The module ``experiments/{name}.py`` (this script is run and imported by its path)."""
    import importlib.util
    import sys

    full = f"_experiments_{name}"
    if full not in sys.modules:
        spec = importlib.util.spec_from_file_location(full, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
    return sys.modules[full]


aug = _sibling("calibration_augmentation")
NOISE_KINDS = ("gaussian", "laplace", *aug.KIND_MECHANISM)


# ----------------------------------------------------------------------------- one replicate


def _prior_cpts(st, cards, rng):
    return {
        v: rng.dirichlet(np.ones(cards[v]), size=int(np.prod([cards[p] for p in st.parents[v]])))
        for v in st.order
    }


def _summaries(draws: dict, truth: dict, st) -> dict:
    """Coverage indicators, SBC ranks and KL for one replicate; draws[v]: (S, rows, states)."""
    cover = {q: [] for q in LEVELS}
    ranks, kls = [], []
    for v in st.order:
        d = draws[v]
        t = truth[v]
        for q in LEVELS:
            lo = np.quantile(d, (1 - q) / 2, axis=0)
            hi = np.quantile(d, (1 + q) / 2, axis=0)
            cover[q].extend(((lo <= t) & (t <= hi)).ravel().astype(int).tolist())
        ranks.extend((d < t[None]).sum(axis=0).ravel().tolist())
        mean = d.mean(axis=0)
        mean = mean / mean.sum(axis=1, keepdims=True)
        kls.extend(np.sum(t * (np.log(t) - np.log(np.maximum(mean, 1e-300))), axis=1).tolist())
    return {"cover": cover, "ranks": ranks, "kl": kls}


def _heldout(st, cards, truth, est, rng, n=N_HELDOUT) -> float:
    from pymc_rdp.bn.structure import forward_sample, record_log_likelihood

    codes = forward_sample(st, truth, cards, n, rng)
    return float(np.mean(record_log_likelihood(st, est, cards, codes)))


def _thin(d: np.ndarray, size: int) -> np.ndarray:
    idx = np.linspace(0, d.shape[0] - 1, size).round().astype(int)
    return d[idx]


def _min_ess(idata) -> float:
    """The smallest bulk ESS over the CPT entries (variables ``*_cpt``)."""
    import arviz as az

    post = idata["posterior"]
    names = [v for v in post.data_vars if str(v).endswith("_cpt")]
    ess = az.ess(idata, var_names=names)
    ess = ess["posterior"] if "posterior" in getattr(ess, "children", {}) else ess
    return float(min(np.nanmin(ess[v].to_numpy()) for v in ess.data_vars))


def setting_key(network: str, noise: str, epsilon: float, n: int) -> str:
    return f"{network}|{noise}|{epsilon:g}|{n}"


def _rng(seed: int, key: str, rep: int, stream: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(key.encode()), rep, stream])


def _constants(model):
    """The model's graph as a FunctionGraph and its constants in topological order."""
    from pymc.model.fgraph import fgraph_from_model
    from pytensor.graph.basic import Constant

    fgraph, _ = fgraph_from_model(model)
    seen, consts = set(), []
    for node in fgraph.toposort():
        for i in node.inputs:
            if isinstance(i, Constant) and id(i) not in seen:
                seen.add(id(i))
                consts.append(i)
    return fgraph, consts


def _op_key(op):
    """An Op for structural comparison.

    Left out: a privacy Op's ledger record (metadata) and the parameters of a free variable's
    transform (a reparametrisation, e.g. the reference cell of a log-ratio transform chosen from
    the data: the template keeps its own, which leaves the posterior unchanged).
    """
    from pymc.model.fgraph import ModelFreeRV

    if isinstance(op, ModelFreeRV):
        return (type(op), op.name, op.dims, type(op.transform).__name__)
    meta = getattr(op, "_meta", None)
    if meta is None:
        return op
    return (type(op), tuple((k, repr(v)) for k, v in sorted(meta().items()) if k != "record"))


def _ops(fgraph) -> list:
    return [_op_key(node.op) for node in fgraph.toposort()]


class _Template:
    """A model compiled once, reused for every model of the same structure.

    Built from a model and a probe (the same builder at a slightly different N, ε and other
    data): the constants that differ between the two (releases, N, noise scales and what is
    computed from them) become shared variables. A later model matches if its graph has the same
    operations and agrees with the template on every other constant; it is then sampled by
    setting those shared values, without compiling again.
    """

    def __init__(self, model, probe, sampler: str):
        import pytensor
        from pymc.model.fgraph import model_from_fgraph

        fgraph, consts = _constants(model)
        pfgraph, pconsts = _constants(probe)
        if _ops(fgraph) != _ops(pfgraph) or len(consts) != len(pconsts):
            raise ValueError("the probe model has another structure")
        self.ops = _ops(fgraph)
        self.types = [c.type for c in consts]
        self.diff = [
            i
            for i, (a, b) in enumerate(zip(consts, pconsts, strict=True))
            if a.type != b.type or not np.array_equal(a.data, b.data)
        ]
        self.fixed = {i: c.data for i, c in enumerate(consts) if i not in self.diff}
        self.shared = {}
        for i in self.diff:
            c = consts[i]
            self.shared[i] = pytensor.shared(np.array(c.data), name=f"_c{i}", shape=c.type.shape)
        fgraph.replace_all([(consts[i], v) for i, v in self.shared.items()], import_missing=True)
        self.model = model_from_fgraph(fgraph, mutate_fgraph=True)
        self.sampler = sampler
        if sampler == "nutpie":
            import nutpie

            self.compiled = nutpie.compile_pymc_model(self.model, freeze_model=False)
        else:
            import pymc as pm

            with self.model:
                self.step = pm.NUTS()

    def values(self, model) -> dict | None:
        """The shared values that make the template ``model``; None if it does not match."""
        fgraph, consts = _constants(model)
        if len(consts) != len(self.types) or [c.type for c in consts] != self.types:
            return None
        if _ops(fgraph) != self.ops:
            return None
        for i, data in self.fixed.items():
            if not np.array_equal(consts[i].data, data):
                return None
        vals = {f"_c{i}": np.asarray(consts[i].data) for i in self.diff}
        for v in model.data_vars:
            vals[v.name] = np.asarray(v.get_value())
        return vals

    def sample(self, vals: dict, draws: int, tune: int, seed: int):
        """NUTS on the template with ``vals``; returns (posterior DataTree, sampling seconds)."""
        if self.sampler == "nutpie":
            import nutpie

            compiled = self.compiled.with_data(**vals)
            t0 = time.perf_counter()
            idata = nutpie.sample(
                compiled, draws=draws, tune=tune, chains=1, seed=seed, progress_bar=False
            )
            return idata, time.perf_counter() - t0
        import pymc as pm

        for i, v in self.shared.items():
            v.set_value(vals[f"_c{i}"])
        with self.model:
            pm.set_data({k: v for k, v in vals.items() if not k.startswith("_c")})
            t0 = time.perf_counter()
            idata = pm.sample(
                draws=draws,
                tune=tune,
                chains=1,
                step=self.step,
                progressbar=False,
                compute_convergence_checks=False,
                random_seed=seed,
            )
        return idata, time.perf_counter() - t0


_TEMPLATES: dict = {}


def _fit(kind: str, network: str, build, draws: int, tune: int, seed: int, sampler: str):
    """NUTS on ``build(None)`` through a matching compiled template (compiled on a miss).

    ``build(1)`` and ``build(2)`` are probes of the model: the same data with one record more and
    ε × 1.001 (and other release noise), or only other release noise (N and ε fixed).
    Returns (posterior, sampling seconds without compilation).
    """
    model = build(None)
    templates = _TEMPLATES.setdefault((kind, network, sampler), [])
    for tpl in templates:
        vals = tpl.values(model)
        if vals is not None:
            return tpl.sample(vals, draws, tune, seed)
    t0 = time.perf_counter()
    try:  # shared N, scales and releases
        tpl = _Template(model, build(1), sampler)
    except ValueError:  # the structure depends on N or ε (Laplace modes): shared releases only
        tpl = _Template(model, build(2), sampler)
    templates.append(tpl)
    print(
        f"  compiled a {kind} template for {network} ({time.perf_counter() - t0:.0f} s)", flush=True
    )
    vals = tpl.values(model)
    assert vals is not None
    return tpl.sample(vals, draws, tune, seed)


class _Setting:
    """The fixed parts of one (network, N, ε, noise) setting."""

    def __init__(self, network: str, n: int, epsilon: float, noise: str):
        from pymc_rdp.bn.structure import parse_structure
        from pymc_rdp.datasets import load_network

        if noise not in NOISE_KINDS:
            raise ValueError(f"noise must be one of {NOISE_KINDS}, got {noise!r}")
        self.network, self.n, self.epsilon, self.noise = network, n, epsilon, noise
        self.key = setting_key(network, noise, epsilon, n)
        st, states = parse_structure(load_network(network))
        self.st = st
        self.cards = {v: len(states[v]) for v in st.order}
        self.structure = {v: list(st.parents[v]) for v in st.order}
        self.given = {v: list(range(self.cards[v])) for v in st.order}

    def _network(self, df, epsilon, release_seed, noise_aware):
        from pymc_rdp.models.bayesian_network import BayesianNetwork
        from pymc_rdp.privacy.mechanisms import UnsafeNoiseSeed

        return BayesianNetwork(self.structure, states=self.given).fit(
            df,
            mechanism=self.noise,
            epsilon=epsilon,
            order=5.0,
            noise_aware=noise_aware,
            # simulated data: reproducible (not private) noise keeps the study repeatable
            noise_source=UnsafeNoiseSeed(release_seed),
        )

    def _probe(self, df, rng, probe):
        """Data and budget of a probe model: another N and ε (1) or other release noise (2)."""
        if probe == 2:
            return df, self.epsilon
        return df.iloc[
            np.r_[np.arange(len(df)), rng.integers(len(df), size=1)]
        ], self.epsilon * 1.001

    def replicate(
        self, rep: int, seed: int, methods, draws: int, tune: int, samplers=None, chains: int = 2
    ) -> list[dict]:
        """One replicate: truth, data and releases from (seed, setting, rep); one record a method.

        ``samplers``: ``method -> "nutpie" | "pymc"`` for the NUTS methods (default: nutpie for
        the joint model, PyMC's NUTS for the per-family model), which run one chain;
        ``chains`` is the data-augmentation sampler's number of chains (``draws`` and ``tune``
        per chain). The NUTS methods fit the ``gaussian`` and ``laplace`` release kinds only;
        ``augmentation`` fits every kind (for ``gaussian``/``laplace`` the same mechanisms as
        ``discrete_gaussian``/``discrete_laplace``, with ``N`` declared public).
        """
        import pandas as pd

        from pymc_rdp.bn.structure import family_table, forward_sample
        from pymc_rdp.distributions.joint_likelihood import build_joint_model

        samplers = {"joint": "nutpie", "per-family": "pymc", **(samplers or {})}
        st, cards = self.st, self.cards
        data_rng = _rng(seed, self.key, rep, 0)
        truth = _prior_cpts(st, cards, data_rng)
        codes = forward_sample(st, truth, cards, self.n, data_rng)
        release_seed = int(data_rng.integers(2**31))
        df = pd.DataFrame({v: codes[v] for v in st.order})
        naive = None
        if any(m in NUTS_METHODS for m in methods):
            if self.noise not in ("gaussian", "laplace"):
                raise ValueError(
                    f"methods {NUTS_METHODS} fit the 'gaussian' and 'laplace' releases only, "
                    f"not {self.noise!r}"
                )
            # the naive baseline; its releases are the ones every method sees (same noise seed)
            naive = self._network(df, self.epsilon, release_seed, False)
        records = []
        for m in methods:
            info = {}
            rng = _rng(seed, self.key, rep, 1 + METHODS.index(m))
            t0 = time.perf_counter()
            idata = samp = None
            full = None  # every kept draw (TARP), where more than the N_RANK used for ranks
            if m == "augmentation":
                if self.noise in aug.KIND_MECHANISM:
                    setting = self
                else:  # the NUTS study's kinds are BayesianNetwork.fit's discrete mechanisms
                    setting = _Setting(self.network, self.n, self.epsilon, f"discrete_{self.noise}")
                full, info = aug.fit_augmentation(
                    setting, df, release_seed, int(rng.integers(2**31)), draws, tune, chains
                )
                samp = info.pop("sample_s")
                post = {v: _thin(full[v], N_RANK) for v in st.order}
            elif m == "non-private":
                post = {}
                for v in st.order:
                    a = family_table(codes, v, st.parents[v], cards) + 1.0
                    g = rng.standard_gamma(np.broadcast_to(a, (N_RANK, *a.shape)))
                    post[v] = g / g.sum(axis=-1, keepdims=True)
            elif m == "naive":
                post = {v: naive.cpts[v][None] for v in st.order}
            else:
                nuts_seed = int(rng.integers(2**31))
                if m == "joint":

                    def build(probe, naive=naive, rng=rng):
                        bn = naive
                        if probe is not None:
                            bn = self._network(
                                *self._probe(df, rng, probe), release_seed + 1, False
                            )
                        return build_joint_model(
                            st,
                            cards,
                            bn.releases,
                            n=float(bn.n_records),
                            alpha0=1.0,
                        )

                else:

                    def build(probe, rng=rng, info=info):
                        if probe is None:
                            bn = self._network(df, self.epsilon, release_seed, True)
                            for v in st.order:  # the same releases as the other methods
                                assert np.array_equal(
                                    np.asarray(bn.releases[v].values),
                                    np.asarray(naive.releases[v].values),
                                )
                        else:
                            bn = self._network(*self._probe(df, rng, probe), release_seed + 1, True)
                        if probe is None:
                            names = [rv.name for rv in bn.model.free_RVs]
                            info["family_model"] = (
                                "family cells"
                                if any(x.endswith("_family") for x in names)
                                else "CPTs and parent weights"
                            )
                        return bn.model

                idata, samp = _fit(m, self.network, build, draws, tune, nuts_seed, samplers[m])
                post = {v: _thin(_cpt_draws(idata, v), N_RANK) for v in st.order}
            wall = time.perf_counter() - t0
            s = _summaries(post, truth, st)
            est = {
                v: post[v].mean(axis=0) / post[v].mean(axis=0).sum(-1, keepdims=True)
                for v in st.order
            }
            tarp = None
            if m != "naive":
                draws_all = full if full is not None else post
                tarp = aug.tarp_record(draws_all, truth, st, cards, _rng(seed, self.key, rep, 50))
            rec = {
                "key": self.key,
                "network": self.network,
                "noise": self.noise,
                "epsilon": self.epsilon,
                "n": self.n,
                "rep": rep,
                "method": m,
                "seed": seed,
                "draws": draws if idata is not None or full is not None else None,
                "tune": tune if idata is not None or full is not None else None,
                "n_rank": N_RANK,
                "sampler": (
                    samplers[m]
                    if idata is not None
                    else "data_augmentation"
                    if full is not None
                    else None
                ),
                "family_model": info.get("family_model") if m == "per-family" else None,
                "kl": float(np.mean(s["kl"])),
                "heldout": _heldout(st, cards, truth, est, _rng(seed, self.key, rep, 99)),
                "wall_s": wall,
                "sample_s": samp,
                "min_ess": None,
                "ess_s": None,
            }
            if m != "naive":
                rec["cover"] = {str(q): s["cover"][q] for q in LEVELS}
                rec["ranks"] = s["ranks"]
            if idata is not None:
                rec["min_ess"] = _min_ess(idata)
                rec["ess_s"] = rec["min_ess"] / samp
            if full is not None:
                rec["chains"] = chains
                rec["min_ess"] = info["min_ess"]
                rec["ess_s"] = info["min_ess"] / samp
                rec["max_rhat"] = info["max_rhat"]
                rec["moves"] = info["moves"]
                rec["accept"] = info["accept"]
            if tarp is not None:
                rec["tarp"] = tarp
            records.append(rec)
        return records


def _cpt_draws(idata, node: str) -> np.ndarray:
    """Draws of ``node``'s CPT, (draws, configurations, states), chains stacked."""
    arr = np.asarray(idata["posterior"][f"{node}_cpt"].to_numpy(), dtype=np.float64)
    return arr.reshape(-1, arr.shape[-2], arr.shape[-1])


# ----------------------------------------------------------------------------- aggregation


def run_setting(
    network, n, epsilon, noise, replicates, draws, tune, seed, methods=METHODS, samplers=None
):
    """All replicates of one (network, N, ε, noise) setting; returns (records, L)."""
    setting = _Setting(network, n, epsilon, noise)
    records = []
    for rep in range(replicates):
        records.extend(setting.replicate(rep, seed, methods, draws, tune, samplers))
    return records, N_RANK


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
    the last column is what ``replicates`` replicates of all 12 (N, ε) settings would take.
    """
    by = {}
    for r in records:
        if r["sample_s"] is not None:
            by.setdefault((r["network"], r["noise"], r["method"]), []).append(r)
    lines = [
        "| network | noise | method | fits | sampling s / fit | wall s / fit "
        f"| {replicates} × 12 settings, hours |",
        "|---" * 7 + "|",
    ]
    for (net, noise, m), recs in sorted(
        by.items(), key=lambda kv: _sort_key(f"{kv[0][0]}|{kv[0][1]}|0|0")
    ):
        samp = float(np.mean([r["sample_s"] for r in recs]))
        wall = float(np.mean([r["wall_s"] for r in recs]))
        lines.append(
            f"| {net} | {noise} | {m} | {len(recs)} | {samp:.1f} | {wall:.1f} | "
            f"{wall * replicates * 12 / 3600:.1f} |"
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


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description="SBC of private Bayesian-network posteriors")
    p.add_argument("--networks", nargs="+", default=["asia"])
    p.add_argument("--ns", nargs="+", type=int, default=[100, 1000, 10000])
    p.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0])
    p.add_argument("--noise", nargs="+", default=["gaussian"], choices=list(NOISE_KINDS))
    p.add_argument("--replicates", type=int, default=5)
    p.add_argument(
        "--first-replicate",
        type=int,
        default=0,
        help="index of the first replicate (replicates are seeded by their index)",
    )
    p.add_argument(
        "--chains",
        type=int,
        default=2,
        help="chains of the data-augmentation sampler (the NUTS methods run one)",
    )
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--tune", type=int, default=200)
    p.add_argument("--joint-sampler", default="nutpie", choices=["pymc", "nutpie"])
    p.add_argument("--family-sampler", default="pymc", choices=["pymc", "nutpie"])
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    p.add_argument("--seed", type=int, default=20261129)
    p.add_argument(
        "--out", default=None, help="append every finished record to this JSON-lines file"
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="skip the (setting, replicate, method) already in --out",
    )
    p.add_argument(
        "--budget-minutes",
        type=float,
        default=None,
        help="start no new replicate after this many minutes",
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="no fitting: the table and figures from --from-json files",
    )
    p.add_argument("--from-json", nargs="+", default=None, help="JSON-lines files for --report")
    p.add_argument("--json", default=None, help="also write the summary table to this JSON file")
    p.add_argument("--figures-dir", default=str(ROOT / "docs" / "figures"))
    p.add_argument("--no-figures", action="store_true")
    p.add_argument("--figure-prefix", default="calibration", help="file names of the figures")
    p.add_argument("--tolerance", type=float, default=0.08, help="coverage target: nominal ± this")
    args = p.parse_args(argv)
    figdir = None if args.no_figures else Path(args.figures_dir)
    if args.report:
        results = report(
            load_records(args.from_json or [args.out]), figdir, args.figure_prefix, args.tolerance
        )
        if args.json:
            Path(args.json).write_text(json.dumps({"results": results}, indent=1))
        return results

    warnings.filterwarnings("ignore")
    for name in ("pymc", "pymc.sampling.mcmc", "pymc.stats.convergence"):
        logging.getLogger(name).setLevel(logging.ERROR)
    done = set()
    if args.resume and args.out:
        done = {(r["key"], r["rep"], r["method"]) for r in load_records([args.out])}
    start = time.perf_counter()
    settings = {}
    records = []
    # replicate-major: a stopped run leaves every setting with about the same number of replicates
    for rep in range(args.first_replicate, args.first_replicate + args.replicates):
        for net in args.networks:
            for noise in args.noise:
                for eps in args.epsilons:
                    for n in args.ns:
                        key = setting_key(net, noise, eps, n)
                        todo = [m for m in args.methods if (key, rep, m) not in done]
                        if not todo:
                            continue
                        if (
                            args.budget_minutes is not None
                            and time.perf_counter() - start > 60 * args.budget_minutes
                        ):
                            print("budget spent: stopping", flush=True)
                            return _finish(args, records, figdir)
                        if key not in settings:
                            settings[key] = _Setting(net, n, eps, noise)
                        t0 = time.perf_counter()
                        recs = settings[key].replicate(
                            rep,
                            args.seed,
                            todo,
                            args.draws,
                            args.tune,
                            {"joint": args.joint_sampler, "per-family": args.family_sampler},
                            chains=args.chains,
                        )
                        records.extend(recs)
                        if args.out:
                            with open(args.out, "a") as fh:
                                for r in recs:
                                    fh.write(json.dumps(r) + "\n")
                        walls = " ".join(f"{r['method']}={r['wall_s']:.1f}s" for r in recs)
                        print(
                            f"{key} rep {rep} ({time.perf_counter() - t0:.0f} s: {walls})",
                            flush=True,
                        )
    return _finish(args, records, figdir)


def _finish(args, records, figdir) -> dict:
    if args.out:  # the table of everything in the file, not only this run's part
        records = load_records([args.out])
    results = report(records, figdir, args.figure_prefix, args.tolerance)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=1))
    return results


if __name__ == "__main__":
    main()
