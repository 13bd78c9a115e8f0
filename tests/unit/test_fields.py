"""The rules of the fields the service shows and publishes: country codes and web addresses."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from fourcorner.adapters.smp.xml import business_card
from fourcorner.domain.fields import (
    MAX_URL_LENGTH,
    country_problem,
    published_contact_link,
    url_problem,
)
from fourcorner.domain.smp import EntityCard, SmpRegistration

hosts = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?(\.[a-z]{2,10}){1,3}", fullmatch=True)
paths = st.from_regex(r"(/[A-Za-z0-9._~%-]{0,12}){0,4}", fullmatch=True)


@given(st.sampled_from(["http", "https", "HTTPS"]), hosts, paths)
def test_absolute_http_urls_are_accepted(scheme, host, path):
    assert url_problem(f"{scheme}://{host}{path}") is None


@given(st.text(max_size=60))
def test_only_http_and_https_urls_with_a_host_are_accepted(text):
    if url_problem(text) is None:
        scheme, sep, rest = text.partition("://")
        assert sep and scheme.lower() in ("http", "https") and rest
        assert not any(c.isspace() for c in text)


@given(st.sampled_from(["javascript", "data", "file", "ftp", "vbscript"]), hosts)
def test_other_schemes_are_refused(scheme, host):
    assert url_problem(f"{scheme}://{host}/x") is not None
    assert url_problem(f"{scheme}:alert(1)") is not None


def test_urls_are_bounded():
    base = "https://example.com/"
    assert url_problem(base + "a" * (MAX_URL_LENGTH - len(base))) is None
    assert url_problem(base + "a" * (MAX_URL_LENGTH - len(base) + 1)) is not None


@given(st.text(max_size=4))
def test_a_country_code_is_two_capital_letters(code):
    ok = len(code) == 2 and all("A" <= c <= "Z" for c in code)
    assert (country_problem(code) is None) is ok


def test_a_technical_contact_is_an_http_url_or_a_mail_address():
    assert published_contact_link("mailto:ops@example.com") == "mailto:ops@example.com"
    assert published_contact_link("https://example.com/ops") == "https://example.com/ops"
    assert published_contact_link("javascript:alert(1)") == ""
    assert published_contact_link("mailto:not an address") == ""


def test_a_stored_card_with_a_bad_website_is_served_without_it():
    """Registrations stored before the rule was checked on input keep their cards: the SMP
    leaves out what may not be published when it serves them."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    card = EntityCard(
        name="ACME",
        country_code="SE",
        websites=("javascript:alert(1)", "https://acme.example"),
    )
    reg = SmpRegistration(
        id=uuid.uuid4(),
        smp_id=uuid.uuid4(),
        participant="0088:7300010000001",
        services=(),
        created_at=now,
        last_modified_at=now,
        business_card=card,
    )
    root = etree.fromstring(business_card(reg))
    ns = {"bc": "http://www.peppol.eu/schema/pd/businesscard/20180621/"}
    assert root.xpath("//bc:WebsiteURI/text()", namespaces=ns) == ["https://acme.example"]
