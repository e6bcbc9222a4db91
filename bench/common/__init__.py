"""Shared measuring helpers: warm timing, memory peaks, PSS sampling."""
