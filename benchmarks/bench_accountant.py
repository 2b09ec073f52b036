"""Accountant speed and tightness against dp-accounting's RdpAccountant, in the same process.

Workload: N heterogeneous mechanisms (Gaussian, Laplace and binary randomized response, every one
with its own parameters), composed sequentially and converted to (ε, δ).

* one at a time: ``Accountant.spend`` per mechanism, then ``epsilon(δ)``; against
  ``RdpAccountant.compose`` per event, then ``get_epsilon(δ)``.
* batch: ``Accountant.spend_batch`` on the whole list, then ``epsilon(δ)``; against one
  ``RdpAccountant.compose(ComposedDpEvent([...]))``, then ``get_epsilon(δ)``.
* with a budget: the same two on an accountant with an (ε, δ) budget 5% above the workload's ε,
  so that every spend is checked (and admitted, the last ones close to the limit). dp-accounting
  has no budget: the peer is its same unchecked run (a per-event ``get_epsilon`` would cost it
  far more), so these ratios are conservative.
* constructed in the loop: one at a time, each mechanism (and each dp-accounting event) built
  from its parameters inside the timed loop, without and with the budget (Gaussian + Laplace
  workload).

Every timed run ends with ε at δ (``epsilon(δ)``, the tightest valid bound, resp.
``get_epsilon(δ)``).

Our accountant works on ``rdp.DEFAULT_ORDERS`` (a superset of dp-accounting's default orders), so
its ε can only be tighter. dp-accounting evaluates randomized response order by order in Python and
needs about a minute for the mixed workload; ``--quick`` times it on a random subsample of
``--quick-n`` events and extrapolates linearly (the cost per event is constant: each compose adds a
curve), and compares ε on that subsample.

The machine may be shared: ``--repeat R`` times every variant R times, interleaved (ours, then
dp-accounting, in turn), and reports medians and the ratio of the medians, both in wall-clock time
and in process CPU time (``time.process_time``; insensitive to time spent waiting for a core).

Run:  python benchmarks/bench_accountant.py [--n 10000] [--quick] [--workload mixed|gl|both]
                                            [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import dp_accounting
import numpy as np

from pymc_rdp.privacy.accountant import Accountant
from pymc_rdp.privacy.mechanisms import GaussianMechanism, LaplaceMechanism, RandomizedResponse


def make_workload(n: int, kinds: str, seed: int) -> list:
    rng = np.random.default_rng(seed)
    choices = rng.integers(0, 3 if kinds == "mixed" else 2, n)
    mechs = []
    for k in choices:
        if k == 0:
            mechs.append(GaussianMechanism(rng.uniform(20.0, 200.0), rng.uniform(0.5, 2.0)))
        elif k == 1:
            mechs.append(LaplaceMechanism(rng.uniform(20.0, 200.0), rng.uniform(0.5, 2.0)))
        else:
            mechs.append(RandomizedResponse(rng.uniform(0.5001, 0.52)))
    return mechs


def to_event(m) -> dp_accounting.DpEvent:
    if isinstance(m, GaussianMechanism):
        return dp_accounting.GaussianDpEvent(m.sigma / m.sensitivity)
    if isinstance(m, LaplaceMechanism):
        return dp_accounting.LaplaceDpEvent(m.scale / m.sensitivity)
    # dp-accounting's RR keeps the bucket with probability 1 - q + q/k; binary: q = 2(1 - p)
    return dp_accounting.RandomizedResponseDpEvent(noise_parameter=2 * (1 - m.p), num_buckets=2)


def new_dpa() -> dp_accounting.rdp.RdpAccountant:
    # randomized response needs the replace-one relation in dp-accounting; Gaussian and Laplace
    # curves do not depend on it
    return dp_accounting.rdp.RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE
    )


# Each timed function returns (wall seconds, epsilon); the CPU seconds of its last call are kept
# in _CPU for the report.
_CPU: dict[str, float] = {}


def _clock(name: str, t: float, c: float) -> float:
    _CPU[name] = time.process_time() - c
    return time.perf_counter() - t


def ours_one_at_a_time(mechs, delta, budget=None):
    t, c = time.perf_counter(), time.process_time()
    acc = Accountant(budget)
    for m in mechs:
        acc.spend(m)
    eps = acc.epsilon(delta)
    return _clock("ours_one_at_a_time", t, c), eps


def ours_batch(mechs, delta, budget=None):
    t, c = time.perf_counter(), time.process_time()
    acc = Accountant(budget)
    acc.spend_batch(mechs)
    eps = acc.epsilon(delta)
    return _clock("ours_batch", t, c), eps


def ours_constructed(specs, delta, budget=None):
    t, c = time.perf_counter(), time.process_time()
    acc = Accountant(budget)
    for cls, noise, sens in specs:
        acc.spend(cls(noise, sens))
    eps = acc.epsilon(delta)
    return _clock("ours_constructed", t, c), eps


def dpa_one_at_a_time(events, delta):
    t, c = time.perf_counter(), time.process_time()
    acc = new_dpa()
    for e in events:
        acc.compose(e)
    eps = acc.get_epsilon(delta)
    return _clock("dpa_one_at_a_time", t, c), eps


def dpa_constructed(specs, delta):
    t, c = time.perf_counter(), time.process_time()
    acc = new_dpa()
    for cls, noise, sens in specs:
        if cls is GaussianMechanism:
            acc.compose(dp_accounting.GaussianDpEvent(noise / sens))
        else:
            acc.compose(dp_accounting.LaplaceDpEvent(noise / sens))
    eps = acc.get_epsilon(delta)
    return _clock("dpa_constructed", t, c), eps


def dpa_batch(events, delta):
    t, c = time.perf_counter(), time.process_time()
    acc = new_dpa()
    acc.compose(dp_accounting.ComposedDpEvent(list(events)))
    eps = acc.get_epsilon(delta)
    return _clock("dpa_batch", t, c), eps


class _Runs:
    """Wall and CPU times of repeated calls of one timed function."""

    def __init__(self, fn, **kwargs) -> None:
        self.fn, self.kwargs, self.wall, self.cpu, self.eps = fn, kwargs, [], [], None

    def __call__(self, *args):
        w, self.eps = self.fn(*args, **self.kwargs)
        self.wall.append(w)
        self.cpu.append(_CPU[self.fn.__name__])
        return w, self.eps

    def med(self, cpu: bool = False) -> float:
        return statistics.median(self.cpu if cpu else self.wall)


def _ratio_line(label: str, ours: _Runs, theirs: _Runs, scale: float) -> str:
    t, d = ours.med(), theirs.med() * scale
    tc, dc = ours.med(True), theirs.med(True) * scale
    return (
        f"{label:<28}: ours {t:8.3f} s   dp-accounting {d:8.3f} s   ratio {d / t:7.1f}x"
        f"   (CPU {dc / tc:.1f}x)"
    )


def run(
    kinds: str, n: int, delta: float, quick: bool, quick_n: int, seed: int, repeat: int = 1
) -> None:
    mechs = make_workload(n, kinds, seed)
    events = [to_event(m) for m in mechs]
    label = "Gaussian + Laplace + randomized response" if kinds == "mixed" else "Gaussian + Laplace"
    print(f"\n== {n} mechanisms: {label}, delta = {delta:g}")
    print("load average (1, 5, 15 min) at start: " + ", ".join(f"{x:.2f}" for x in _load()))

    # warm-up (imports, first-call overheads) on both sides
    ours_one_at_a_time(mechs[:50], delta)
    dpa_one_at_a_time(events[:50], delta)
    ours_batch(mechs[:50], delta)
    dpa_batch(events[:50], delta)
    # a budget 5% above the workload's ε: every spend is checked and admitted
    budget = (1.05 * _eps_of(mechs, delta), delta)

    o1, ob = _Runs(ours_one_at_a_time), _Runs(ours_batch)
    o1b, obb = _Runs(ours_one_at_a_time, budget=budget), _Runs(ours_batch, budget=budget)
    p1, pb = _Runs(dpa_one_at_a_time), _Runs(dpa_batch)
    gl = kinds == "gl"
    if gl:
        specs = [(type(m), m.noise, m.sensitivity) for m in mechs]
        oc, pc = _Runs(ours_constructed), _Runs(dpa_constructed)
        ocb = _Runs(ours_constructed, budget=budget)
    if quick:
        idx = np.sort(
            np.random.default_rng(seed + 1).choice(n, size=min(quick_n, n), replace=False)
        )
        sub_e = [events[i] for i in idx]
        sub_m = [mechs[i] for i in idx]
        scale = n / len(idx)
        sub_specs = [specs[i] for i in idx] if gl else None
    else:
        sub_e, scale, sub_specs = events, 1.0, specs if gl else None
    for _ in range(repeat):
        o1(mechs, delta)
        ob(mechs, delta)
        o1b(mechs, delta)
        obb(mechs, delta)
        p1(sub_e, delta)
        pb(sub_e, delta)
        if gl:
            oc(specs, delta)
            ocb(specs, delta)
            pc(sub_specs, delta)
    e1, eb, d1 = o1.eps, ob.eps, p1.eps
    if quick:
        _, e_sub = ours_one_at_a_time(sub_m, delta)
        note = (
            f"(--quick: dp-accounting timed on {len(idx)} random events, x{scale:g} extrapolated)"
        )
        eps_line = (
            f"epsilon on that subsample: ours {e_sub:.12g}  dp-accounting {d1:.12g}  "
            f"({'no looser' if e_sub <= d1 + 1e-12 else 'LOOSER'})"
        )
    else:
        note = ""
        eps_line = (
            f"epsilon: ours {e1:.12g} (batch {eb:.12g})  dp-accounting {d1:.12g}  "
            f"({'no looser' if max(e1, eb) <= d1 + 1e-12 else 'LOOSER'})"
        )
    print(
        f"orders: ours {Accountant().orders.size} (superset of dp-accounting's "
        f"{new_dpa().orders.size})  {note}"
    )
    print(f"medians of {repeat} interleaved runs, wall-clock (and CPU) ratios:")
    print(_ratio_line("one at a time", o1, p1, scale))
    print(_ratio_line("batch", ob, pb, scale))
    print(_ratio_line("one at a time, budget", o1b, p1, scale))
    print(_ratio_line("batch, budget", obb, pb, scale))
    if gl:
        print(_ratio_line("one at a time, constructed", oc, pc, scale))
        print(_ratio_line("constructed, budget", ocb, pc, scale))
    print(
        f"(budget: epsilon = {budget[0]:.6g} at delta = {delta:g}; its peer is the unchecked run)"
    )
    if repeat > 1:
        print("every run, wall-clock seconds:")
        rows = [("one at a time", o1, p1), ("batch", ob, pb)]
        rows += [("one at a time, budget", o1b, p1), ("batch, budget", obb, pb)]
        rows += [("constructed", oc, pc), ("constructed, budget", ocb, pc)] if gl else []
        for name, ours, theirs in rows:
            mine = " ".join(f"{w:.3f}" for w in ours.wall)
            other = " ".join(f"{w * scale:.3f}" for w in theirs.wall)
            print(f"  {name}: ours {mine}  |  dp-accounting {other}")
    print(eps_line)
    same = e1 == eb == o1b.eps == obb.eps and (not gl or oc.eps == ocb.eps == e1)
    print(f"epsilon equal in every variant (one at a time, batch, budget, constructed): {same}")
    print("load average (1, 5, 15 min) at end: " + ", ".join(f"{x:.2f}" for x in _load()))


def _load() -> tuple[float, ...]:
    try:
        return os.getloadavg()
    except OSError:  # not available on every platform
        return (float("nan"),) * 3


def _eps_of(mechs, delta) -> float:
    acc = Accountant()
    acc.spend_batch(mechs)
    return acc.epsilon(delta)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="number of mechanisms")
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--workload", choices=["mixed", "gl", "both"], default="both")
    ap.add_argument(
        "--quick", action="store_true", help="time dp-accounting on a subsample and extrapolate"
    )
    ap.add_argument("--quick-n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument(
        "--repeat", type=int, default=1, help="time every variant this many times (medians)"
    )
    args = ap.parse_args()
    kinds = ["mixed", "gl"] if args.workload == "both" else [args.workload]
    for k in kinds:
        run(k, args.n, args.delta, args.quick, args.quick_n, args.seed, max(1, args.repeat))


if __name__ == "__main__":
    main()
