"""Validation of billing documents against the published rules (see data/README.md)."""

from fourcorner.adapters.validation.validator import SaxonValidator

__all__ = ["SaxonValidator"]
