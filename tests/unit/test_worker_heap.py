"""``fourcorner worker`` tunes the garbage collector once it has started (``settle_heap``)."""

import gc
import weakref

from fourcorner.entrypoints.commands.serve import YOUNG_COLLECTION_THRESHOLD, settle_heap


class _Node:
    next: object


def test_start_up_objects_are_frozen_and_young_collections_are_spaced_out() -> None:
    threshold = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    try:
        settle_heap()
        # the modules imported so far (pytest's, the service's) and what they hold
        assert gc.get_freeze_count() > 10_000
        assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, *threshold[1:])
        # objects made afterwards are collected as before, by the collector on its own: a cycle
        # left behind is freed once enough new objects have been made
        assert gc.isenabled()
        node = _Node()
        node.next = node
        gone = weakref.ref(node)
        del node
        kept = [[] for _ in range(2 * YOUNG_COLLECTION_THRESHOLD)]
        assert gone() is None
        del kept
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
