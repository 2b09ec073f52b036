"""Noise for the Adult network's 7 family tables at (ε, δ) = (1, 1e-6): RDP vs the tight bound.

For each mechanism and neighbouring relation: the least common noise for which the 7-fold
composition meets (1, 1e-6) under the RDP conversion (``rdp.to_dp`` on the default orders) and
under the tightest valid bound (analytic Gaussian for Gaussian tables, dp-accounting's PLD for
Laplace tables), and the noise a ``BayesianNetwork.fit`` actually used (its accountant admits it).

Run:  python benchmarks/tight_calibration.py
"""

from __future__ import annotations

import numpy as np

from pymc_rdp.datasets import ADULT_DAG, adult_paper
from pymc_rdp.models.bayesian_network import BayesianNetwork
from pymc_rdp.privacy import rdp
from pymc_rdp.privacy.calibration import least_noise
from pymc_rdp.privacy.mechanisms import LaplaceMechanism
from pymc_rdp.privacy.tight_accounting import gaussian_sigma, planned_epsilon

EPS, DELTA, K = 1.0, 1e-6, 7
SENS = {"replace-one": (2.0, np.sqrt(2.0)), "add-remove": (1.0, 1.0)}


def main() -> None:
    o = rdp.DEFAULT_ORDERS
    frame = adult_paper("train")[list(ADULT_DAG)]
    print(f"Adult network, {K} tables, (ε, δ) = ({EPS:g}, {DELTA:g})")
    print(f"{'mechanism':9} {'neighbours':12} {'RDP':>10} {'tight':>10} {'ratio':>7} {'fit':>10}")
    for neighbours, (d1, d2) in SENS.items():
        s_rdp = least_noise(
            lambda s, d2=d2: rdp.to_dp(o, K * rdp.gaussian(o, s, d2), DELTA)[0] <= EPS, d2
        )
        s_tight = gaussian_sigma(EPS, DELTA, d2, count=K)
        b_rdp = least_noise(
            lambda b, d1=d1: rdp.to_dp(o, K * rdp.laplace(o, b, d1), DELTA)[0] <= EPS, d1
        )
        b_tight = least_noise(
            lambda b, d1=d1: planned_epsilon([(LaplaceMechanism(b, d1), K)], DELTA) <= EPS, d1
        )
        for name, a, b in (("gaussian", s_rdp, s_tight), ("laplace", b_rdp, b_tight)):
            # the noise does not depend on the data; the domain is read from it for brevity
            bn = BayesianNetwork(ADULT_DAG, states="from-data")
            bn.fit(
                frame,
                mechanism=name,
                epsilon=EPS,
                delta=DELTA,
                neighbours=neighbours,
                noise_aware=False,
            )
            used = bn.family_mechanism.noise
            print(
                f"{name:9} {neighbours:12} {a:10.4f} {b:10.4f} {b / a:7.4f} {used:10.4f}"
                f"   ε={bn.accountant.epsilon():.6f} ({bn.accountant.epsilon_and_method()[1]})"
            )


if __name__ == "__main__":
    main()
