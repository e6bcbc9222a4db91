"""The package's layer rules: an import resolver, the rules as data, and their tests."""
