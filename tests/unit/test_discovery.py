"""The pure parts of discovery and of the SMP answer cache: the SML name, the U-NAPTR regexp,
freshness from HTTP caching headers, the cache's bounds, and the discovery settings."""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.smp.cache import AnswerCache, freshness
from fourcorner.adapters.smp.discovery import sml_name, terminal_url
from fourcorner.entrypoints.config import SML_ZONE_PROD, SML_ZONE_TEST, Settings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LOCAL = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")


def test_the_name_of_a_participant_is_the_networks() -> None:
    """phax/peppol-commons' test vector (PeppolNaptrURLProviderTest): 9915:test."""
    assert sml_name("iso6523-actorid-upis", "9915:test", "acc.edelivery.tech.ec.europa.eu") == (
        "eh5boavaktmbgzyh2a63dz4qov33fvp5nsdvqklucfraayoodw6a."
        "iso6523-actorid-upis.acc.edelivery.tech.ec.europa.eu."
    )


@given(icd=st.from_regex(r"[0-9]{4}", fullmatch=True), local=LOCAL.filter(bool))
def test_names_are_case_insensitive_lower_case_base32(icd: str, local: str) -> None:
    value = f"{icd}:{local}"
    name = sml_name("ISO6523-ACTORID-UPIS", value.upper(), SML_ZONE_PROD.upper())
    assert name == sml_name("iso6523-actorid-upis", value.lower(), SML_ZONE_PROD)
    label, rest = name.split(".", 1)
    assert rest == "iso6523-actorid-upis." + SML_ZONE_PROD
    assert re.fullmatch("[a-z2-7]{52}", label)
    assert base64.b32decode(label.upper() + "====") != b""


@pytest.mark.parametrize(
    ("regexp", "url"),
    [
        ("!^.*$!https://smp.example.org!", "https://smp.example.org"),
        ("!^.*$!http://smp.example.org/path/!", "http://smp.example.org/path/"),
        ("#^.*$#https://smp.example.org#", "https://smp.example.org"),
        ("!^.*$!https://smp.example.org!i", "https://smp.example.org"),
        ("!^(.*)$!https://\\1.example.org!", None),  # rewrites the name
        ("!.*!https://smp.example.org!", None),
        ("!^.*$!https://smp.example.org", None),  # unterminated
        ("!^.*$!https://smp.example.org!x", None),  # an unknown flag
        ("!^.*$!ftp://smp.example.org!", None),
        ("!^.*$!!", None),
        ("a^.*$ahttps://smp.example.orga", None),  # an alphanumeric delimiter
        ("", None),
    ],
)
def test_only_complete_replacements_with_a_url_are_terminal(regexp: str, url: str | None) -> None:
    assert terminal_url(regexp) == url


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({}, 0),
        ({"Cache-Control": "max-age=60"}, 60),
        ({"Cache-Control": "public, max-age=60, s-maxage=10"}, 10),
        ({"Cache-Control": "Public, MAX-AGE=60"}, 60),
        ({"Cache-Control": "max-age=60", "Age": "15"}, 45),
        ({"Cache-Control": "max-age=60", "Age": "600"}, 0),
        ({"Cache-Control": "max-age=sixty"}, 0),
        ({"Cache-Control": "max-age=-1"}, 0),
        ({"Cache-Control": "no-store, max-age=60"}, 0),
        ({"Cache-Control": "private, max-age=60"}, 0),
        ({"Cache-Control": "no-cache"}, 0),
        (
            {"Expires": "Sun, 01 Mar 2026 12:10:00 GMT", "Date": "Sun, 01 Mar 2026 12:00:00 GMT"},
            600,
        ),
        ({"Expires": "Sun, 01 Mar 2026 12:01:00 GMT"}, 60),  # no Date: from the receipt
        ({"Expires": "0"}, 0),
        ({"Cache-Control": "max-age=5", "Expires": "Sun, 01 Mar 2026 13:00:00 GMT"}, 5),
    ],
)
def test_freshness_follows_the_caching_headers(headers: dict[str, str], seconds: int) -> None:
    assert freshness(headers, NOW) == timedelta(seconds=seconds)


def test_entries_expire_and_are_replaced() -> None:
    cache = AnswerCache()
    cache.put("u", b"one", {"Cache-Control": "max-age=10"}, NOW)
    assert cache.get("u", NOW + timedelta(seconds=9)) == b"one"
    assert cache.get("u", NOW + timedelta(seconds=10)) is None
    assert len(cache) == 0 and cache.size == 0
    cache.put("u", b"two", {"Cache-Control": "max-age=10"}, NOW)
    cache.put("u", b"three", {"Cache-Control": "no-store"}, NOW)
    assert cache.get("u", NOW) is None  # a newer answer that may not be kept drops the old


def test_lifetimes_are_capped() -> None:
    cache = AnswerCache(max_lifetime=timedelta(minutes=1))
    cache.put("u", b"x", {"Cache-Control": "max-age=31536000"}, NOW)
    assert cache.get("u", NOW + timedelta(seconds=59)) == b"x"
    assert cache.get("u", NOW + timedelta(seconds=61)) is None


@given(
    st.lists(
        st.tuples(st.sampled_from("abcdefgh"), st.integers(min_value=0, max_value=40)),
        max_size=60,
    )
)
def test_the_cache_stays_within_its_bounds(puts: list[tuple[str, int]]) -> None:
    cache = AnswerCache(max_entries=3, max_bytes=64)
    for url, size in puts:
        cache.put(url, b"x" * size, {"Cache-Control": "max-age=60"}, NOW)
        assert len(cache) <= 3 and cache.size <= 64
        assert cache.get(url, NOW) == b"x" * size  # the newest answer is always kept
    held = [u for u in "abcdefgh" if cache.get(u, NOW) is not None]
    assert cache.size == sum(len(cache.get(u, NOW) or b"") for u in held)


def test_discovery_settings() -> None:
    default = Settings()
    assert (default.discovery_mode, default.sml_zone_test, default.sml_zone_prod) == (
        "fixed",
        SML_ZONE_TEST,
        SML_ZONE_PROD,
    )
    assert SML_ZONE_TEST == "participant.sml.test.tech.peppol.org."
    assert SML_ZONE_PROD == "participant.sml.prod.tech.peppol.org."
    assert Settings(operator_certs_dir="/etc/certs").discovery_mode == "sml"
    assert Settings(operator_certs_dir="/etc/certs", discovery="fixed").discovery_mode == "fixed"
    loaded = Settings.load(
        {
            "FOURCORNER_DISCOVERY": "sml",
            "FOURCORNER_DNS_NAMESERVERS": "127.0.0.1:5353, [::1]:53,10.0.0.2",
            "FOURCORNER_ALLOW_HTTP_PEERS": "true",
        }
    )
    assert loaded.discovery_mode == "sml" and loaded.allow_http_peers
    assert loaded.nameservers == (("127.0.0.1", 5353), ("::1", 53), ("10.0.0.2", 53))
    assert Settings().nameservers == ()


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("FOURCORNER_DISCOVERY", "dns", "sml or fixed"),
        ("FOURCORNER_DNS_NAMESERVERS", "dns.example.org", "IP address"),
        ("FOURCORNER_DNS_NAMESERVERS", "127.0.0.1:99999", "port"),
        ("FOURCORNER_SML_ZONE_TEST", "a..b", "DNS name"),
        ("FOURCORNER_SML_ZONE_PROD", "bad zone", "DNS name"),
    ],
)
def test_bad_discovery_settings_are_refused(name: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Settings.load({name: value})
