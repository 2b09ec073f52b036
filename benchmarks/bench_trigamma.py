"""Trigamma in a PyTensor graph: our numba-native Op against PyTensor's own ``tri_gamma``.

PyTensor's ``tri_gamma`` has no numba implementation, so under the default (numba) linker it runs
in object mode. Both graphs are compiled with the default mode and run on the same 1e5 inputs in
this process; the script prints the median time of each, the ratio and the largest relative
difference from ``scipy.special.polygamma(1, x)``.

Run: ``python benchmarks/bench_trigamma.py [--n 100000] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pytensor
import pytensor.tensor as pt
from scipy.special import polygamma

from pymc_rdp.distributions.ops import trigamma


def median_time(fn, x, repeat: int) -> float:
    fn(x)  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    x = np.exp(np.random.default_rng(0).uniform(np.log(1e-8), np.log(1e8), args.n))
    v = pt.dvector("x")
    ours = pytensor.function([v], trigamma(v))
    theirs = pytensor.function([v], pt.tri_gamma(v))
    exact = polygamma(1, x)

    t_ours = median_time(ours, x, args.repeat)
    t_theirs = median_time(theirs, x, max(1, args.repeat // 2))
    err = float(np.max(np.abs(ours(x) / exact - 1)))
    print(f"{args.n} elements, x in [1e-8, 1e8], default linker: {pytensor.config.linker}")
    print(f"ours (numba-native)    : {t_ours * 1e3:9.3f} ms   max rel. error {err:.2e}")
    print(f"pytensor tri_gamma     : {t_theirs * 1e3:9.3f} ms")
    print(f"ratio                  : {t_theirs / t_ours:9.1f}x")


if __name__ == "__main__":
    main()
