"""The distribution points the revocation check keeps (``adapters.pki.crl_source``): never more
than their bound, the least recently used idle one let go first, one whose fetch is in flight
never; and when a fetch that failed is tried again, and which failures are news."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.pki.crl import read_crl
from fourcorner.adapters.pki.crl_source import RETRY_FIRST, RETRY_MOST, Source, Sources
from fourcorner.adapters.pki.testpki import new_ca, sign_crl

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
IN_FLIGHT = cast("asyncio.Task[None]", object())  # a fetch in flight, as far as they can tell

steps = st.lists(
    st.tuples(st.sampled_from(["use", "start", "end"]), st.integers(min_value=0, max_value=9)),
    max_size=80,
)


@given(size=st.integers(min_value=1, max_value=5), steps=steps)
def test_the_sources_kept_are_bounded_and_let_go_least_recently_used_first(
    size: int, steps: list[tuple[str, int]]
) -> None:
    """Against a model of the rule: a URL used is the most recently used; a new one takes a
    free place, else the least recently used idle one's, else none (``get`` is None), so the
    sources never outnumber ``size`` and one whose fetch is in flight is never let go."""
    sources = Sources(size)
    order: list[str] = []  # the model: least recently used first
    busy: set[str] = set()
    for step, n in steps:
        url = f"http://crl.example/{n}.crl"
        kept = {s.url: s for s in sources.all()}
        if step == "use":
            got = sources.get(url)
            idle = [u for u in order if u not in busy]
            if url in order or len(order) < size or idle:
                assert got is not None and got.url == url
                if url in order:
                    order.remove(url)
                elif len(order) >= size:
                    order.remove(idle[0])
                order.append(url)
            else:
                assert got is None
        elif url in kept:  # a fetch starts or ends; neither is a use
            kept[url].task = IN_FLIGHT if step == "start" else None
            (busy.add if step == "start" else busy.discard)(url)
        assert [s.url for s in sources.all()] == order
        assert len(sources) <= size
        assert busy <= set(order)


def test_a_url_kept_is_the_same_source_each_time() -> None:
    sources = Sources(2)
    first = sources.get("http://crl.example/a.crl")
    assert first is not None
    assert sources.get("http://crl.example/a.crl") is first


@given(st.integers(min_value=1, max_value=40))
def test_a_failed_fetch_is_tried_again_later_each_time(failures: int) -> None:
    source = Source("http://crl.example/a.crl")
    delays = [source.failed("HTTP 503", NOW)[0] for _ in range(failures)]
    assert delays[0] == RETRY_FIRST
    assert all(a <= b for a, b in itertools.pairwise(delays))
    assert max(delays) <= RETRY_MOST
    assert source.retry_at == NOW + delays[-1]
    assert not source.due(NOW + delays[-1] - timedelta(seconds=1))


def test_a_failure_is_news_once_per_reason_until_a_list_comes_in() -> None:
    source = Source("http://crl.example/a.crl")
    news = [source.failed(why, NOW)[1] for why in ("HTTP 503", "HTTP 503", "timeout", "timeout")]
    assert news == [True, False, True, False]
    ca, key = new_ca("NET TEST AP CA", key=ec.generate_private_key(ec.SECP256R1()))
    crl = sign_crl(ca, key, {}, this_update=NOW, next_update=NOW + timedelta(days=1))
    source.took(read_crl(crl.public_bytes(serialization.Encoding.DER), ca, NOW))
    assert (source.failures, source.retry_at, source.error) == (0, None, "")
    assert source.failed("timeout", NOW)[1]  # failing again after a list came in is news


@given(size=st.integers(min_value=1, max_value=5), uses=st.lists(st.integers(0, 9), max_size=60))
def test_answers_are_kept_per_key_bounded_least_recently_used_first(
    size: int, uses: list[int]
) -> None:
    """OCSP answers: one source per certificate (its CertID, the key), all fetched from one
    responder URL; never more than ``size``, the least recently used let go first."""
    sources: Sources[Any] = Sources(size, "ocsp")
    made: dict[int, Source[Any]] = {}
    order: list[int] = []  # the model: least recently used first
    for n in uses:
        got = sources.get("http://ocsp.example/", key=f"cert-{n}")
        assert got is not None and got.url == "http://ocsp.example/" and got.method == "ocsp"
        if n in order:
            assert got is made[n]
            order.remove(n)
        else:
            if len(order) >= size:
                del made[order.pop(0)]
            made[n] = got
        order.append(n)
        assert sources.all() == [made[k] for k in order]
        assert len(sources) <= size
