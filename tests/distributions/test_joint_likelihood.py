"""The joint (linear-query) likelihood of a Bayesian network's noisy family tables.

Oracles: brute-force enumeration of the full joint table with an explicit query matrix ``Q``
(numpy, written independently of the package's contraction code), scipy's multivariate normal
density, and pgmpy's variable elimination for pairwise marginals of the classic networks.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from scipy import stats

from pymc_rdp.distributions.joint_likelihood import (
    build_joint_model,
    family_layout,
    family_moments,
    joint_noisy_counts_logp,
)

SMALL = {"a": [], "b": ["a"], "c": ["a", "b"], "d": ["c"], "e": ["b", "d"]}
SMALL_CARDS = {"a": 2, "b": 3, "c": 2, "d": 3, "e": 2}


def _random_cpts(structure, cards, rng, order=None):
    order = order or list(structure)
    out = {}
    for v in order:
        rows = int(np.prod([cards[p] for p in structure[v]], dtype=np.int64))
        out[v] = rng.dirichlet(np.ones(cards[v]), size=rows)
    return out


def _brute_force(structure, cards, cpts):
    """Explicit Q (cells x joint states) and p over the full joint; family order = layout order."""
    lay = family_layout(structure, cards)
    order = lay.structure.order
    q_cols, probs = [], []
    for x in itertools.product(*[range(cards[v]) for v in order]):
        xs = dict(zip(order, x, strict=True))
        prob = 1.0
        col = np.zeros(lay.n_cells)
        for k, v in enumerate(order):
            config = 0
            for par in structure[v]:
                config = config * cards[par] + xs[par]
            prob *= cpts[v][config, xs[v]]
            col[lay.offsets[k] + config * cards[v] + xs[v]] = 1.0
        q_cols.append(col)
        probs.append(prob)
    q = np.array(q_cols).T
    p = np.array(probs)
    return q @ p, q @ np.diag(p) @ q.T


OTHERS = [
    ({"a": []}, {"a": 3}),
    # disconnected: two chains and an isolated node
    ({"a": [], "b": ["a"], "c": [], "d": ["c"], "e": []}, {"a": 2, "b": 3, "c": 2, "d": 2, "e": 3}),
    # a loop in the moral graph (two parents shared by two children)
    (
        {"a": [], "b": [], "c": ["a", "b"], "d": ["b", "a"], "e": ["c", "d"]},
        {"a": 2, "b": 3, "c": 2, "d": 2, "e": 3},
    ),
]


@pytest.mark.parametrize("method", ["enumeration", "junction_tree"])
@pytest.mark.parametrize("case", range(len(OTHERS) + 1))
def test_moments_equal_brute_force(method, case, rng):
    structure, cards = (SMALL, SMALL_CARDS) if case == 0 else OTHERS[case - 1]
    cpts = _random_cpts(structure, cards, rng)
    mean, second = family_moments(structure, cards, cpts, method=method)
    ref_mean, ref_second = _brute_force(structure, cards, cpts)
    np.testing.assert_allclose(mean, ref_mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(second, ref_second, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["enumeration", "junction_tree"])
@pytest.mark.parametrize("graph", ["ops", "tape"])
def test_symbolic_moments_and_gradient(method, graph, rng):
    import pytensor
    import pytensor.tensor as pt
    from pytensor.compile.mode import Mode

    lay = family_layout(SMALL, SMALL_CARDS)
    order = lay.structure.order
    cpts = _random_cpts(SMALL, SMALL_CARDS, rng)
    sym = {v: pt.matrix(v, dtype="float64", shape=cpts[v].shape) for v in order}
    mean, second = family_moments(SMALL, SMALL_CARDS, sym, method=method, graph=graph)
    w2 = rng.normal(size=(lay.n_cells, lay.n_cells))
    w1 = rng.normal(size=lay.n_cells)
    loss = pt.sum(second * w2) + pt.sum(mean * w1)
    # the Python linker: this checks values, not the (slow to compile) numba build of "ops"
    f = pytensor.function(
        list(sym.values()),
        [mean, second, *pytensor.grad(loss, list(sym.values()))],
        mode=Mode(linker="py", optimizer="fast_compile"),
    )
    args = [cpts[v] for v in order]
    m, s, *grads = f(*args)
    ref_mean, ref_second = _brute_force(SMALL, SMALL_CARDS, cpts)
    np.testing.assert_allclose(m, ref_mean, atol=1e-12)
    np.testing.assert_allclose(s, ref_second, atol=1e-12)
    # central finite differences of the same loss through the brute-force oracle
    for k, v in enumerate(order):
        num = np.zeros_like(cpts[v])
        for idx in np.ndindex(*cpts[v].shape):
            h = 1e-6
            plus = {u: t.copy() for u, t in cpts.items()}
            minus = {u: t.copy() for u, t in cpts.items()}
            plus[v][idx] += h
            minus[v][idx] -= h
            mp, sp = _brute_force(SMALL, SMALL_CARDS, plus)
            mm, sm = _brute_force(SMALL, SMALL_CARDS, minus)
            num[idx] = (np.sum(sp * w2) + mp @ w1 - np.sum(sm * w2) - mm @ w1) / (2 * h)
        np.testing.assert_allclose(grads[k], num, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("sigma_kind", ["scalar", "family", "cell"])
def test_logp_equals_scipy(sigma_kind, rng):
    lay = family_layout(SMALL, SMALL_CARDS)
    cpts = _random_cpts(SMALL, SMALL_CARDS, rng)
    mean, second = _brute_force(SMALL, SMALL_CARDS, cpts)
    n = 500.0
    sigma = {
        "scalar": 3.0,
        "family": rng.uniform(1.0, 5.0, size=lay.n_families),
        "cell": rng.uniform(1.0, 5.0, size=lay.n_cells),
    }[sigma_kind]
    var = (
        np.broadcast_to(
            np.repeat(sigma, np.diff(lay.offsets)) if sigma_kind == "family" else sigma,
            (lay.n_cells,),
        )
        ** 2
    )
    y = n * mean + rng.normal(0, np.sqrt(var))
    cov = n * (second - np.outer(mean, mean)) + np.diag(var)
    ref = stats.multivariate_normal(n * mean, cov).logpdf(y)
    got = joint_noisy_counts_logp(y, n, SMALL, SMALL_CARDS, cpts, sigma=sigma).eval()
    assert got == pytest.approx(ref, abs=1e-9)


def test_logp_symbolic_n_and_noise_variance(rng):
    import pytensor
    import pytensor.tensor as pt

    lay = family_layout(SMALL, SMALL_CARDS)
    cpts = _random_cpts(SMALL, SMALL_CARDS, rng)
    mean, second = _brute_force(SMALL, SMALL_CARDS, cpts)
    n_sym = pt.scalar("n", dtype="float64")
    omega = pt.vector("omega", dtype="float64", shape=(lay.n_cells,))
    y = rng.normal(200 * mean, 2.0)
    logp = joint_noisy_counts_logp(y, n_sym, SMALL, SMALL_CARDS, cpts, noise_variance=omega)
    f = pytensor.function([n_sym, omega], logp)
    om = rng.uniform(0.5, 8.0, size=lay.n_cells)
    for n in (150.0, 200.0, 260.5):
        cov = n * (second - np.outer(mean, mean)) + np.diag(om)
        ref = stats.multivariate_normal(n * mean, cov).logpdf(y)
        assert f(n, om) == pytest.approx(ref, abs=1e-9)


def _network_cpts(name):
    """CPTs of a bundled network, rows in the parsed structure's parent order."""
    from pymc_rdp.bn.structure import parse_structure
    from pymc_rdp.datasets import load_network

    net = load_network(name)
    st, states = parse_structure(net)
    cards = {v: len(states[v]) for v in st.order}
    cpts = {}
    for v in st.order:
        cpd = net.get_cpds(v)
        evidence = list(cpd.variables[1:])
        vals = np.asarray(cpd.values, dtype=np.float64)
        vals = np.transpose(vals, [0, *[1 + evidence.index(p) for p in st.parents[v]]])
        table = vals.reshape(cards[v], -1).T
        cpts[v] = table / table.sum(axis=1, keepdims=True)
    return net, st, cards, cpts


