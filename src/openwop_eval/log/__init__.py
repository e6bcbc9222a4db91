"""An eval run's OpenWOP event log as data: its names, how events name their trial, reading a
log back into trial records, and auditing a summary against it.

Pure, like the grading core it reads into: no clock, no randomness and no I/O beyond taking
events (or lines) as an iterable, so the auditor of another host's log depends on nothing of
this project's runner. Writing a log — ids, timestamps, numbering, commits — is the runner's.
"""

from .audit import Mismatch, Verification, diff, verify_log
from .jsonl import parse_jsonl
from .names import EXT, V1_NAMES, sequence_of, trial_ext, v2_type
from .replay import Replay, replay

__all__ = [
    "EXT",
    "V1_NAMES",
    "Mismatch",
    "Replay",
    "Verification",
    "diff",
    "parse_jsonl",
    "replay",
    "sequence_of",
    "trial_ext",
    "v2_type",
    "verify_log",
]
