"""The runner end to end, on Ray, and Inspect AI on the same workload."""
