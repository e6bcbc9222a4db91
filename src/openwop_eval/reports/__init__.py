"""A run's reports: the one versioned report model, and what renders it (JSON, Markdown,
JUnit XML, HTML, the terminal's table)."""