@pytest.mark.filterwarnings("ignore:.*StructureScore.*:FutureWarning")
@pytest.mark.parametrize("name", ["asia", "sachs", "child", "alarm"])
def test_classic_networks_build_and_agree_with_pgmpy(name):
    import pytensor
    import pytensor.tensor as pt
    from pgmpy.inference import VariableElimination

    net, st, cards, cpts = _network_cpts(name)
    lay = family_layout(st, cards)
    mean, second = family_moments(st, cards, cpts)
    # block sums: sum_w P(F_a=u, F_b=w) = P(F_a=u); every block sums to one
    off = lay.offsets
    for a in range(lay.n_families):
        for b in range(lay.n_families):
            block = second[off[a] : off[a + 1], off[b] : off[b + 1]]
            np.testing.assert_allclose(block.sum(axis=1), mean[off[a] : off[a + 1]], atol=1e-12)
    # one distant pair against pgmpy's variable elimination (with normalised CPDs)
    for cpd in net.get_cpds():
        cpd.normalize()
    a, b = 0, lay.n_families - 1
    union = lay.unions[lay.pairs.index((a, b))]
    query = VariableElimination(net).query(list(union), joint=True, show_progress=False)
    ref = np.transpose(query.values, [query.variables.index(u) for u in union])
    fa, fb = lay.families[a], lay.families[b]
    block = second[off[a] : off[a + 1], off[b] : off[b + 1]]
    for i, xa in enumerate(itertools.product(*[range(cards[u]) for u in fa])):
        for j, xb in enumerate(itertools.product(*[range(cards[u]) for u in fb])):
            xs = dict(zip(fa, xa, strict=True))
            if any(u in xs and xs[u] != s for u, s in zip(fb, xb, strict=True)):
                assert block[i, j] == 0.0
                continue
            xs.update(zip(fb, xb, strict=True))
            assert block[i, j] == pytest.approx(ref[tuple(xs[u] for u in union)], abs=1e-12)
    # the symbolic log-likelihood and its gradient compile quickly and match numpy + scipy
    sym = {v: pt.matrix(v, dtype="float64", shape=cpts[v].shape) for v in st.order}
    n, sigma = 10_000.0, 20.0
    y = n * mean + np.random.default_rng(3).normal(0, sigma, size=lay.n_cells)
    start = time.perf_counter()
    logp = joint_noisy_counts_logp(y, n, st, cards, sym, sigma=sigma, layout=lay)
    f = pytensor.function(list(sym.values()), [logp, *pytensor.grad(logp, list(sym.values()))])
    elapsed = time.perf_counter() - start
    assert elapsed < 60.0
    got = f(*[cpts[v] for v in st.order])[0]
    cov = n * (second - np.outer(mean, mean)) + sigma**2 * np.eye(lay.n_cells)
    assert got == pytest.approx(stats.multivariate_normal(n * mean, cov).logpdf(y), abs=1e-6)


