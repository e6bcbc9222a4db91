"""The ``openwop-eval`` command line: thin shells over library calls."""
