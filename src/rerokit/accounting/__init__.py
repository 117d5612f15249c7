"""Adapters over dp-accounting (DpEvents, RDP curves, PLD) and Opacus histories. Never imports torch.

Importing this package is cheap: dp-accounting itself is imported inside the functions.
"""

from rerokit.accounting import events as _events
from rerokit.accounting.events import *  # noqa: F401,F403 - the curated list is events.__all__

__all__ = list(_events.__all__)
