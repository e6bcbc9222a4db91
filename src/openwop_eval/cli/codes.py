"""Exit codes shared by every command."""

EXIT_OK = 0
"""The suite passed, or the input is valid."""
EXIT_FAILED = 1
"""The suite did not pass (or, for verify, the given summary disagrees)."""
EXIT_INVALID = 2
"""Invalid input or usage: nothing ran."""
EXIT_INCOMPLETE = 3
"""The run could not complete."""
