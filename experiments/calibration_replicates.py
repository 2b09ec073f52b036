"""One replicate of a setting of the calibration study: truth, data, releases and every fit.

For one (network, N, ε, release kind) setting (:class:`Setting`), a replicate draws the CPT rows
from the prior ``Dirichlet(1)``, forward-samples ``N`` records, releases the family tables and
fits each method on the same releases (the methods and the record they produce are described in
``experiments/calibration_study.py``). The NUTS methods sample through the compiled templates of
``calibration_templates.py``; the data-augmentation method is ``calibration_augmentation.py``.
Every replicate is seeded by (seed, setting, replicate) alone. Loaded by its path, like its
siblings (:func:`_sibling`).
"""

from __future__ import annotations

import time
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


aug = _sibling("calibration_augmentation")
NOISE_KINDS = ("gaussian", "laplace", *aug.KIND_MECHANISM)
templates = _sibling("calibration_templates")


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


class Setting:
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
                    setting = Setting(self.network, self.n, self.epsilon, f"discrete_{self.noise}")
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

                idata, samp = templates.fit_nuts(
                    m, self.network, build, draws, tune, nuts_seed, samplers[m]
                )
                post = {v: _thin(cpt_draws(idata, v, cards[v]), N_RANK) for v in st.order}
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
                rec["row_moves"] = info["row_moves"]
                rec["accept"] = info["accept"]
            if tarp is not None:
                rec["tarp"] = tarp
            records.append(rec)
        return records


def cpt_draws(idata, node: str, states: int) -> np.ndarray:
    """Draws of ``node``'s CPT, (draws, configurations, states), chains stacked; the posterior
    holds it flat (one ``{node}_cell`` dim, configuration-major) or as (configurations, states)."""
    arr = np.asarray(idata["posterior"][f"{node}_cpt"].to_numpy(), dtype=np.float64)
    if arr.ndim == 3:
        return arr.reshape(-1, arr.shape[-1] // states, states)
    return arr.reshape(-1, arr.shape[-2], arr.shape[-1])


def run_setting(
    network, n, epsilon, noise, replicates, draws, tune, seed, methods=METHODS, samplers=None
):
    """All replicates of one (network, N, ε, noise) setting; returns (records, L)."""
    setting = Setting(network, n, epsilon, noise)
    records = []
    for rep in range(replicates):
        records.extend(setting.replicate(rep, seed, methods, draws, tune, samplers))
    return records, N_RANK
