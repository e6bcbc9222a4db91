"""Hostile input: the loader under limits, regression cases and property-based fuzzing."""
