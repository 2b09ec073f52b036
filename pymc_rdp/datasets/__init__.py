"""Bundled datasets and classic discrete Bayesian networks.

Everything here works offline: the Adult and German credit files ship inside the package
(``pymc_rdp/data``, see its ``README.txt`` for the UCI citations and the CC BY 4.0 licence), the
digits come with scikit-learn, and the classic networks are read from the BIF files that ship inside
pgmpy's wheel (``pgmpy/utils/example_models/*.bif.gz``). Nothing downloads at run time.

Tabular loaders
    :func:`load_adult`, :func:`load_german_credit`, :func:`load_digits`.
Preprocessing of the Dirichlet-mechanism paper (Ponnoprat, TMLR 2023)
    :func:`preprocess`: numeric columns with more than 30 distinct values are cut into 10 quantile
    bins, constant columns are dropped. :func:`adult_paper`, :func:`german_credit_paper` and
    :func:`digits_paper` return the preprocessed tables, :func:`paper_split` the paper's 70/30
    split with the preprocessing fitted on the training part; :data:`ADULT_DAG` and
    :data:`GERMAN_CREDIT_DAG` are the paper's network structures (child -> parents).
Public domains (declared, not read from the data)
    :data:`ADULT_SCHEMA` and :data:`GERMAN_CREDIT_SCHEMA`: every column's states from the
    datasets' documentation and fixed, public cut points for the numeric columns;
    :func:`adult_public` and :func:`german_credit_public` apply them, so that everything a fit
    publishes about the domain is covered by its guarantee (``pymc-rdp demo`` uses them).
Classic networks
    :func:`list_networks`, :func:`load_network` (a pgmpy ``DiscreteBayesianNetwork``, cached) and
    :func:`sample_network` (vectorised ancestral sampling of any number of records).
"""

from pymc_rdp.datasets.networks import (
    list_networks,
    load_network,
    sample_network,
)
from pymc_rdp.datasets.paper import (
    adult_paper,
    digits_paper,
    german_credit_paper,
    paper_split,
    preprocess,
)
from pymc_rdp.datasets.schemas import (
    ADULT_COLUMNS,
    ADULT_DAG,
    ADULT_SCHEMA,
    GERMAN_CREDIT_COLUMNS,
    GERMAN_CREDIT_DAG,
)
from pymc_rdp.datasets.tables import (
    GERMAN_CREDIT_SCHEMA,
    adult_public,
    german_credit_public,
    load_adult,
    load_digits,
    load_german_credit,
)

__all__ = [
    "ADULT_COLUMNS",
    "ADULT_DAG",
    "ADULT_SCHEMA",
    "GERMAN_CREDIT_COLUMNS",
    "GERMAN_CREDIT_DAG",
    "GERMAN_CREDIT_SCHEMA",
    "adult_paper",
    "adult_public",
    "digits_paper",
    "german_credit_paper",
    "german_credit_public",
    "list_networks",
    "load_adult",
    "load_digits",
    "load_german_credit",
    "load_network",
    "paper_split",
    "preprocess",
    "sample_network",
]
