"""RFC 0246 conformance: the fixtures and the witness that judges a host's results."""
