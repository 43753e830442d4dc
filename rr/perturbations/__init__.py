"""Query and document perturbations (protocols in :mod:`rr.perturbations.base`)."""
