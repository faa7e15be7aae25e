"""Weights shipped with the package (see MODEL_CARD.md)."""
