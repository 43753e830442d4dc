"""Query and document perturbations: deterministic pure transforms ``apply(item, rng) -> item``."""