def _released_tables(structure, cards, cpts, n, sigma, rng, noise="gaussian"):
    from pymc_rdp.bn.structure import family_table, forward_sample, parse_structure

    st, _ = parse_structure(structure)
    codes = forward_sample(st, cpts, cards, n, rng)
    out = {}
    for v in st.order:
        table = family_table(codes, v, st.parents[v], cards).astype(np.float64)
        if noise == "gaussian":
            out[v] = table + rng.normal(0, sigma, size=table.shape)
        else:
            out[v] = table + rng.laplace(0, sigma, size=table.shape)
    return out


def test_model_variants_build(rng):
    import pymc as pm

    cpts = _random_cpts(SMALL, SMALL_CARDS, rng)
    lay = family_layout(SMALL, SMALL_CARDS)
    releases = _released_tables(SMALL, SMALL_CARDS, cpts, 300, 2.0, rng)
    m1 = build_joint_model(SMALL, SMALL_CARDS, releases, n=None, noise="gaussian", scale=2.0)
    assert "n_records" in m1.named_vars
    m2 = build_joint_model(SMALL, SMALL_CARDS, releases, n="released", noise="laplace", scale=1.5)
    omega = m2["releases_omega"]
    assert omega.type.shape == (lay.n_cells,)
    for model in (m1, m2):
        point = model.initial_point()
        # values, not the numba build, are checked here: the quick-to-compile Python linker
        assert np.isfinite(model.compile_logp(mode="FAST_COMPILE")(point))
        assert np.all(np.isfinite(model.compile_dlogp(mode="FAST_COMPILE")(point)))
    with pytest.raises(ValueError, match="releases"):
        build_joint_model(
            SMALL, SMALL_CARDS, {"a": releases["a"]}, n=300, noise="gaussian", scale=2.0
        )
    with pytest.raises(ValueError, match="noise"):
        build_joint_model(SMALL, SMALL_CARDS, releases, n=300)
    _ = pm  # imported for the model context


