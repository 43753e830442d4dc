"""Analyses over score tables and retrieval runs: judge agreement (:mod:`rr.analysis.agreement`), the §5
analyses of Cao et al. 2025 (:mod:`rr.analysis.cao`), the query-level study (:mod:`rr.analysis.query_level`)
and SURE (:mod:`rr.analysis.sure`). Every function is pure: DataFrames in, tidy DataFrames out.
"""
