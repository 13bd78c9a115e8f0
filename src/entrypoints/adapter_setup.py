"""How the settings become adapters and the workers' settings: the factories the container
(``entrypoints.container``) calls, one per choice the settings make (the directory, the
discovery, the blob store's folders, the retry policies), and the resources' opening and
closing."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any

from fourcorner.adapters.directory import EnvironmentDirectories, IndexerDirectoryPublisher
from fourcorner.adapters.pki.revocation import Policy, RevocationChecker
from fourcorner.adapters.pki.tls import client_context
from fourcorner.adapters.smp.discovery import Discovery, FixedDiscovery, SmlDiscovery
from fourcorner.application.delivery import DeliverySettings
from fourcorner.application.locator import ServiceLocator
from fourcorner.application.operator_setup import OperatorEnvironment
from fourcorner.application.ports import DirectoryPublisher
from fourcorner.application.sending import Exchange
from fourcorner.application.storage import Storage
from fourcorner.domain.network_services import Environment
from fourcorner.domain.retry import RetryPolicy
from fourcorner.domain.webhook import MAX_ATTEMPTS
from fourcorner.entrypoints import operator, sml_setup
from fourcorner.entrypoints.config import Settings


def directory(
    settings: Settings, environments: Iterable[OperatorEnvironment]
) -> DirectoryPublisher:
    """The directory's indexer of each environment whose URL is set, as the SML of each
    (``FOURCORNER_DIRECTORY_URL_TEST``, ``_PROD``), reached over https with that environment's
    SMP certificate as TLS client certificate (the directory authenticates the SMP by it). In
    an environment without one, publication is recorded and the business card is served by
    that environment's built-in SMP only: no outside directory is contacted. The directory's
    server certificate is verified under ``FOURCORNER_DIRECTORY_CA_FILE`` when it is set, else
    under the system's CAs. ``environments``: the operator's (``operator.environments``)."""
    own = {e.environment: e for e in environments}
    urls = {
        Environment.TEST: settings.directory_url_test,
        Environment.PROD: settings.directory_url_prod,
    }
    indexers = {}
    for env, url in urls.items():
        if url:
            https = url.lower().startswith("https://")
            tls = smp_client(own[env], settings.directory_ca_file) if https else None
            indexers[env] = IndexerDirectoryPublisher(url, ssl=tls)
    return EnvironmentDirectories(indexers)


def revocation(settings: Settings) -> RevocationChecker:
    """The revocation check of peers' certificates (OCSP, else their CA's revocation list),
    by ``FOURCORNER_REVOCATION`` (``off``, ``soft`` or ``hard``), each answer fetched within
    ``FOURCORNER_REVOCATION_TIMEOUT`` seconds, waited for
    ``FOURCORNER_REVOCATION_WAIT_SECONDS`` by a first check, and used
    ``FOURCORNER_REVOCATION_GRACE_SECONDS`` past its nextUpdate."""
    return RevocationChecker(
        Policy(settings.revocation.strip().lower()),
        wait=settings.revocation_wait_seconds,
        grace=timedelta(seconds=settings.revocation_grace_seconds),
        timeout=settings.revocation_timeout,
    )


def smp_client(own: OperatorEnvironment, cafile: str = "") -> ssl.SSLContext:
    """A TLS client context presenting the operator's SMP certificate of an environment,
    verifying the server under the CAs of ``cafile`` (empty: the system's)."""
    return client_context(own.smp_cert_pem, own.smp_key_pem, own.smp_chain_pem, cafile or None)


async def opened(storage: Storage) -> AsyncIterator[Storage]:
    await storage.open()
    try:
        yield storage
    finally:
        await storage.close()


async def closing(resource: Any) -> AsyncIterator[Any]:
    try:
        yield resource
    finally:
        await resource.aclose()


BLOBS_DIR = "blobs"


def blob_dir(data_dir: Path) -> Path:
    return Path(data_dir) / BLOBS_DIR


def or_none(value: str) -> str | None:
    return value or None


def spool_dir(data_dir: Path) -> Path:
    return Path(data_dir) / BLOBS_DIR / "incoming"


async def opened_blobs(store: Any) -> AsyncIterator[Any]:
    """A blob store in the database opens its connections first and closes them last."""
    if not hasattr(store, "open"):
        yield store
        return
    await store.open()
    try:
        yield store
    finally:
        await store.close()


def lookup_url(settings: Settings) -> str | dict[Environment, str]:
    """``FOURCORNER_SMP_LOOKUP_URL`` for every environment, else the built-in SMP of each."""
    return settings.smp_lookup_url or operator.smp_urls(settings)


def discovery(settings: Settings) -> Discovery:
    if settings.discovery_mode == "sml":
        zones = {Environment.TEST: settings.sml_zone_test, Environment.PROD: settings.sml_zone_prod}
        return SmlDiscovery(zones, settings.nameservers, timeout=settings.dns_timeout)
    return FixedDiscovery(lookup_url(settings))


def exchange(settings: Settings, lookup: Any, transport: Any, reader: Any) -> Exchange:
    return Exchange(
        lookup=lookup,
        transport=transport,
        reader=reader,
        seat_id=settings.seat_id,
        retry=RetryPolicy(
            tuple(timedelta(seconds=d) for d in settings.sending_delays), settings.send_attempts
        ),
        confirm_window=timedelta(seconds=settings.mls_confirm_seconds),
        lease=timedelta(seconds=settings.send_lease_seconds),
    )


def locator(settings: Settings, environments: Iterable[OperatorEnvironment]) -> ServiceLocator:
    """The network's SML per environment (``entrypoints.sml_setup``), or none."""
    return sml_setup.locator(settings, environments)


def directory_delays(settings: Settings) -> tuple[timedelta, ...]:
    """The waits before the directory is asked again (``FOURCORNER_DIRECTORY_RETRY_DELAYS``)."""
    return tuple(timedelta(seconds=s) for s in settings.directory_delays)


def seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


def delivery_settings(settings: Settings) -> DeliverySettings:
    first, second = settings.retry_delays
    return DeliverySettings(
        retry=RetryPolicy((timedelta(seconds=first), timedelta(seconds=second)), MAX_ATTEMPTS),
        hex_signature_header=settings.webhook_hex_signature_header,
        concurrency=settings.webhook_concurrency,
        per_host=settings.webhook_per_host,
        lease=timedelta(seconds=settings.webhook_lease_seconds),
    )
