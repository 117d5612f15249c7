"""Adapters over dp-accounting (DpEvents, RDP curves, PLD) and Opacus histories. Never imports torch."""