def test_bad_input(rng):
    cpts = _random_cpts(SMALL, SMALL_CARDS, rng)
    with pytest.raises(ValueError, match="cardinalities"):
        family_moments(SMALL, {"a": 2}, cpts)
    with pytest.raises(ValueError, match="cardinalities"):
        family_layout(SMALL, {**SMALL_CARDS, "a": 0})
    with pytest.raises(TypeError, match="cardinalities"):
        family_layout(SMALL, [2, 3])
    bad = dict(cpts)
    bad["c"] = bad["c"][:2]
    with pytest.raises(ValueError, match=r"cpts\['c'\]"):
        family_moments(SMALL, SMALL_CARDS, bad)
    with pytest.raises(ValueError, match="cpts has no table"):
        family_moments(SMALL, SMALL_CARDS, {"a": cpts["a"]})
    with pytest.raises(ValueError, match="method"):
        family_moments(SMALL, SMALL_CARDS, cpts, method="magic")
    with pytest.raises(ValueError, match="cycle"):
        family_layout({"a": ["b"], "b": ["a"]}, {"a": 2, "b": 2})
    lay = family_layout(SMALL, SMALL_CARDS)
    y = np.zeros(lay.n_cells)
    with pytest.raises(ValueError, match="sigma"):
        joint_noisy_counts_logp(y, 10, SMALL, SMALL_CARDS, cpts, sigma=np.ones(3))
    with pytest.raises(ValueError, match="sigma"):
        joint_noisy_counts_logp(y, 10, SMALL, SMALL_CARDS, cpts, sigma=-1.0)
    with pytest.raises(ValueError, match="y must have shape"):
        joint_noisy_counts_logp(y[:-1], 10, SMALL, SMALL_CARDS, cpts, sigma=1.0)
    with pytest.raises(ValueError, match="n must be"):
        joint_noisy_counts_logp(y, 0, SMALL, SMALL_CARDS, cpts, sigma=1.0)
    with pytest.raises(ValueError, match="exactly one"):
        joint_noisy_counts_logp(y, 10, SMALL, SMALL_CARDS, cpts)


