"""Column names, the paper's network structures and the public domains of the bundled tables."""

from __future__ import annotations

from typing import Any

#: Column names of the Adult data, in file order (UCI ``adult.names``).
ADULT_COLUMNS: tuple[str, ...] = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)

#: Column names of the German credit data, in file order. The UCI documentation's names, except
#: ``sex_marital_status`` (UCI: personal status and sex), which is the name used in the paper's DAG.
GERMAN_CREDIT_COLUMNS: tuple[str, ...] = (
    "status",
    "duration",
    "credit_history",
    "purpose",
    "amount",
    "savings",
    "employment_duration",
    "installment_rate",
    "sex_marital_status",
    "other_debtors",
    "present_residence",
    "property",
    "age",
    "other_installment_plans",
    "housing",
    "number_credits",
    "job",
    "people_liable",
    "telephone",
    "foreign_worker",
    "credit_risk",
)

# Column of the German credit table -> key of german.values_maps.json.
_GERMAN_MAP_KEYS: dict[str, str] = {
    "status": "status",
    "credit_history": "credit_history",
    "purpose": "purpose",
    "savings": "savings",
    "employment_duration": "present_employment",
    "sex_marital_status": "status_sex",
    "other_debtors": "other_debtors",
    "property": "property",
    "other_installment_plans": "installment_plans",
    "housing": "housing",
    "job": "job",
    "telephone": "telephone",
    "foreign_worker": "foreign_worker",
    "credit_risk": "credit",
}

#: The Adult network of the Dirichlet-mechanism paper (Ponnoprat, TMLR 2023): child -> parents.
ADULT_DAG: dict[str, list[str]] = {
    "age": [],
    "sex": [],
    "education": ["age"],
    "occupation": ["age", "sex", "education"],
    "capital-gain": ["sex", "education", "occupation"],
    "capital-loss": ["sex", "occupation", "capital-gain"],
    "income": ["occupation", "capital-gain", "capital-loss"],
}

#: The German credit network of the Dirichlet-mechanism paper (Ponnoprat, TMLR 2023): child ->
#: parents. Every name is a column of :func:`load_german_credit`.
GERMAN_CREDIT_DAG: dict[str, list[str]] = {
    "housing": [],
    "property": ["housing"],
    "age": ["housing"],
    "amount": ["property"],
    "other_debtors": ["property"],
    "sex_marital_status": ["amount"],
    "purpose": ["amount"],
    "installment_rate": ["amount"],
    "duration": ["amount", "installment_rate"],
    "people_liable": ["sex_marital_status"],
    "foreign_worker": ["duration"],
    "number_credits": ["age"],
    "credit_history": ["number_credits"],
    "other_installment_plans": ["credit_history"],
}

#: The public domain of every Adult column (:func:`pymc_rdp.curation.domains.parse_schema` format).
#: Categories: the lists of the UCI documentation (``adult.names``, Becker & Kohavi 1996), in its
#: order, plus ``"missing"`` for the unknown values (``"?"``) of ``workclass``, ``occupation`` and
#: ``native-country``. Numeric columns: fixed round cut points chosen without the data (age in
#: ten-year bands, ``fnlwgt`` in steps of 100,000, capital gain and loss with 0 as its own state
#: and a few round amounts, weekly hours around the 40-hour week); ``education-num`` is the
#: documented code 1..16 of ``education``.
ADULT_SCHEMA: dict[str, Any] = {
    "age": {"cuts": [24, 34, 44, 54, 64]},
    "workclass": [
        "Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
        "Without-pay", "Never-worked", "missing",
    ],
    "fnlwgt": {"cuts": [100_000, 200_000, 300_000, 400_000]},
    "education": [
        "Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc",
        "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th",
        "Preschool",
    ],
    "education-num": list(range(1, 17)),
    "marital-status": [
        "Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
        "Married-spouse-absent", "Married-AF-spouse",
    ],
    "occupation": [
        "Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
        "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
        "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
        "Armed-Forces", "missing",
    ],
    "relationship": [
        "Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried",
    ],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
    "capital-gain": {"cuts": [0, 5_000, 10_000, 20_000]},
    "capital-loss": {"cuts": [0, 1_500, 2_000, 2_500]},
    "hours-per-week": {"cuts": [20, 39, 40, 50]},
    "native-country": [
        "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
        "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba",
        "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico",
        "Portugal", "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan",
        "Haiti", "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand",
        "Yugoslavia", "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands",
        "missing",
    ],
    "income": ["<=50K", ">50K"],
}  # fmt: skip

#: Numeric columns of the German credit data and their public domains: fixed round cut points
#: for ``duration`` (months), ``amount`` (Deutsche Mark) and ``age`` (years), and the documented
#: ordinal codes of the other four (Grömping 2019, "South German Credit Data: Correcting a Widely
#: Used Data Set", Beuth University report 4/2019: installment rate, present residence and
#: number of credits in 4 classes, people liable in 2). The coded columns take every documented
#: state of ``german.values_maps.json`` (:func:`german_credit_public`).
_GERMAN_NUMERIC_SCHEMA: dict[str, Any] = {
    "duration": {"cuts": [6, 12, 18, 24, 36]},
    "amount": {"cuts": [1_000, 2_000, 3_000, 5_000, 10_000]},
    "installment_rate": [1, 2, 3, 4],
    "present_residence": [1, 2, 3, 4],
    "age": {"cuts": [25, 35, 45, 55, 65]},
    "number_credits": [1, 2, 3, 4],
    "people_liable": [1, 2],
}
