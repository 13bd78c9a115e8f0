"""The network's code lists as package data, and the loader that reads them into the domain."""

from fourcorner.adapters.codelists.loader import load_catalogue
from fourcorner.domain.catalogue import neutral

__all__ = ["load_catalogue", "neutral"]
