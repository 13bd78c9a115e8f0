"""How much the interface reads: JSON nesting depth."""

from __future__ import annotations

MAX_JSON_DEPTH = 64
"""Arrays and objects nested deeper than this are refused (AT-1000)."""
