"""Plants a crash (tests/faults/planting.py) in an openwop-eval process started with this
folder on PYTHONPATH: Python imports ``sitecustomize`` at start-up.
``OPENWOP_EVAL_TEST_FAULT`` = ``WHEN:MODE`` says where; with ``OPENWOP_EVAL_TEST_FAULT_ARM``
set to a path, commits count only once that file exists."""

from __future__ import annotations

import os

_spec = os.environ.get("OPENWOP_EVAL_TEST_FAULT")
if _spec:
    from tests.faults.planting import plant

    _arm = os.environ.get("OPENWOP_EVAL_TEST_FAULT_ARM")
    plant(_spec, (lambda: os.path.exists(_arm)) if _arm else (lambda: True))
