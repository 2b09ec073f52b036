"""The Dirichlet mechanism on a whole table of count rows (a CPT), charged as one release.

A table of ``rows`` count rows (parent configurations × child states) is released row by row,
θ̃ₐ ~ Dirichlet(rₐ cₐ + αₐ), independently. Each record sits in exactly one row. The product of
independent rows has a Rényi divergence that *adds* over rows, so the privacy curve of the table
depends on how one record can change it:

* add/remove neighbours: the record is in one row only, so the table costs the largest row cost
  (parallel composition over disjoint records): ε(λ) = maxₐ εₐ(λ).
* replace-one neighbours: the record either moves between two states of one row a (a
  histogram replace-one change, cost moveₐ(λ)), or leaves row a and joins row b ≠ a with any
  states (a removal in row a *plus* an addition in row b, cost removeₐ(λ) + add_b(λ)):

      ε(λ) = max( maxₐ moveₐ(λ),  max_{a ≠ b} [removeₐ(λ) + add_b(λ)] ).

The pieces, per row with sₐ = rₐΔ∞ and αₐ₍₁₎ ≤ αₐ₍₂₎ its two smallest concentrations:

* ``analysis="theorem1"`` (Ponnoprat, TMLR 2023, Theorem 1, proof applied coordinate-wise to
  the product): moveₐ = (λ rₐ² Δ₂²/2) ψ′(αₐ₍₁₎ − (λ−1) sₐ) =: T1ₐ, and a change of one cell by
  one count costs at most (λ rₐ²/2) ψ′(αₐ₍₁₎ − (λ−1) rₐ) ≤ T1ₐ/2 when Δ₂ ≥ √2 and Δ∞ ≥ 1 (ψ′
  decreases), so a move across rows costs ≤ (T1ₐ + T1_b)/2 ≤ max(T1ₐ, T1_b): the table costs
  maxₐ T1ₐ.
* ``analysis="exact"`` (:mod:`pymc_rdp.privacy.dirichlet_divergence`): moveₐ = the exact histogram
  curve of row a (distinct categories: A(αₐ₍₁₎ + sₐ) + B(αₐ₍₂₎) or the swapped pair),
  removeₐ = A(αₐ₍₁₎ + sₐ)/(λ−1) and add_b = B(α_b₍₁₎)/(λ−1), each taken as the minimum with
  its Theorem-1 bound (T1ₐ for a move, (λ rₐ² Δ∞²/2) ψ′(αₐ₍₁₎ − (λ−1) sₐ) for one cell). A move
  across rows can use the smallest concentration in both roles — which a move within a row
  cannot — and combine different rows' settings; both make the across-row term the larger one.

The curve is computed from the parameters alone, so a stored ledger entry can be recomputed.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.dirichlet_divergence import exact_add_remove_pieces
from pymc_rdp.privacy.mechanisms.base import Mechanism, resolve_orders
from pymc_rdp.privacy.mechanisms.dirichlet import DirichletMechanism, check_setting

__all__ = ["DirichletTableMechanism"]


def _max_over_distinct_pairs(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """max over a ≠ b of first[a] + second[b], along axis 0 (at least two rows)."""
    ia = np.argmax(first, axis=0)
    ib = np.argmax(second, axis=0)
    f_sorted = np.sort(first, axis=0)
    s_sorted = np.sort(second, axis=0)
    f1, f2 = f_sorted[-1], f_sorted[-2]
    s1, s2 = s_sorted[-1], s_sorted[-2]
    return np.where(ia != ib, f1 + s1, np.maximum(f1 + s2, f2 + s1))


class DirichletTableMechanism(Mechanism):
    """The Dirichlet mechanism on a table of ``rows`` count rows, as one release.

    Parameters
    ----------
    r, alpha, l2_sensitivity, linf_sensitivity, analysis
        As in :class:`DirichletMechanism`: a single setting shared by every row, or one setting
        per row (batch shape ``(rows,)``; ``alpha`` may then have shape ``(rows, K)``).
    rows : int
        Number of rows (parent configurations) of the table, ≥ 1.
    neighbours : {"replace-one", "add-remove"}, default "replace-one"
        The neighbouring relation of the records; one record adds 1 to one cell. The
        sensitivities must cover a count table under it: Δ∞ ≥ 1 and Δ₂ ≥ √2 (replace-one) or
        Δ₂ ≥ 1 (add/remove); ``analysis="exact"`` also needs Δ₂ = √2·Δ∞ or Δ₂ = Δ∞.

    Notes
    -----
    ε(λ) = maxₐ εₐ(λ) for add/remove neighbours and
    ε(λ) = max(maxₐ moveₐ(λ), max_{a≠b} [removeₐ(λ) + add_b(λ)]) for replace-one neighbours;
    see the module docstring for the pieces and their sources.
    """

    name: ClassVar[str] = "dirichlet_table"

    def __init__(
        self,
        r: Any,
        alpha: Any,
        l2_sensitivity: Any,
        linf_sensitivity: Any,
        rows: int,
        analysis: str = "theorem1",
        neighbours: str = "replace-one",
    ) -> None:
        if isinstance(rows, (bool, np.bool_)) or not isinstance(rows, (int, np.integer)):
            raise TypeError(f"rows must be a whole number >= 1, got {rows!r}")
        if rows < 1:
            raise ValueError(f"rows must be >= 1, got {rows}")
        check_setting(analysis, neighbours)
        self.rows = int(rows)
        self.row_mechanism = DirichletMechanism(
            r, alpha, l2_sensitivity, linf_sensitivity, analysis=analysis, neighbours=neighbours
        )
        m = self.row_mechanism
        if m.batch_shape not in ((), (self.rows,)):
            raise ValueError(
                f"r, alpha and the sensitivities have batch shape {m.batch_shape}: they must be "
                f"a single setting or one setting per row ({self.rows} rows)"
            )
        ratio = math.sqrt(2.0) if neighbours == "replace-one" else 1.0
        tol = 1.0 - 1e-12
        if (m.l2_sensitivity < ratio * tol).any() or (m.linf_sensitivity < tol).any():
            raise ValueError(
                f"l2_sensitivity must be >= {ratio:.6g} and linf_sensitivity >= 1: the "
                f"sensitivities of a count table under {neighbours!r} neighbours"
            )
        self.analysis = analysis
        self.neighbours = neighbours

    @classmethod
    def from_mechanism(
        cls, mechanism: DirichletMechanism, rows: int, neighbours: str | None = None
    ) -> DirichletTableMechanism:
        """The table of ``rows`` rows released with ``mechanism``'s setting(s).

        ``neighbours`` defaults to the mechanism's own (the relation of its exact analysis).
        """
        if not isinstance(mechanism, DirichletMechanism):
            raise TypeError(
                f"mechanism must be a DirichletMechanism, got {type(mechanism).__name__}"
            )
        p = mechanism.params()
        if neighbours is not None:
            p["neighbours"] = neighbours
        return cls(rows=rows, **p)

    # ------------------------------------------------------------------------------------------
    def rdp(self, orders: Any = None) -> np.ndarray:
        """ε(λ) of the whole table at ``orders`` (shape ``orders.shape``; ``inf`` if unbounded)."""
        lam = resolve_orders(orders)
        m = self.row_mechanism
        rows_curve = np.asarray(m.rdp(lam), dtype=np.float64)  # (rows,) + lam.shape or lam.shape
        per_row = m.batch_shape != ()
        worst_row = rows_curve.max(axis=0) if per_row else rows_curve
        if self.neighbours == "add-remove" or self.analysis == "theorem1" or self.rows == 1:
            return np.asarray(worst_row, dtype=np.float64)
        expand = (Ellipsis,) + (None,) * lam.ndim
        r = np.broadcast_to(m.r, m.batch_shape)[expand]
        dinf = np.broadcast_to(m.linf_sensitivity, m.batch_shape)[expand]
        a1 = m.alpha_min[expand]
        one_cell = _rdp.dirichlet(lam, r, a1, dinf, dinf)
        remove, add = exact_add_remove_pieces(lam, r, a1, dinf)
        remove = np.minimum(remove, one_cell)
        add = np.minimum(add, one_cell)
        if per_row:
            across = _max_over_distinct_pairs(remove, add)
        else:  # every row has the same setting: any two distinct rows
            across = remove + add
        return np.asarray(np.maximum(worst_row, across), dtype=np.float64)

    def params(self) -> dict[str, Any]:
        p = self.row_mechanism.params()
        p["neighbours"] = self.neighbours
        p["rows"] = self.rows
        return p

    def release(self, value: Any, noise_source: Any = None) -> np.ndarray:
        """One exact draw per row of the (rows, K) table ``value`` (see DirichletMechanism)."""
        c = np.asarray(value)
        if c.ndim != 2 or c.shape[0] != self.rows:
            raise ValueError(
                f"counts must have shape (rows, K) with rows = {self.rows}, got {c.shape}"
            )
        return self.row_mechanism.release(value, noise_source)
