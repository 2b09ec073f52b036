"""The curator: raw records in, charged releases out.

* :mod:`.counting` — contingency tables counted on the engine that holds the records.
* :mod:`.domains`, :mod:`.feature_domains` — the declared (public) states of each column.
* :mod:`.family_tables` — a Bayesian network's family tables on their declared states.
* :mod:`.release` — :class:`Release`, the record of every charged release, and :func:`privatize`.
* :mod:`.charge` — :func:`release_plan`: a plan of releases charged all or nothing, then drawn.
* :mod:`.table_budget` — one mechanism calibrated for an estimator's K tables.
* :mod:`.quantiles` — private quantiles and bin edges.

Noise is drawn here and only here (:func:`pymc_rdp.curation.charge.release_plan`), after the
accountant has accepted the charge.
"""
