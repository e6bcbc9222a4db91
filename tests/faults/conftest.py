"""Fault-injection fixtures: the database matrix of the host tests."""

from tests.hosts import database

__all__ = ["database"]
