"""The HTML report: size, render time, and time to ready, filter and search in Chromium."""
