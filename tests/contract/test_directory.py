"""The directory adapter over real HTTP, against a test indexer on 127.0.0.1 per environment
(``directory_indexer``): what it sends the indexer (NETWORK.md section 6), that each
environment's participant goes to that environment's indexer only (over https, with that
environment's SMP certificate as TLS client certificate), and how a directory that refuses or
cannot be reached is told."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable, Coroutine
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from directory_indexer import PATH, Indexer
from fourcorner.adapters.directory import EnvironmentDirectories, IndexerDirectoryPublisher
from fourcorner.adapters.pki import testpki
from fourcorner.adapters.pki.testpki import TestPki, cert_pem
from fourcorner.domain.errors import ServiceUnavailable
from fourcorner.domain.network_services import Environment
from fourcorner.entrypoints import operator
from fourcorner.entrypoints.adapter_setup import directory
from fourcorner.entrypoints.config import Settings
from sml_service import server_certificate

TEST, PROD = Environment.TEST, Environment.PROD
ServerFactory = Callable[[web.Application], Coroutine[Any, Any, Any]]
ID = "0088:7300010000715"
FULL = f"iso6523-actorid-upis::{ID}"


@pytest.fixture
async def indexers(aiohttp_server: ServerFactory) -> dict[Environment, tuple[Indexer, str]]:
    """An indexer for TEST and one for PROD, each with its URL."""
    out = {}
    for env in (TEST, PROD):
        indexer = Indexer()
        server = await aiohttp_server(indexer.app())
        out[env] = (indexer, str(server.make_url(PATH)))
    return out


@pytest.fixture
async def both(indexers: Any) -> AsyncIterator[EnvironmentDirectories]:
    """The directories as the container makes them from the two settings."""
    settings = Settings(directory_url_test=indexers[TEST][1], directory_url_prod=indexers[PROD][1])
    made = directory(settings, [])
    assert isinstance(made, EnvironmentDirectories)
    yield made
    await made.aclose()


async def test_each_environment_publishes_to_its_own_indexer(indexers, both) -> None:
    (test, _), (prod, _) = indexers[TEST], indexers[PROD]
    await both.publish(TEST, ID.upper())
    assert (test.calls, prod.calls) == ([("PUT", FULL)], [])
    await both.publish(PROD, ID)
    assert prod.calls == [("PUT", FULL)] and set(test.cards) == set(prod.cards) == {FULL}


async def test_withdrawing_in_one_environment_leaves_the_others_card(indexers, both) -> None:
    (test, _), (prod, _) = indexers[TEST], indexers[PROD]
    for env in (TEST, PROD):
        await both.publish(env, ID)
    await both.withdraw(TEST, ID)
    assert test.calls[-1] == ("DELETE", FULL)  # the identifier, percent-encoded in the path
    assert (set(test.cards), set(prod.cards)) == (set(), {FULL})
    assert [m for m, _ in prod.calls] == ["PUT"]
    # a card the directory no longer has is withdrawn already
    await both.withdraw(TEST, ID)
    assert test.calls[-1] == ("DELETE", FULL)


async def test_an_environment_without_an_indexer_contacts_none(indexers) -> None:
    (test, url), (prod, _) = indexers[TEST], indexers[PROD]
    only_test = directory(Settings(directory_url_test=url), [])
    assert isinstance(only_test, EnvironmentDirectories)
    try:
        await only_test.publish(PROD, ID)
        await only_test.withdraw(PROD, ID)
        assert prod.calls == [] and test.calls == []
        await only_test.publish(TEST, ID)
        assert test.calls == [("PUT", FULL)]
    finally:
        await only_test.aclose()
    nowhere = directory(Settings(), [])
    await nowhere.publish(TEST, ID)
    assert test.calls == [("PUT", FULL)]


@pytest.mark.parametrize("status", [500, 503, 403])
async def test_a_refusing_directory_is_unavailable(indexers, both, status) -> None:
    indexers[PROD][0].refuse = status
    for call in (both.publish, both.withdraw):
        with pytest.raises(ServiceUnavailable) as e:
            await call(PROD, ID)
        assert e.value.reason == f"the directory answered {status}"
    await both.publish(TEST, ID)  # the other environment's directory is another one


async def test_a_directory_that_cannot_be_reached_is_unavailable(aiohttp_server) -> None:
    server = await aiohttp_server(Indexer().app())
    url = str(server.make_url(PATH))
    await server.close()
    gone = IndexerDirectoryPublisher(url, timeout=5)
    try:
        for call in (gone.publish, gone.withdraw):
            with pytest.raises(ServiceUnavailable) as e:
                await call(ID)
            assert e.value.reason.startswith("the directory cannot be reached")
    finally:
        await gone.aclose()


# --- over https, as the network's directory: the SMP known by its certificate ---------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestPki:
    return testpki.ensure_test_pki(tmp_path_factory.mktemp("directory-pki"))


def operator_certs(folder: Path, pki: TestPki, now: datetime) -> Path:
    """FOURCORNER_OPERATOR_CERTS_DIR with an SMP certificate of its own per environment, its
    CN ``SMP TEST`` or ``SMP PROD``, under the test PKI's SMP CA."""
    for env in ("test", "prod"):
        smp, smp_key = testpki.issue_leaf(
            pki.smp_ca,
            pki.smp_ca_key,
            f"SMP {env.upper()}",
            not_before=now - timedelta(hours=1),
            not_after=now + timedelta(days=1),
        )
        files = {
            "ap.pem": pki.ap_certificate_pem,
            "ap.key": pki.ap_key_pem,
            "ap-chain.pem": pki.ap_chain_pem,
            "smp.pem": cert_pem(smp),
            "smp.key": testpki.key_pem(smp_key),
            "smp-chain.pem": pki.smp_chain_pem,
        }
        (folder / env).mkdir(parents=True)
        for name, text in files.items():
            (folder / env / name).write_text(text)
    return folder


