"""Grading: verdicts on a seeded corpus against the peers, and `verify` on a large log."""
