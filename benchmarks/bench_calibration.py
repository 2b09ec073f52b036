"""Benchmark: 10⁶ Dirichlet calibrations in one call.

Solves (λ r² Δ₂²/2) ψ′(α₀ + 3(λ−1) r Δ∞) = ε (Ponnoprat, TMLR 2023, Algorithm 1) for 10⁶ random
settings, ε ∈ [1e-8, 1e4] and λ ∈ [1.01, 1e4] log-uniform, α₀ = 1, Δ₂ = √2, Δ∞ = 1, with

1. ``DirichletMechanism.calibrate`` (validation + the parallel compiled kernel + the check that
   the reported curve meets ε),
2. the compiled kernel alone (``pymc_rdp.privacy._kernels.calibrate_many``),
3. scipy's ``brentq`` per element on ``scipy.special.polygamma`` (a subsample, extrapolated),
4. a vectorised numpy Newton iteration in log r on ``scipy.special.polygamma``.

Residuals |g(r)/ε − 1| are evaluated with scipy's polygamma for every method.

Run: ``python benchmarks/bench_calibration.py [n] [n_brentq]``.
"""

from __future__ import annotations

import os
import sys
import time

import numba
import numpy as np
from scipy.optimize import brentq
from scipy.special import polygamma

from pymc_rdp.privacy import _kernels
from pymc_rdp.privacy.mechanisms import DirichletMechanism

SQRT2 = float(np.sqrt(2.0))


def g(r, eps, lam):
    return 0.5 * lam * r**2 * 2.0 * polygamma(1, 1.0 + 3.0 * (lam - 1.0) * r)


def residual(r, eps, lam):
    return float(np.max(np.abs(g(r, eps, lam) / eps - 1.0)))


def brentq_one(eps: float, lam: float) -> float:
    hi = 1.0
    while g(hi, eps, lam) < eps:
        hi *= 4.0
    lo = hi / 4.0
    while g(lo, eps, lam) > eps:
        lo /= 4.0
    return brentq(lambda r: g(r, eps, lam) - eps, lo, hi, xtol=1e-300, rtol=8.9e-16, maxiter=500)


def numpy_newton(eps: np.ndarray, lam: np.ndarray) -> np.ndarray:
    t = 0.5 * np.log(eps / (lam * polygamma(1, 1.0)))  # start from r² K ψ′(α₀) = ε
    for _ in range(100):
        r = np.exp(t)
        a = 1.0 + 3.0 * (lam - 1.0) * r
        p1 = polygamma(1, a)
        h = np.log(lam * r * r * p1) - np.log(eps)
        dh = 2.0 + 3.0 * (lam - 1.0) * r * polygamma(2, a) / p1
        step = h / dh
        t = t - step
        if np.max(np.abs(step)) < 1e-14:
            break
    return np.exp(t)


def main(n: int = 1_000_000, n_brentq: int = 2000) -> None:
    rng = np.random.default_rng(2026)
    eps = 10 ** rng.uniform(-8, 4, n)
    lam = 10 ** rng.uniform(np.log10(1.01), 4, n)

    t0 = time.perf_counter()
    DirichletMechanism.calibrate(eps[:8], lam[:8], SQRT2, 1.0)
    t_warm = time.perf_counter() - t0

    rows = []
    t0, c0 = time.perf_counter(), time.process_time()
    mech = DirichletMechanism.calibrate(eps, lam, SQRT2, 1.0)
    t_mech, c_mech = time.perf_counter() - t0, time.process_time() - c0
    rows.append(("DirichletMechanism.calibrate", t_mech, c_mech, residual(mech.r, eps, lam)))

    t0, c0 = time.perf_counter(), time.process_time()
    r_kernel = _kernels.calibrate_many(eps, lam, 1.0, SQRT2, 1.0, 3.0)
    t_kernel, c_kernel = time.perf_counter() - t0, time.process_time() - c0
    rows.append(("compiled kernel alone", t_kernel, c_kernel, residual(r_kernel, eps, lam)))

    idx = rng.choice(n, n_brentq, replace=False)
    t0, c0 = time.perf_counter(), time.process_time()
    r_b = np.array([brentq_one(eps[i], lam[i]) for i in idx])
    scale = n / n_brentq
    t_b, c_b = (time.perf_counter() - t0) * scale, (time.process_time() - c0) * scale
    rows.append(
        (
            f"scipy brentq per element (x{n // n_brentq} from {n_brentq})",
            t_b,
            c_b,
            residual(r_b, eps[idx], lam[idx]),
        )
    )

    t0, c0 = time.perf_counter(), time.process_time()
    r_np = numpy_newton(eps, lam)
    t_np, c_np = time.perf_counter() - t0, time.process_time() - c0
    rows.append(("numpy Newton on scipy polygamma", t_np, c_np, residual(r_np, eps, lam)))

    print(
        f"{n:,} calibrations (paper scheme) on {numba.get_num_threads()} threads, "
        f"first-call/compile time {t_warm:.2f} s, load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{'method':<44} {'wall [s]':>9} {'cpu [s]':>9} {'wall vs calibrate':>18} "
        f"{'max |g/eps-1|':>14}"
    )
    for name, t, c, res in rows:
        print(f"{name:<44} {t:9.3f} {c:9.3f} {t / t_mech:17.1f}x {res:14.2e}")
    print(
        f"speed-up vs brentq per element: {t_b / t_mech:.0f}x (calibrate), "
        f"{t_b / t_kernel:.0f}x (kernel); vs numpy Newton: {t_np / t_mech:.1f}x"
    )


if __name__ == "__main__":
    args = [int(float(a)) for a in sys.argv[1:3]]
    main(*args)
