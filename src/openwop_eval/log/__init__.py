"""An eval run's OpenWOP event log as data: its names, how events name their trial, reading a
log back into trial records, and auditing a summary against it.

Pure, like the grading core it reads into: no clock, no randomness and no I/O beyond taking
events (or lines) as an iterable, so the auditor of another host's log depends on nothing of
this project's runner. Writing a log — ids, timestamps, numbering, commits — is the runner's.
"""

from .audit import Verification, verify_log
from .event_names import EXT, V1_NAMES, sequence_of, trial_ext, v2_type
from .jsondiff import Mismatch, diff
from .jsonl import parse_jsonl
from .replay import Replay, replay
from .verdict import Verdict, read_verdict
from .versions import LogVersionError

__all__ = [
    "EXT",
    "V1_NAMES",
    "LogVersionError",
    "Mismatch",
    "Replay",
    "Verdict",
    "Verification",
    "diff",
    "parse_jsonl",
    "read_verdict",
    "replay",
    "sequence_of",
    "trial_ext",
    "v2_type",
    "verify_log",
]
