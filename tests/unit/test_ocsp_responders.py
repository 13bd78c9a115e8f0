"""Asking the OCSP responders a certificate names (``adapters.pki.ocsp.responders``,
``adapters.pki.responder.in_turn``): which URLs, in which order, and which answer decides."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import AuthorityInformationAccessOID
from hypothesis import given, settings
from hypothesis import strategies as st

from fourcorner.adapters.pki.freshness import Unusable
from fourcorner.adapters.pki.ocsp import MAX_RESPONDERS, KnownOcsp, OcspRefused, responders
from fourcorner.adapters.pki.responder import in_turn
from fourcorner.adapters.pki.testpki import issue_leaf, new_ca

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
KEY = ec.generate_private_key(ec.SECP256R1())
CA, CA_KEY = new_ca("NET TEST AP CA", key=KEY)
OCSP, ISSUERS = AuthorityInformationAccessOID.OCSP, AuthorityInformationAccessOID.CA_ISSUERS

locations = st.lists(
    st.tuples(
        st.sampled_from([OCSP, ISSUERS]),
        st.sampled_from(["http://", "HTTP://", "https://", "ldap://"]),
        st.integers(min_value=0, max_value=6),
    ),
    min_size=1,
    max_size=10,
)


@given(locations=locations)
def test_the_responders_are_the_certificates_http_ocsp_urls_in_order(
    locations: list[tuple[x509.ObjectIdentifier, str, int]],
) -> None:
    """Against a model: the http(s is not) OCSP locations, in the certificate's order, each
    once, the first ``MAX_RESPONDERS``."""
    access = [
        x509.AccessDescription(method, x509.UniformResourceIdentifier(f"{scheme}ocsp.example/{n}"))
        for method, scheme, n in locations
    ]
    cert, _ = issue_leaf(
        CA,
        CA_KEY,
        "POP000001",
        not_before=NOW,
        not_after=NOW + timedelta(days=1),
        key=KEY,
        extensions=[x509.AuthorityInformationAccess(access)],
    )
    model: list[str] = []
    for method, scheme, n in locations:
        url = f"{scheme}ocsp.example/{n}"
        if method == OCSP and scheme.lower() == "http://" and url not in model:
            model.append(url)
    assert responders(cert) == tuple(model[:MAX_RESPONDERS])


ANSWER = KnownOcsp(this_update=NOW, next_update=NOW + timedelta(days=1), fetched_at=NOW)


@given(answers=st.lists(st.booleans(), min_size=1, max_size=MAX_RESPONDERS))
def test_the_first_responder_that_answers_decides(answers: list[bool]) -> None:
    """Each responder answers or fails: the first that answers decides and none after it is
    asked; none answering is a refusal that names each one and what it met."""
    urls = [f"http://ocsp.example/{n}" for n in range(len(answers))]
    asked: list[str] = []

    async def ask(url: str, within: float | None) -> KnownOcsp:
        asked.append(url)
        if answers[urls.index(url)]:
            return ANSWER
        raise Unusable(f"no answer from {url[-1]}")

    if True in answers:
        assert asyncio.run(in_turn(urls, ask, 30.0)) is ANSWER
        assert asked == urls[: answers.index(True) + 1]
        return
    with pytest.raises(OcspRefused) as refused:
        asyncio.run(in_turn(urls, ask, 30.0))
    assert asked == urls
    if len(urls) == 1:
        assert str(refused.value) == "no answer from 0"
    else:
        assert all(f"{url}: no answer from {url[-1]}" in str(refused.value) for url in urls)


class Logged(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.failed: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "event", None) == "revocation.responder_failed":
            self.failed.append(record.url)  # type: ignore[attr-defined]


@settings(max_examples=25, deadline=None)
@given(
    budget=st.sampled_from([0.005, 0.03, 0.07, 1.0]),
    count=st.integers(min_value=1, max_value=MAX_RESPONDERS),
)
def test_only_a_responder_followed_by_another_is_logged_as_failed(
    budget: float, count: int
) -> None:
    """Each responder takes 0.02 s and fails; once the budget is over, those left are not
    asked, and said so: a responder is logged as failed (the next one asked) exactly when the
    next one is asked, and one never asked is never logged."""
    urls = [f"http://ocsp.example/{n}" for n in range(count)]
    asked: list[str] = []

    async def ask(url: str, within: float | None) -> KnownOcsp:
        asked.append(url)
        await asyncio.sleep(0.02)
        raise Unusable("did not answer")

    logged = Logged()
    logger = logging.getLogger("fourcorner.revocation")
    logger.addHandler(logged)
    try:
        with pytest.raises(OcspRefused) as refused:
            asyncio.run(in_turn(urls, ask, budget))
    finally:
        logger.removeHandler(logged)
    assert asked == urls[: len(asked)] and asked
    assert logged.failed == asked[:-1]
    for url in urls[len(asked) :]:
        assert f"{url}: not asked: the {budget:g} s to ask in are over" in str(refused.value)
