"""The runner: executes a suite against an agent, trial by trial, and records what happened."""
