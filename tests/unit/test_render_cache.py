"""The catalogue's cache of rendered answers: least recently used out, bounded in bytes."""

from __future__ import annotations

import gc
import tracemalloc

from hypothesis import given
from hypothesis import strategies as st

from fourcorner.entrypoints.http.catalogue_handlers import RenderCache

BOUND = 1024 * 1024


@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 300_000), st.text(max_size=30)), max_size=60
    )
)
def test_the_cache_stays_within_its_bounds_and_answers_what_was_rendered(calls):
    cache = RenderCache(max_bytes=BOUND, max_entries=8)
    rendered: dict[tuple[int, str], int] = {}
    for number, size, text in calls:
        key = (number, text)
        made: list[int] = []

        def render(key: tuple[int, str] = key, size: int = size, made: list[int] = made) -> str:
            made.append(size)
            return "x" * size

        body = cache.get(key, render)
        if not made:  # a hit: the body rendered for this key before
            assert len(body) == rendered[key] + 2
        else:
            rendered[key] = size
            assert body == b'"' + b"x" * size + b'"'
        assert cache.size <= BOUND and len(cache) <= 8


def test_the_memory_held_stays_near_the_bound():
    """2000 distinct answers of 50 kB with 4 kB keys: about 100 MB if nothing were let go."""
    cache = RenderCache(max_bytes=4 * BOUND)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(2000):
            cache.get(("search", "q" * 4000 + str(i)), lambda i=i: "x" * (50_000 + i))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert cache.size <= 4 * BOUND
    assert held < 5 * BOUND, held


def test_the_least_recently_used_answer_goes_first():
    cache = RenderCache(max_bytes=BOUND, max_entries=2)
    calls: list[str] = []

    def render(name: str) -> str:
        calls.append(name)
        return name

    cache.get("a", lambda: render("a"))
    cache.get("b", lambda: render("b"))
    cache.get("a", lambda: render("a"))
    cache.get("c", lambda: render("c"))  # "b" goes
    cache.get("a", lambda: render("a"))
    cache.get("b", lambda: render("b"))
    assert calls == ["a", "b", "c", "b"]
