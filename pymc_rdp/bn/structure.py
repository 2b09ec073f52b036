"""Structure, domains and count tables of discrete Bayesian networks: the graph algorithms' names.

A discrete Bayesian network over nodes :math:`X_1, \\dots, X_d` factorises the joint distribution as

.. math:: P(x_1, \\dots, x_d) = \\prod_v P(x_v \\mid x_{\\mathrm{pa}(v)}),

(Koller & Friedman 2009, "Probabilistic Graphical Models", Def. 3.5). Everything here is
deterministic bookkeeping without privacy, gathered in one namespace from the modules that do
each job (imports point from this module to them, never back):

* :mod:`pymc_rdp.bn.graph`: parsing and validating the DAG (cycles, topological order);
* :mod:`pymc_rdp.bn.tables`: state domains, integer encoding, family tables, configuration labels;
* :mod:`pymc_rdp.bn.elimination`: the family marginals ``P(parents = c)`` by variable elimination
  (numpy or PyTensor), and the junction tree;
* :mod:`pymc_rdp.bn.sampling`: forward sampling and the per-record log-likelihood.
"""

from __future__ import annotations

from pymc_rdp.bn.elimination import family_marginal
from pymc_rdp.bn.graph import NetworkStructure, parse_structure
from pymc_rdp.bn.sampling import forward_sample, record_log_likelihood
from pymc_rdp.bn.tables import (
    ROOT_LABEL,
    cell_labels,
    config_index,
    config_labels,
    encode_frame,
    family_table,
    infer_states,
    validate_frame,
)

__all__ = [
    "ROOT_LABEL",
    "NetworkStructure",
    "cell_labels",
    "config_index",
    "config_labels",
    "encode_frame",
    "family_marginal",
    "family_table",
    "forward_sample",
    "infer_states",
    "parse_structure",
    "record_log_likelihood",
    "validate_frame",
]
