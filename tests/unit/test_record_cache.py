"""The record cache's rules: a fill that raced an invalidation is not kept, a suspended cache
answers nothing, entries expire, and the size stays bounded."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fourcorner.adapters.sql.cache import RecordCache
from fourcorner.entrypoints.http.memo import StampedMemo

KEY = ("SELECT 1", ("a",))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# A history of one key: fills (a read that began at some point and stores its result later),
# commits (which change the stored value and invalidate), suspensions and resumptions.
Step = st.one_of(
    st.tuples(st.just("fill"), st.integers(1, 3)),  # stored this many steps after it began
    st.tuples(st.just("commit"), st.just(0)),
    st.tuples(st.just("read"), st.just(0)),
    st.tuples(st.just("suspend"), st.just(0)),
    st.tuples(st.just("resume"), st.just(0)),
)


@settings(max_examples=500)
@given(st.lists(Step, max_size=20))
def test_the_cache_never_answers_a_value_older_than_the_last_commit(
    steps: list[tuple[str, int]],
) -> None:
    cache = RecordCache(["users"], enabled=True)
    value = 0  # the committed value
    pending: list[tuple[int, int, int]] = []  # (due step, generation, value read)
    for i, (kind, delay) in enumerate(steps):
        for _due, generation, read in [p for p in pending if p[0] == i]:
            cache.put("users", KEY, (read,), generation)
        pending = [p for p in pending if p[0] != i]
        if kind == "fill":
            pending.append((i + delay, cache.generation("users"), value))
        elif kind == "commit":
            value += 1
            cache.invalidate(["users"])
        elif kind == "read":
            pass
        elif kind == "suspend":
            cache.suspend()
        else:
            cache.resume()
        found = cache.get("users", KEY)
        assert found is None or found == (value,), (found, value)


def test_a_suspended_cache_stores_and_answers_nothing() -> None:
    cache = RecordCache(["users"], enabled=False)
    cache.put("users", KEY, ("x",), cache.generation("users"))
    assert cache.get("users", KEY) is None
    cache.resume()
    assert cache.get("users", KEY) is None
    cache.put("users", KEY, ("x",), cache.generation("users"))
    assert cache.get("users", KEY) == ("x",)
    cache.suspend()
    assert cache.get("users", KEY) is None


def test_entries_expire_after_max_age() -> None:
    clock = Clock()
    cache = RecordCache(["users"], max_age=5.0, clock=clock)
    cache.put("users", KEY, ("x",), cache.generation("users"))
    clock.now = 4.9
    assert cache.get("users", KEY) == ("x",)
    clock.now = 5.0
    assert cache.get("users", KEY) is None


def test_invalidation_is_per_collection() -> None:
    cache = RecordCache(["users", "members"])
    cache.put("users", KEY, ("u",), cache.generation("users"))
    cache.put("members", KEY, ("m",), cache.generation("members"))
    cache.invalidate(["members", "not-cached"])
    assert cache.get("users", KEY) == ("u",)
    assert cache.get("members", KEY) is None
    assert not cache.holds("not-cached")


def test_the_size_is_bounded() -> None:
    cache = RecordCache(["users"], max_entries=3)
    for i in range(10):
        cache.put("users", ("q", (i,)), (i,), cache.generation("users"))
    assert sum(cache.get("users", ("q", (i,))) is not None for i in range(10)) <= 3
    assert cache.get("users", ("q", (9,))) == (9,)


def test_the_stamp_moves_with_every_invalidation_and_is_none_while_suspended() -> None:
    cache = RecordCache(["users", "members"], enabled=True)
    seen = {cache.stamp()}
    for step in (
        lambda: cache.invalidate(["users"]),
        lambda: cache.invalidate(["members"]),
        cache.invalidate_all,
    ):
        step()
        assert cache.stamp() not in seen
        seen.add(cache.stamp())
    before = cache.stamp()
    cache.invalidate(["transactions"])  # not kept here: nothing it vouches for changed
    assert cache.stamp() == before
    cache.suspend()
    assert cache.stamp() is None
    cache.resume()
    assert cache.stamp() not in seen


def test_a_memo_answers_only_under_its_stamp_and_for_its_age() -> None:
    clock = Clock()
    memo: StampedMemo[str, int] = StampedMemo(max_entries=2, max_age=5.0, clock=clock)
    memo.put("a", 1, stamp=7)
    assert memo.get("a", 7) == 1
    assert memo.get("a", 8) is None and memo.get("a", 7) is None  # a changed stamp drops it
    memo.put("a", 1, stamp=None)
    assert memo.get("a", None) is None and len(memo) == 0  # no stamp: nothing kept
    memo.put("a", 1, stamp=7)
    clock.now = 5.0
    assert memo.get("a", 7) is None
    for key in "abc":
        memo.put(key, 1, stamp=7)
    assert len(memo) <= 2
