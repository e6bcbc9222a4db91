"""Reading untrusted files within the documented limits: JSON and YAML documents with the
line of every value, suite files into validated suites, a finished run's summary from any of
its files, and JSON Schema errors a person can act on."""
