"""The `bench/all` driver: its jobs, its rows and the results it writes."""
