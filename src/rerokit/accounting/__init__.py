"""Adapters over dp-accounting (DpEvents, RDP curves, PLD) and Opacus histories. Never imports torch.

Importing this package is cheap: dp-accounting itself is imported inside the functions.
"""

from rerokit.accounting.events import (
    dpsgd_event,
    epsilon_pld,
    epsilon_rdp,
    rdp_curve,
    schedule_event,
    segments_from_event,
    segments_from_opacus_history,
)

__all__ = [
    "dpsgd_event",
    "schedule_event",
    "segments_from_event",
    "segments_from_opacus_history",
    "epsilon_pld",
    "epsilon_rdp",
    "rdp_curve",
]
