"""The privacy core: Rényi-DP curves, mechanisms, the accountant and noise calibration.

This package imports only NumPy, SciPy and numba — never PyMC, PyTensor or pandas — so that the
guarantee can be audited, and a ledger recomputed, without the modelling stack.

* :mod:`.rdp` — orders, curves of the standard mechanisms, conversion to (ε, δ), interpretation.
* :mod:`.mechanisms` — the mechanisms, each with its curve, its sensitivity rule and its exact
sampler.
* :mod:`.accountant` — the accountant and its tamper-evident ledger: the entry record and
  group keys (:mod:`.ledger`), the composed curve (:mod:`.composition`), the entries' curves
  (:mod:`.entry_curves`), the budget test (:mod:`.spending`), parallel group keys
  (:mod:`.parallel_groups`), declared statements (:mod:`.declarations`), the ledger file
  (:mod:`.ledger_codec`) and the readable report (:mod:`.ledger_report`).
* :mod:`.calibration` — the least noise that meets a budget.
* :mod:`.tight_accounting`, :mod:`.dp_events`, :mod:`.filters` — tight (ε, δ), dp-accounting events,
  privacy filters for adaptive composition.
"""
