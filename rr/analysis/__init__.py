"""Analyses over score tables and retrieval runs (pure functions returning tidy DataFrames)."""
