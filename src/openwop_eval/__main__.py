"""``python -m openwop_eval`` is the ``openwop-eval`` command."""

from .cli.main import main

main()
