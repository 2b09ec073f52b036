"""Compose a few private releases under one budget and print the ledger.

A small synthetic survey (age band, region, smoker) is released four ways:

1. the age-band histogram with Gaussian noise calibrated to (ε, δ) = (0.5, 1e-6);
2. the number of smokers with Laplace noise calibrated to ε = 0.3 at order 8;
3. every smoker bit through randomized response calibrated to ε = 0.5 at order 8 (one record,
   one bit: a single use);
4. one smoker count per region with Gaussian noise: the regions hold disjoint records, so the
   four releases compose in parallel (order-wise maximum) and cost as much as one;
5. the distribution of regions as one exact Dirichlet draw (Ponnoprat 2023), calibrated to
   ε = 0.5 at order 8 for replace-one neighbours (Δ₂ = √2, Δ∞ = 1).

The accountant charges each release before its noise is drawn, refuses one that would overspend,
and converts the composed RDP curve to (ε, δ).

Run: python examples/compose_mechanisms.py
"""

from __future__ import annotations

import numpy as np

from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.mechanisms import (
    DirichletMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
)

DELTA = 1e-6


def main() -> None:
    rng = np.random.default_rng(2026)
    n = 2000
    age_band = rng.integers(0, 5, n)
    region = rng.integers(0, 4, n)
    smoker = rng.random(n) < 0.2

    acc = Accountant(budget=(3.0, DELTA))

    # 1. histogram, add/remove neighbours: one record changes one cell by 1 (Δ₂ = 1)
    gauss = GaussianMechanism.calibrate(0.5, delta=DELTA, sensitivity=1.0)
    acc.spend(gauss, tag="age-band histogram")
    hist = gauss.release(np.bincount(age_band, minlength=5))

    # 2. a single count (Δ₁ = 1)
    lap = LaplaceMechanism.calibrate(0.3, order=8.0, sensitivity=1.0)
    acc.spend(lap, tag="number of smokers")
    n_smokers = lap.release(smoker.sum())

    # 3. randomized response on each record's bit
    rr = RandomizedResponse.calibrate(0.5, order=8.0)
    acc.spend(rr, tag="smoker bits")
    noisy_bits = rr.release(smoker)
    debiased = (noisy_bits.mean() - (1 - rr.p)) / (2 * rr.p - 1)

    # 4. per-region counts: disjoint records, parallel composition within the group
    per_region = GaussianMechanism.calibrate(0.5, delta=DELTA)
    region_counts = []
    for r in range(4):
        acc.spend(per_region, tag=f"smokers in region {r}", group="region", partition=r)
        region_counts.append(per_region.release(smoker[region == r].sum()))

    # 5. a Dirichlet draw of the region distribution; replace-one: Δ₂ = √2, Δ∞ = 1
    dirichlet = DirichletMechanism.calibrate(
        0.5, 8.0, l2_sensitivity=np.sqrt(2.0), linf_sensitivity=1.0
    )
    acc.spend(dirichlet, tag="region distribution")
    region_share = dirichlet.release(np.bincount(region, minlength=4))

    # 6. a release that would overspend is refused before any noise is drawn
    greedy = GaussianMechanism(0.5)
    try:
        acc.spend(greedy, tag="raw histogram")
    except BudgetExceededError as err:
        print(f"refused: {err}\n")

    print(acc.report())
    eps, order = acc.epsilon_and_order(DELTA)
    print(f"\nall releases together: ({eps:.4f}, {DELTA:g})-DP  (best order {order:g})")
    print(f"\nnoisy age-band histogram: {np.round(hist, 1)}")
    print(f"noisy number of smokers: {float(n_smokers):.1f}  (true {int(smoker.sum())})")
    print(
        f"smoker rate from randomized response (p = {rr.p:.4f}): {debiased:.3f} "
        f"(true {smoker.mean():.3f})"
    )
    print(f"noisy smokers per region: {np.round(region_counts, 1)}")
    print(
        f"Dirichlet draw of the region shares: {np.round(region_share, 3)} "
        f"(true {np.round(np.bincount(region, minlength=4) / n, 3)})"
    )


if __name__ == "__main__":
    main()
