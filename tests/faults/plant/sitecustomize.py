"""Plants a crash (tests/faults/planting.py) in an openwop-eval process started with this
folder on PYTHONPATH: Python imports ``sitecustomize`` at start-up.
``OPENWOP_EVAL_TEST_FAULT`` = ``WHEN:MODE`` says where; with ``OPENWOP_EVAL_TEST_FAULT_ARM``
set to a path, commits count only once that file exists, and the fault removes it as it
strikes; ``OPENWOP_EVAL_TEST_FAULT_VICTIM=worker`` kills a host's run worker alone."""

from __future__ import annotations

import os

_spec = os.environ.get("OPENWOP_EVAL_TEST_FAULT")
if _spec:
    from tests.faults.planting import plant

    _arm = os.environ.get("OPENWOP_EVAL_TEST_FAULT_ARM")
    _victim = os.environ.get("OPENWOP_EVAL_TEST_FAULT_VICTIM", "host")
    if _arm:
        plant(_spec, lambda: os.path.exists(_arm), lambda: os.remove(_arm), _victim)
    else:
        plant(_spec, victim=_victim)
