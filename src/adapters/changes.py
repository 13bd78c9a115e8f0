"""``Storage.watch``'s bookkeeping, shared by the storage adapters: who wants to hear of commits
that changed which collections."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

log = logging.getLogger("fourcorner.storage")


class Watchers:
    def __init__(self) -> None:
        self._entries: list[tuple[frozenset[str], Callable[[], None]]] = []

    def add(self, collections: Iterable[str], callback: Callable[[], None]) -> None:
        self._entries.append((frozenset(collections), callback))

    def changed(self, collections: Iterable[str]) -> None:
        """Call every callback watching one of ``collections``; a failing one is logged."""
        names = set(collections)
        if not names:
            return
        for watched, callback in self._entries:
            if watched & names:
                try:
                    callback()
                except Exception:
                    log.exception("a storage watcher failed")
