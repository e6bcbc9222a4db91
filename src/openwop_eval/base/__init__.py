"""Leaf tools the whole package shares, pure: fast JSON text and every documented limit of
untrusted input."""