async def https_indexers(
    pki: TestPki, folder: Path, aiohttp_server: Any, now: datetime
) -> tuple[dict[Environment, Indexer], dict[Environment, str], Path]:
    """A TEST and a PROD indexer over https that ask for a client certificate under the SMP CA,
    their own certificate issued by a new CA of their own; with the file of that CA."""
    ca, ca_key = testpki.new_ca("fourcorner test directory CA")
    server_pem, server_key = server_certificate(ca, ca_key, now)
    for name, text in (
        ("ca.pem", cert_pem(ca)),
        ("server.pem", server_pem),
        ("server.key", server_key),
    ):
        (folder / name).write_text(text)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cadata=pki.smp_chain_pem)
    tls.verify_mode = ssl.CERT_REQUIRED
    tls.load_cert_chain(folder / "server.pem", folder / "server.key")
    indexers, urls = {}, {}
    for env in (TEST, PROD):
        indexers[env] = Indexer()
        urls[env] = str((await aiohttp_server(indexers[env].app(), ssl=tls)).make_url(PATH))
        assert urls[env].startswith("https://127.0.0.1:")
    return indexers, urls, folder / "ca.pem"


async def through(settings: Settings, *steps: tuple[str, Environment]) -> None:
    """Make the directories of ``settings`` and call them: ("publish", TEST), ... in order."""
    made = directory(settings, operator.environments(settings))
    assert isinstance(made, EnvironmentDirectories)
    try:
        for call, env in steps:
            await getattr(made, call)(env, ID)
    finally:
        await made.aclose()


async def test_over_https_each_directory_is_shown_its_environments_smp_certificate(
    pki: TestPki, tmp_path: Path, aiohttp_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the SML of each environment: the TEST directory is reached with the TEST SMP
    certificate, the PROD directory with the PROD one; the directories ask for a client
    certificate under the SMP CA, and their own is trusted as the system's CAs are."""
    now = datetime.now(UTC)
    certs = operator_certs(tmp_path / "certs", pki, now)
    indexers, urls, ca_file = await https_indexers(pki, tmp_path, aiohttp_server, now)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))  # the "system's" CAs
    settings = Settings(
        data_dir=tmp_path,
        operator_certs_dir=str(certs),
        directory_url_test=urls[TEST],
        directory_url_prod=urls[PROD],
    ).check()
    steps = [("publish", TEST), ("withdraw", TEST), ("publish", PROD), ("withdraw", PROD)]
    await through(settings, *steps)
    assert indexers[TEST].clients == ["SMP TEST", "SMP TEST"]
    assert indexers[PROD].clients == ["SMP PROD", "SMP PROD"]
    assert [m for m, _ in indexers[TEST].calls] == ["PUT", "DELETE"] and not indexers[TEST].cards


async def test_over_https_the_directory_is_verified_under_the_directory_ca_file(
    pki: TestPki, tmp_path: Path, aiohttp_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``FOURCORNER_DIRECTORY_CA_FILE``: a directory whose certificate no system CA issued is
    reached when the file holds its CA, and refused (unavailable, nothing sent) without the
    file or with a file of another CA."""
    now = datetime.now(UTC)
    certs = operator_certs(tmp_path / "certs", pki, now)
    indexers, urls, ca_file = await https_indexers(pki, tmp_path, aiohttp_server, now)
    other, _ = testpki.new_ca("another CA")
    (tmp_path / "other.pem").write_text(cert_pem(other))
    # the "system's" CAs: the other CA only
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "other.pem"))
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path / "no-such-folder"))

    def settings(**more: str) -> Settings:
        return Settings(
            data_dir=tmp_path,
            operator_certs_dir=str(certs),
            directory_url_test=urls[TEST],
            directory_url_prod=urls[PROD],
            **more,
        ).check()

    for refused in (settings(), settings(directory_ca_file=str(tmp_path / "other.pem"))):
        for env in (TEST, PROD):
            with pytest.raises(ServiceUnavailable) as e:
                await through(refused, ("publish", env))
            assert "certificate verify failed" in e.value.reason, e.value.reason
    assert indexers[TEST].calls == indexers[PROD].calls == []
    steps = [("publish", TEST), ("publish", PROD), ("withdraw", PROD)]
    await through(settings(directory_ca_file=str(ca_file)), *steps)
    assert indexers[TEST].clients == ["SMP TEST"]
    assert indexers[PROD].clients == ["SMP PROD", "SMP PROD"]
    assert (set(indexers[TEST].cards), set(indexers[PROD].cards)) == ({FULL}, set())
