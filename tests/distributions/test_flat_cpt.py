"""The flat CPT variable: row-wise Dirichlet log-density and its row-wise simplex transform."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pymc_rdp.distributions.flat_cpt import flat_cpt


def test_logp_is_the_sum_of_the_rows_dirichlet_densities() -> None:
    import pymc as pm

    alpha = np.array([[1.0, 2.0, 0.5], [3.0, 1.0, 1.5]])
    value = np.array([0.2, 0.5, 0.3, 0.6, 0.1, 0.3])
    with pm.Model(coords={"cell": [str(i) for i in range(6)]}) as model:
        x = flat_cpt("x", alpha, dims="cell")
    exact = sum(stats.dirichlet(alpha[c]).logpdf(value.reshape(2, 3)[c]) for c in range(2))
    tr = model.rvs_to_transforms[x]
    free = tr.forward(value).eval()
    assert free.shape == (4,)  # (rows · (K − 1)) free coordinates
    np.testing.assert_allclose(tr.backward(free).eval(), value, rtol=1e-12)
    logp = model.compile_logp(jacobian=False)({model.rvs_to_values[x].name: free})
    np.testing.assert_allclose(logp, exact, rtol=1e-10)
    draws = pm.draw(x, draws=200, random_seed=1)
    assert draws.shape == (200, 6)
    np.testing.assert_allclose(draws.reshape(200, 2, 3).sum(axis=-1), 1.0, atol=1e-12)


@pytest.mark.parametrize("alpha", [np.ones(3), np.array([[1.0, -1.0]]), np.zeros((2, 2))])
def test_bad_alpha_is_refused(alpha) -> None:
    import pymc as pm

    with pm.Model(), pytest.raises(ValueError, match="alpha"):
        flat_cpt("x", alpha, dims=None)
