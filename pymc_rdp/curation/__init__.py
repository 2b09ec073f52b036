"""The curator: raw records in, charged releases out.

* :mod:`.counting` — contingency tables counted on the engine that holds the records.
* :mod:`.domains` — the declared (public) states of each column.
* :mod:`.release` — :class:`Release`, the record of one charged release, and :func:`privatize`.

Noise is drawn here and only here, after the accountant has accepted the charge.
"""
