"""Discovery through the SML against a real DNS server (dnsmasq on 127.0.0.1): the name, the
U-NAPTR records, the environments' zones, caching by TTL, and a DNS that does not answer."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest

from dnsmasq import Dnsmasq, Naptr
from fourcorner.adapters.smp.discovery import SmlDiscovery, sml_name
from fourcorner.adapters.smp.errors import Problem, SmpLookupError
from fourcorner.domain.network_services import Environment

TEST, PROD = Environment.TEST, Environment.PROD
ZONES = {TEST: "test.sml.test.", PROD: "prod.sml.test."}
PARTICIPANT = ("iso6523-actorid-upis", "0088:5798000000001")


def name(participant: tuple[str, str] = PARTICIPANT, environment: Environment = TEST) -> str:
    return sml_name(*participant, ZONES[environment])


def smp(url: str, **fields: object) -> Naptr:
    return Naptr(name(), f"!^.*$!{url}!", **fields)  # type: ignore[arg-type]


def discovery(server: Dnsmasq, timeout: float = 2.0) -> SmlDiscovery:
    return SmlDiscovery(ZONES, [("127.0.0.1", server.port)], timeout=timeout)


async def refused(found: SmlDiscovery, problem: Problem, environment=TEST) -> SmpLookupError:
    with pytest.raises(SmpLookupError) as caught:
        await found.smp_url(PARTICIPANT, environment)
    assert caught.value.problem is problem, caught.value
    return caught.value


async def test_a_registered_participant_is_found(dnsmasq: Dnsmasq) -> None:
    dnsmasq.start([smp("https://smp.example.org/")])
    found = discovery(dnsmasq)
    assert await found.smp_url(PARTICIPANT, TEST) == "https://smp.example.org/"
    # the value is case-insensitive: the same name, the same SMP
    upper = (PARTICIPANT[0].upper(), PARTICIPANT[1].upper())
    assert await found.smp_url(upper, TEST) == "https://smp.example.org/"


async def test_an_unknown_participant_is_not_registered(dnsmasq: Dnsmasq) -> None:
    dnsmasq.start([Naptr(name(("iso6523-actorid-upis", "0088:1")), "!^.*$!https://x.org!")])
    error = await refused(discovery(dnsmasq), Problem.NOT_REGISTERED)
    assert "receiver not registered in TEST" in error.reason and error.permanent


async def test_a_name_without_naptr_records_is_not_registered(dnsmasq: Dnsmasq) -> None:
    dnsmasq.start([], extra=[f"--txt-record={name().rstrip('.')},hello"])
    error = await refused(discovery(dnsmasq), Problem.NOT_REGISTERED)
    assert "no NAPTR record" in error.reason


async def test_each_environment_has_its_zone(dnsmasq: Dnsmasq) -> None:
    dnsmasq.start([smp("https://test-smp.example.org")])
    found = discovery(dnsmasq)
    assert await found.smp_url(PARTICIPANT, TEST) == "https://test-smp.example.org"
    error = await refused(found, Problem.NOT_REGISTERED, PROD)
    assert "receiver not registered in PROD" in error.reason


async def test_only_u_records_for_meta_smp_count_in_order_then_preference(
    dnsmasq: Dnsmasq,
) -> None:
    dnsmasq.start(
        [
            smp("https://later.example.org", order=200, preference=1),
            smp("https://second.example.org", order=100, preference=20),
            smp("https://not-terminal.example.org", order=50, preference=1, flags="S"),
            smp("https://other-service.example.org", order=60, preference=1, service="Meta:X"),
            smp("https://no-flag.example.org", order=70, preference=1, flags=""),
            smp("https://first.example.org", order=100, preference=10),
        ]
    )
    assert await discovery(dnsmasq).smp_url(PARTICIPANT, TEST) == "https://first.example.org"


async def test_a_regexp_that_rewrites_the_name_is_not_used(dnsmasq: Dnsmasq) -> None:
    dnsmasq.start([Naptr(name(), r"!^(.*)$!https://\1.example.org!")])
    error = await refused(discovery(dnsmasq), Problem.NOT_REGISTERED)
    assert "is not of the form !^.*$!" in error.reason
    dnsmasq.start(
        [
            Naptr(name(), r"!^(.*)$!https://\1.example.org!", order=10),
            Naptr(name(), "!^.*$!ftp://files.example.org!", order=20),
            Naptr(name(), "!^.*$!https://good.example.org!", order=30),
        ]
    )
    assert await discovery(dnsmasq).smp_url(PARTICIPANT, TEST) == "https://good.example.org"


async def test_answers_are_cached_for_their_ttl(dnsmasq: Dnsmasq) -> None:
    dnsmasq.start([smp("https://cached.example.org")], ttl=300)
    found = discovery(dnsmasq, timeout=0.5)
    assert await found.smp_url(PARTICIPANT, TEST) == "https://cached.example.org"
    dnsmasq.stop()
    assert await found.smp_url(PARTICIPANT, TEST) == "https://cached.example.org"


async def test_an_answer_without_ttl_is_asked_again(dnsmasq: Dnsmasq) -> None:
    dnsmasq.start([smp("https://fresh.example.org")], ttl=0)
    found = discovery(dnsmasq, timeout=0.5)
    assert await found.smp_url(PARTICIPANT, TEST) == "https://fresh.example.org"
    dnsmasq.stop()
    await refused(found, Problem.UNREACHABLE)


async def test_a_stopped_dns_server_is_transient(dnsmasq: Dnsmasq) -> None:
    error = await refused(discovery(dnsmasq, timeout=0.5), Problem.UNREACHABLE)
    assert not error.permanent


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A UDP port that takes queries and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


async def test_a_dns_timeout_is_transient(silent_server: int) -> None:
    found = SmlDiscovery(ZONES, [("127.0.0.1", silent_server)], timeout=0.3)
    error = await refused(found, Problem.UNREACHABLE)
    assert "did not answer" in error.reason


async def test_concurrent_lookups_share_the_resolver(dnsmasq: Dnsmasq) -> None:
    dnsmasq.start([smp("https://smp.example.org")])
    found = discovery(dnsmasq)
    urls = await asyncio.gather(*(found.smp_url(PARTICIPANT, TEST) for _ in range(20)))
    assert set(urls) == {"https://smp.example.org"}