def _study():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "experiments" / "calibration_study.py"
    spec = importlib.util.spec_from_file_location("calibration_study", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
def test_short_coverage_run_on_asia(tmp_path):
    """NUTS on asia's joint model: two SBC replicates (N = 1000, ε = 1), wide tolerances.

    Also checks the JSON-lines output, resuming and the report from saved results.
    """
    study = _study()
    out = tmp_path / "results.jsonl"
    args = [
        "--networks", "asia", "--ns", "1000", "--epsilons", "1", "--replicates", "2",
        "--draws", "150", "--tune", "150", "--seed", "7", "--methods", "joint", "non-private",
        "--joint-sampler", "pymc", "--out", str(out), "--no-figures",
    ]  # fmt: skip
    results = study.main(args)
    rows = results["asia|gaussian|1|1000"]
    for method in ("joint", "non-private"):
        assert rows[method]["replicates"] == 2
        assert 0.55 <= rows[method]["cov80"] <= 1.0
        assert rows[method]["cov95"] >= 0.75
        assert rows[method]["kl"] < 0.05
        assert rows[method]["se80"] is not None
    assert rows["joint"]["ess_s"] > 0
    assert len(out.read_text().splitlines()) == 4
    # everything is in the file already: a resumed run fits nothing and reports the same
    assert study.main([*args, "--resume"]) == results
    assert len(out.read_text().splitlines()) == 4
    again = study.main(["--report", "--from-json", str(out), "--no-figures"])
    assert again == results
    assert "| asia | gaussian | 1 | 1,000 | joint | 2 |" in study.markdown_table(again)


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
def test_short_coverage_run_per_family_on_asia(tmp_path):
    """NUTS on asia's per-family model: two replicates through one compiled template.

    Each build of that model makes a new CustomDist class and stores its CPT draws flat; the
    template must still match the second replicate and the draws must come back as tables.
    """
    study = _study()
    args = [
        "--networks", "asia", "--ns", "1000", "--epsilons", "1", "--replicates", "2",
        "--draws", "150", "--tune", "150", "--seed", "7", "--methods", "per-family",
        "--family-sampler", "pymc", "--out", str(tmp_path / "results.jsonl"), "--no-figures",
    ]  # fmt: skip
    row = study.main(args)["asia|gaussian|1|1000"]["per-family"]
    assert row["replicates"] == 2
    assert 0.55 <= row["cov80"] <= 1.0
    assert row["cov95"] >= 0.75
    assert row["kl"] < 0.05


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
def test_full_calibration_study(tmp_path):
    """The full study: 100 replicates per setting; noise-aware joint coverage within ±8 points."""
    study = _study()
    results = study.main(
        [
            "--replicates", "100",
            "--networks", "asia", "sachs", "child",
            "--noise", "gaussian", "laplace",
            "--ns", "100", "1000", "10000",
            "--epsilons", "0.1", "1",
            "--out", str(tmp_path / "calibration_results.jsonl"),
            "--no-figures",
        ]
    )  # fmt: skip
    assert len(results) == 36
    for rows in results.values():
        assert rows["joint"]["replicates"] == 100
        for q in (50, 80, 95):
            assert abs(rows["joint"][f"cov{q}"] - q / 100) <= 0.08


def test_analytic_mvnormal_gradient_matches_autodiff(rng):
    import pytensor
    import pytensor.tensor as pt
    from pytensor.compile.mode import Mode

    from pymc_rdp.distributions.joint_likelihood import mvnormal_logp_chol

    m = 6
    a = rng.normal(size=(m, m))
    y = pt.vector("y", shape=(m,))
    mu = pt.vector("mu", shape=(m,))
    b = pt.matrix("b", shape=(m, m))
    cov = b @ b.T + pt.eye(m)  # symmetric by construction, as in the joint model
    args = (np.arange(m) * 0.3, np.ones(m) * 0.1, a)
    outs = []
    for analytic in (True, False):
        logp = mvnormal_logp_chol(y, mu, cov, analytic_gradient=analytic)
        f = pytensor.function(
            [y, mu, b],
            [logp, *pytensor.grad(logp, [y, mu, b])],
            mode=Mode(linker="py", optimizer="fast_compile"),
        )
        outs.append(f(*args))
    y0, mu0, _ = args
    ref = stats.multivariate_normal(mu0, a @ a.T + np.eye(m)).logpdf(y0)
    assert outs[0][0] == pytest.approx(ref, abs=1e-10)
    for got, want in zip(outs[0], outs[1], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)
    # a covariance that is not positive definite gives -inf, not an exception
    bad = pytensor.function([y, mu, b], mvnormal_logp_chol(y, mu, b))
    assert bad(y0, mu0, -np.eye(m)) == -np.inf


# ------------------------------------------------------------------ the observed private node


def _potential_model(structure, cards, releases, n, sigma=None, b=None, method="enumeration"):
    """The joint model written with the likelihood as a ``pm.Potential`` (the reference form)."""
    import pymc as pm

    lay = family_layout(structure, cards)
    order = lay.structure.order
    y = np.concatenate([np.asarray(releases[v], dtype=np.float64).reshape(-1) for v in order])
    with pm.Model() as model:
        theta = {}
        for v, fam in zip(order, lay.families, strict=True):
            shape = (int(np.prod([cards[u] for u in fam[:-1]])), cards[v])
            theta[v] = pm.Dirichlet(f"{v}_cpt", a=np.ones(shape), shape=shape)
        data = pm.Data("releases", y)
        per_cell = np.diff(lay.offsets)
        if sigma is not None:
            kw = {"sigma": np.repeat(np.full(lay.n_families, sigma), per_cell)}
        else:
            scale = 2.0 * np.repeat(np.full(lay.n_families, b), per_cell) ** 2
            kw = {"noise_variance": pm.Exponential("releases_omega", scale=scale, shape=y.shape)}
        logp = joint_noisy_counts_logp(
            data, n, lay.structure, lay.cards, theta, method=method, layout=lay, **kw
        )
        pm.Potential("joint_releases", logp)
    return model


@pytest.mark.parametrize(
    ("noise", "method"), [("gaussian", "enumeration"), ("laplace", "junction_tree")]
)
def test_private_node_logp_equals_the_potential(noise, method, rng):
    from pymc_rdp.distributions.joint_likelihood import JointReleasesRV

    cpts = _random_cpts(SMALL, SMALL_CARDS, rng)
    releases = _released_tables(SMALL, SMALL_CARDS, cpts, 300, 2.0, rng, noise=noise)
    model = build_joint_model(
        SMALL, SMALL_CARDS, releases, n=300, noise=noise, scale=2.0, method=method
    )
    node = model["joint_releases"]
    assert [v.name for v in model.observed_RVs] == ["joint_releases"] and not model.potentials
    assert isinstance(node.owner.op, JointReleasesRV)
    kw = {"sigma": 2.0} if noise == "gaussian" else {"b": 2.0}
    ref = _potential_model(SMALL, SMALL_CARDS, releases, 300.0, method=method, **kw)
    fast = {"mode": "FAST_COMPILE"}
    for seed in range(2):
        point = {
            k: v + np.random.default_rng(seed).normal(0, 0.3, size=np.shape(v))
            for k, v in model.initial_point().items()
        }
        got = model.compile_logp(**fast)(point)
        want = ref.compile_logp(**fast)(point)
        assert np.isfinite(want) and got == pytest.approx(want, rel=1e-12)
        np.testing.assert_allclose(
            model.compile_dlogp(**fast)(point), ref.compile_dlogp(**fast)(point), rtol=1e-10
        )


def _joint_fit(mechanism="gaussian"):
    """A BayesianNetwork fitted with the joint noise model (discrete Gaussian/Laplace releases)."""
    import pandas as pd

    from pymc_rdp.models.bayesian_network import BayesianNetwork
    from pymc_rdp.privacy.mechanisms import UnsafeNoiseSeed

    rng = np.random.default_rng(4)
    structure = {"a": [], "b": ["a"], "c": ["a", "b"]}
    df = pd.DataFrame({v: rng.integers(0, 2, size=300) for v in structure})
    return BayesianNetwork(structure, states={v: [0, 1] for v in structure}).fit(
        df,
        mechanism=mechanism,
        epsilon=2.0,
        order=5.0,
        noise_source=UnsafeNoiseSeed(1),
        noise_model="joint",
    )


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_ledger_lists_every_release_of_a_joint_fit(mechanism):
    import pymc_rdp as pmr

    bn = _joint_fit(mechanism)
    (node,) = pmr.ledger(bn.model)
    assert node["name"] == "joint_releases" and node["observed"] is True
    assert node["kind"] == "joint_releases" and node["method"] == "enumeration"
    assert node["noise"] == ("gaussian" if mechanism == "gaussian" else "laplace")
    order = list(bn.structure.order)
    assert [r["node"] for r in node["releases"]] == order
    for r in node["releases"]:
        release = bn.releases[r["node"]]
        assert r["tag"] == release.tag == f"bn:{r['node']}"
        assert r["mechanism"] == release.mechanism.to_dict()
        assert r["mechanism"]["name"] == f"discrete_{mechanism}"
        assert r["neighbours"] == release.neighbours
        assert r["entry"] == {k: v for k, v in release.entry.items() if k != "curve"}
    # one ledger entry per release charged by the accountant, with the same tags
    assert sorted(e.tag for e in bn.accountant.ledger) == sorted(f"bn:{v}" for v in order)
    # model transforms keep the record on the Op
    assert pmr.ledger(bn.model.copy()) == [node]


def test_forward_draws_of_the_joint_node_are_refused():
    import pymc as pm

    from pymc_rdp.distributions import RefusedDrawError

    bn = _joint_fit()
    with pytest.raises(RefusedDrawError, match=r"joint likelihood 'joint_releases'.*Nothing was"):
        pm.sample_prior_predictive(draws=5, model=bn.model, random_seed=1)
    with pytest.raises(RefusedDrawError, match="forward draw"):
        pm.draw(bn.model["joint_releases"], random_seed=1)
    # the priors of the CPTs still draw
    prior = pm.sample_prior_predictive(draws=5, model=bn.model, var_names=["a_cpt"])
    assert prior["prior"]["a_cpt"].shape[:2] == (1, 5)
    with pytest.raises(ValueError, match="observed"):
        with pm.Model():
            from pymc_rdp.distributions.joint_likelihood import JointReleases

            JointReleases("y", 10.0, np.ones(2), {}, layout=None, method="enumeration", record="{}")


def test_known_noise_variance_is_a_constant_matrix(rng):
    # a known σ, even as a symbolic constant (as the network passes it), gives the noise
    # covariance as one constant: PyTensor would fold its AllocDiag by compiling C code
    import pytensor
    import pytensor.tensor as pt
    from pytensor.graph.basic import Constant
    from pytensor.graph.op import HasInnerGraph
    from pytensor.graph.traversal import apply_ancestors, graph_inputs

    lay = family_layout(SMALL, SMALL_CARDS)
    cpts = _random_cpts(SMALL, SMALL_CARDS, rng)
    sym = {v: pt.matrix(f"{v}_cpt", dtype="float64", shape=c.shape) for v, c in cpts.items()}
    mean, second = _brute_force(SMALL, SMALL_CARDS, cpts)
    y = 400.0 * mean + rng.normal(0, 3.0, lay.n_cells)
    sigma = pt.constant(np.array(3.0))
    logp = joint_noisy_counts_logp(y, 400.0, SMALL, SMALL_CARDS, sym, sigma=sigma)
    folded = [
        node
        for node in apply_ancestors([logp])
        if isinstance(node.op, HasInnerGraph)
        and all(isinstance(i, Constant) for i in graph_inputs(node.inputs))
    ]
    assert folded == []
    cov = 400.0 * (second - np.outer(mean, mean)) + 9.0 * np.eye(lay.n_cells)
    ref = stats.multivariate_normal(400.0 * mean, cov).logpdf(y)
    fn = pytensor.function(list(sym.values()), logp)
    assert fn(*cpts.values()) == pytest.approx(ref, abs=1e-9)
