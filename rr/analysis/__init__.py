"""Analyses over score tables: judge agreement (:mod:`rr.analysis.agreement`) and the §5 analyses of
Cao et al. 2025 (:mod:`rr.analysis.cao`). Every function is pure: DataFrames in, tidy DataFrames out.
"""
