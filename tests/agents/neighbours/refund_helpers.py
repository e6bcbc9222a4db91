"""The neighbour ``eval_refund.py`` imports."""

ANSWER = "refunded"
