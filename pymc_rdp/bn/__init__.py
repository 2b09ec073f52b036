"""Graph algorithms of Bayesian networks, without privacy: structure, family tables, elimination."""
