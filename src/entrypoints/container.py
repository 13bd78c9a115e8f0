"""The one composition root: every adapter is built here, from ``Settings``.

The server, the CLI commands and the test fixtures all build their objects through
``build_container``; embedders call it too (with ``memory://`` and their own overrides).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import socket
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from aiohttp import web
from dependency_injector import containers, providers

from fourcorner.adapters.as4.service import As4MessageReader, As4Transport
from fourcorner.adapters.auth import CachingTokenVerifier, LocalTokenAuthority, OidcTokenVerifier
from fourcorner.adapters.blobs import FileBlobStore, InMemoryBlobStore
from fourcorner.adapters.codelists import load_catalogue
from fourcorner.adapters.memory import InMemoryStorage
from fourcorner.adapters.pki.inspector import TrustAnchorInspector
from fourcorner.adapters.pki.sealing import KeySealer
from fourcorner.adapters.postgres import PostgresStorage, failures
from fourcorner.adapters.postgres.blobs import PostgresBlobStore
from fourcorner.adapters.sbdh.port import SbdhEnvelopes
from fourcorner.adapters.smp.client import SmpLookupClient
from fourcorner.adapters.smp.lookup import SmpParticipantLookup
from fourcorner.adapters.smp.reader import SmpReader
from fourcorner.adapters.smp.registrar import StoredSmpRegistrar
from fourcorner.adapters.sqlite import SqliteStorage
from fourcorner.adapters.system import random_id, system_clock, system_clock_ns
from fourcorner.adapters.validation import SaxonValidator
from fourcorner.adapters.webhooks import Http1WebhookSender
from fourcorner.application import certificate_keys, operator_setup, sealed, sml
from fourcorner.application.collections import DELIVERIES, LOCATOR_TASKS, TRANSACTIONS
from fourcorner.application.context import Context, Network
from fourcorner.application.delivery import DeliveryWorker
from fourcorner.application.directory_worker import DirectoryWorker
from fourcorner.application.sending import SendingWorker
from fourcorner.application.sweep import BlobSweeper
from fourcorner.application.transactions import Documents
from fourcorner.application.webhooks import WebhookSettings
from fourcorner.domain.envelope import seat_spid
from fourcorner.entrypoints import adapter_setup as setup
from fourcorner.entrypoints import lease_checks, markers, operator, operator_guard
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.http import handlers, routes, server
from fourcorner.entrypoints.http.address_limit import AddressLimit, spool_share
from fourcorner.entrypoints.http.app import build_app
from fourcorner.entrypoints.http.auth import Authenticator
from fourcorner.entrypoints.http.catalogue_handlers import RenderCache
from fourcorner.entrypoints.http.converter import make_converter
from fourcorner.entrypoints.http.metrics import Metrics
from fourcorner.entrypoints.http.proxy import TrustedProxies
from fourcorner.entrypoints.http.responses import ResponsePayloads
from fourcorner.entrypoints.http.routing import Route, dependencies
from fourcorner.entrypoints.http.throttle import FailureTracker
from fourcorner.entrypoints.http.validation_handlers import Checks
from fourcorner.entrypoints.http.webhook_handlers import TriggerTurns
from fourcorner.entrypoints.preflight import StartupError
from fourcorner.entrypoints.worker_loops import Worker, WorkerLoops

log = logging.getLogger("fourcorner.workers")


class Container(containers.DeclarativeContainer):
    """Handlers name what they need as ``Provide["provider"]`` defaults; ``web_app`` checks
    that each names a provider (``markers.check_markers``), resolves them once and binds them
    (``entrypoints.http.routing.bind``).

    Settings reach the providers one way, from the ``Settings`` object: a provider that needs
    several takes ``settings``, one that needs a value takes ``config.<name>``, which is
    ``settings.<name>`` read when the provider is built (``config`` is ``settings.provided``;
    ``entrypoints.markers.SETTINGS_PROVIDER``).
    """

    settings = providers.Dependency(instance_of=Settings)
    config = settings.provided

    storage_adapter = providers.Selector(
        config.storage_kind,
        memory=providers.Singleton(InMemoryStorage),
        sqlite=providers.Singleton(SqliteStorage, config.sqlite_path),
        postgres=providers.Singleton(
            PostgresStorage,
            config.database,
            # unset: the tables go where the server's search_path puts them
            schema=providers.Callable(setup.or_none, config.database_schema),
            max_size=config.db_pool_size,
            # the outboxes: workers of other processes are woken by these commits
            announce=(DELIVERIES.name, TRANSACTIONS.name, LOCATOR_TASKS.name),
        ),
    )
    # Opened (and migrated) by init_resources(), closed by shutdown_resources().
    storage = providers.Resource(setup.opened, storage_adapter)

    catalogue = providers.Singleton(load_catalogue)
    # what time it is, for the use cases and the token authorities (tests move it)
    clock = providers.Object(system_clock)

    token_authority = providers.Singleton(
        LocalTokenAuthority, providers.Callable(Path, config.data_dir), clock=clock
    )
    token_verifier_adapter = providers.Selector(
        config.auth_mode,
        local=token_authority,
        oidc=providers.Singleton(
            OidcTokenVerifier,
            config.oidc_issuer,
            config.oidc_audience,
            config.oidc_jwks_url,
            superadmin_claim=config.oidc_superadmin_claim,
            clock=clock,
        ),
    )
    token_verifier = providers.Resource(
        setup.closing,
        providers.Singleton(CachingTokenVerifier, token_verifier_adapter, clock=clock),
    )

    trust_anchors = providers.Singleton(operator.trust_anchors, settings)
    sealer = providers.Singleton(
        KeySealer.from_config,
        config.at_rest_key,
        providers.Callable(Path, config.data_dir),
        config.at_rest_key_previous,
    )
    smp_registrar = providers.Singleton(StoredSmpRegistrar)
    # the operator's certificates and keys of each environment: their files are read once,
    # when a start first needs them (the guard, the SML, the directory, the stored records)
    operator_environments = providers.Singleton(operator.environments, settings)
    # the directory of each environment, where business cards are published
    directory = providers.Resource(
        setup.closing, providers.Singleton(setup.directory, settings, operator_environments)
    )
    # the network's SML, where the built-in SMP registers itself and its participants
    locator = providers.Resource(
        setup.closing, providers.Singleton(setup.locator, settings, operator_environments)
    )
    # the anchors read at the first check (not for a stored certificate's public key)
    certificate_inspector = providers.Singleton(TrustAnchorInspector, trust_anchors.provider)
    network = providers.Singleton(
        Network,
        smp=smp_registrar,
        certificates=certificate_inspector,
        sealer=sealer,
        directory=directory,
        ap_host=config.access_point_host,
        locator=locator,
        directory_delays=providers.Callable(setup.directory_delays, settings),
        directory_attempts=config.directory_attempts,
    )
    context = providers.Singleton(
        Context,
        uow=storage.provided.unit_of_work,
        reader=storage.provided.reader,
        stamp=storage.provided.read_stamp,
        catalogue=catalogue,
        clock=clock,
        clock_ns=providers.Object(system_clock_ns),
        new_id=providers.Object(random_id),
    )
    smp_reader = providers.Singleton(
        SmpReader,
        storage.provided.reader,
        smp_registrar,
        sealer,
        providers.Callable(lambda base, prefix: base + prefix, config.base_url, config.smp_prefix),
        technical_contact=config.smp_technical_contact,
    )

    webhook_settings = providers.Singleton(
        WebhookSettings, allow_private_targets=config.webhook_allow_private_targets
    )
    webhook_sender = providers.Resource(
        setup.closing,
        providers.Singleton(
            Http1WebhookSender,
            timeout=config.webhook_timeout,
            allow_private_targets=config.webhook_allow_private_targets,
            # a kept connection for every send the worker may have in flight (with the
            # default 100, 28 of its 128 sends waited for one)
            limit=config.webhook_concurrency,
            clock=clock,  # a busy endpoint's Retry-After date is a wait from now
        ),
    )
    delivery_settings = providers.Singleton(setup.delivery_settings, settings)
    delivery_worker = providers.Singleton(
        DeliveryWorker, context, sealer, webhook_sender, delivery_settings
    )
    # Raising an event wakes the delivery worker of this process at once (when it runs one;
    # other processes' workers are woken by the storage's announcements).
    delivery_wake = delivery_worker.provided.wake

    blob_files = providers.Singleton(
        FileBlobStore, providers.Callable(setup.blob_dir, config.data_dir)
    )
    blob_adapter = providers.Selector(
        config.blob_kind,  # FOURCORNER_BLOB_STORE
        memory=providers.Singleton(InMemoryBlobStore),
        filesystem=blob_files,
        postgres=providers.Singleton(
            PostgresBlobStore,
            config.database,
            spool=providers.Callable(setup.spool_dir, config.data_dir),
            schema=providers.Callable(setup.or_none, config.database_schema),
            max_size=config.db_pool_size,
            files=blob_files,  # blobs stored before the switch are still read from there
        ),
    )
    blobs = providers.Resource(setup.opened_blobs, blob_adapter)
    # How a sender finds a receiver's SMP (the SML by DNS, or one fixed SMP), and what it
    # trusts there, per environment.
    discovery = providers.Singleton(setup.discovery, settings)
    # OCSP answers and the revocation lists of the network's CAs, asked by every check of a
    # peer's certificate
    revocation = providers.Singleton(setup.revocation, settings)
    # nothing depends on it: shutdown_resources() stops its fetches and closes its session
    revocation_closed = providers.Resource(setup.closing, revocation)
    network_trust = providers.Singleton(
        operator.trust_of, settings, operator_environments, revocation
    )
    # Worker processes run the rules; none starts before the first document.
    validator = providers.Resource(
        setup.closing,
        providers.Singleton(
            SaxonValidator,
            workers=config.validation_workers,
            timeout=config.validation_timeout,
            # answers kept for the same bytes checked again (one server on both sides)
            cache=providers.Callable(lambda mib: mib * 1024 * 1024, config.validation_cache_mib),
        ),
    )
    # POST /validation's checks running in this process: at most one, refused beyond it
    validation_checks = providers.Singleton(Checks)
    # test events each organisation may raise a minute, in this process
    test_events = providers.Singleton(TriggerTurns)
    converter = providers.Singleton(make_converter)
    # events and stored summaries show records as the interface does
    event_payloads = providers.Singleton(ResponsePayloads, converter)
    documents = providers.Singleton(
        Documents,
        blobs=blobs,
        envelopes=providers.Singleton(SbdhEnvelopes),
        max_bytes=config.max_document_bytes,
        validator=validator,
        payloads=event_payloads,
    )
    participant_lookup = providers.Resource(
        setup.closing,
        providers.Singleton(
            SmpParticipantLookup,
            providers.Singleton(
                SmpLookupClient,
                discovery,
                network_trust,
                allow_http=config.allow_http_peers,
                timeout=config.smp_timeout,
            ),
        ),
    )
    ap_transport = providers.Resource(
        setup.closing, providers.Singleton(As4Transport, timeout=config.as4_timeout)
    )
    message_reader = providers.Singleton(
        As4MessageReader,
        providers.Callable(operator.certificate_check, settings, revocation),
        max_payload=config.max_document_bytes,
        environment_checks=providers.Callable(operator.sender_checks, network_trust),
    )
    exchange = providers.Singleton(
        setup.exchange, settings, participant_lookup, ap_transport, message_reader
    )
    sending_worker = providers.Singleton(SendingWorker, context, sealer, documents, exchange)
    locator_worker = providers.Singleton(
        sml.LocatorWorker,
        context,
        network,
        lease=providers.Callable(lease_checks.locator_lease, settings),
    )
    directory_worker = providers.Singleton(DirectoryWorker, context, network)
    # how many inbound AS4 messages are read and taken in at once; more wait for their turn
    as4_gate = providers.Singleton(asyncio.Semaphore, config.as4_inbound_concurrency)
    # how many inbound AS4 messages larger than spooling.CHUNK (or of no announced length) are
    # on disk at once, taken in or waiting for the gate; more wait for theirs unread
    as4_spools = providers.Singleton(
        asyncio.Semaphore, providers.Callable(lambda gate: gate * 2, config.as4_inbound_concurrency)
    )
    # how many smaller ones are held in memory at once, taken in or waiting for the gate
    as4_readers = providers.Singleton(
        asyncio.Semaphore, providers.Callable(lambda gate: gate * 8, config.as4_inbound_concurrency)
    )
    # how many inbound AS4 messages one client address may have in flight at once
    as4_per_address = providers.Singleton(AddressLimit, config.as4_inbound_per_address)
    # how many of the places on disk one client address may hold at once (a quarter)
    as4_spools_per_address = providers.Singleton(
        AddressLimit,
        providers.Callable(
            lambda gate, per: spool_share(gate * 2, per),
            config.as4_inbound_concurrency,
            config.as4_inbound_per_address,
        ),
        large=True,
    )
    blob_sweeper = providers.Singleton(
        BlobSweeper,
        context,
        blobs,
        grace=providers.Callable(setup.seconds, config.blob_sweep_grace_seconds),
        interval=providers.Callable(setup.seconds, config.blob_sweep_interval_seconds),
    )
    # A transaction to send wakes the sending worker of this process, as ``delivery_wake``.
    sending_wake = sending_worker.provided.wake
    # the worker loops this process runs, for GET /readyz
    worker_loops = providers.Singleton(WorkerLoops)
    render_cache = providers.Singleton(RenderCache)
    metrics = providers.Singleton(Metrics, config.metrics_token)
    auth_throttle = providers.Singleton(
        FailureTracker,
        config.auth_failure_limit,
        config.auth_failure_window,
        max_tracked=config.auth_failure_tracked,
    )
    authenticator = providers.Singleton(Authenticator, context, token_verifier, auth_throttle)

    route_table = providers.Singleton(routes.routes, config.smp_prefix, config.as4_prefix)
    app = providers.Factory(
        build_app,
        routes=route_table,
        converter=converter,
        authenticate=authenticator,
        max_body=config.max_body_bytes,
        metrics=metrics,
        hsts=config.https,
        # the reverse proxies whose forwarding headers name the client (TRUSTED_PROXIES)
        proxies=providers.Singleton(TrustedProxies, config.proxy_networks),
    )


async def resolve(provider: Any) -> Any:
    """A provider's value, awaiting it when it depends on an async resource."""
    value = provider()
    return await value if inspect.isawaitable(value) else value


async def settle(step: Awaitable[None] | None) -> None:
    """``init_resources()`` or ``shutdown_resources()`` done: dependency_injector returns an
    awaitable when the container has an async resource (here the storage), else None."""
    if step is not None:
        await step


def build_container(settings: Settings | None = None, **overrides: Any) -> Container:
    """A wired container for ``settings`` (default: the environment)."""
    container = Container()
    container.settings.override(providers.Object(settings or Settings.load()))
    for name, value in overrides.items():
        getattr(container, name).override(providers.Object(value))
    return container


async def _workers(container: Container) -> list[Worker]:
    """The three outbox workers (webhooks, sending, SML registrations), each woken by commits
    to its outbox (of any process that announces them: PostgreSQL), so they need not wait for
    their next poll; the blob sweep, which runs every ``FOURCORNER_BLOB_SWEEP_INTERVAL_SECONDS``;
    and the directory's retries, which poll for business cards due to be asked for again."""
    deliverer = await resolve(container.delivery_worker)
    sender = await resolve(container.sending_worker)
    registrar = await resolve(container.locator_worker)
    storage = await resolve(container.storage)
    storage.watch({DELIVERIES.name}, deliverer.wake)
    storage.watch({TRANSACTIONS.name}, sender.wake)
    storage.watch({LOCATOR_TASKS.name}, registrar.wake)
    sweeper = await resolve(container.blob_sweeper)
    return [deliverer, sender, sweeper, registrar, await resolve(container.directory_worker)]


def share_failures(container: Container) -> None:
    """On PostgreSQL, the failed authentications this process counts are told to the other
    processes of the database, and theirs counted here (``adapters.postgres.failures``): before
    the storage opens, whose listener carries them, authenticated by a key derived from the
    at-rest key (which the processes of one database share). Memory and SQLite: each process
    its own."""
    storage = container.storage_adapter()
    throttle: FailureTracker = container.auth_throttle()
    if isinstance(storage, PostgresStorage) and throttle.counts:
        keys = container.sealer().derived(failures.LABEL)
        throttle.share(storage.share_failures(throttle.heard, keys))


async def _ensure_smp(container: Container) -> None:
    """The SMP's own registration in the SML of each environment that has one, queued at
    start (``application.sml.ensure_smp``); the participants' follow once it is done."""
    ctx = await resolve(container.context)
    urls = {e.environment: e.smp_url for e in container.operator_environments()}
    await sml.ensure_smp(ctx, await resolve(container.network), urls)


async def migrate_data(container: Container, *, reseal: bool = True) -> None:
    """The data migrations that need the application's ports (the schema's ran when the
    storage opened): certificates stored before their public keys were kept get them, and,
    with ``reseal``, secrets sealed before they were bound to their records are sealed again,
    bound. Both are idempotent and safe beside other processes; ``fourcorner serve`` runs them
    before it serves, and ``fourcorner migrate`` runs them too (the second only with an
    at-rest key: see ``commands.migrate``)."""
    ctx = await resolve(container.context)
    await certificate_keys.record_all(ctx, await resolve(container.certificate_inspector))
    if reseal:
        await sealed.reseal_all(ctx, await resolve(container.sealer))


async def web_app(container: Container, *, workers: bool = False) -> web.Application:
    """The aiohttp app, its resources opened now and closed when the app shuts down; with
    ``workers``, the delivery workers run inside the same process. ``UnknownProvider``
    before anything is opened when a handler names a provider the container does not have;
    ``StartupError`` when this process's certificate files are not (the successors of)
    those the database holds (``operator_guard``)."""
    table = container.route_table()
    markers.check_markers(container, table)
    settings = container.settings()
    # before anything makes a test PKI: a process without the stored certificates' files
    await asyncio.to_thread(operator_guard.check, settings, container.operator_environments)
    share_failures(container)
    await settle(container.init_resources())
    ctx = await resolve(container.context)
    spid = seat_spid(settings.seat_id)
    try:
        await operator_setup.ensure_operator(
            ctx, await resolve(container.network), container.operator_environments(), spid
        )
    except operator_setup.CertificateKept as e:  # another process stored others meanwhile
        await settle(container.shutdown_resources())
        raise StartupError(operator_guard.kept_line(settings, e)) from None
    except operator_setup.SeatChanged as e:
        await settle(container.shutdown_resources())
        raise StartupError(operator_guard.seat_line(settings, e)) from None
    await migrate_data(container)
    await _ensure_smp(container)
    stop = asyncio.Event()
    running: list[asyncio.Task[None]] = []
    started = await _workers(container) if workers else []
    app = await _app(container, table)

    async def start(_: web.Application) -> None:
        running.extend(container.worker_loops().start(started, stop))

    async def close(_: web.Application) -> None:
        stop.set()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        await settle(container.shutdown_resources())

    app.on_startup.append(start)
    app.on_cleanup.append(close)
    return app


async def _app(container: Container, table: list[Route], **kwargs: Any) -> web.Application:
    """The container's app of the routes ``table``, their handlers' dependencies bound."""
    provided = {
        name: await resolve(markers.provider(container, name)) for name in dependencies(table)
    }
    app = container.app(routes=table, provided=provided, **kwargs)
    return await app if inspect.isawaitable(app) else app


async def worker_app(container: Container) -> web.Application:
    """What ``fourcorner worker`` serves on ``FOURCORNER_WORKER_PORT``: ``/healthz``,
    ``/readyz`` (the database, and this process's worker loops) and ``/metrics`` (with
    ``FOURCORNER_METRICS_TOKEN`` as on ``serve``), behind ``serve``'s edge (``build_app``), and
    nothing else (no API document). The resources are the worker's (``run_workers``)."""
    table = list(handlers.WORKER_ROUTES)
    markers.check_markers(container, table)
    return await _app(container, table, document=False)


# seconds between two looks for the operator's certificates, by a worker started before serve
OPERATOR_POLL = 2.0
STARTING = "the workers are starting"
NO_OPERATOR = (
    "the workers wait for the operator's certificates: the database holds none yet, "
    "fourcorner serve stores them at its first start"
)


async def run_workers(
    container: Container, stop: asyncio.Event, sock: socket.socket | None = None
) -> None:
    """The workers alone (``fourcorner worker``), until ``stop`` is set; with ``sock`` (a
    listening socket), ``worker_app`` is served on it meanwhile, with ``serve``'s bounds
    of a connection (``FOURCORNER_HTTP_IDLE_SECONDS``, ``…_CONNECTIONS_PER_ADDRESS``).
    ``StartupError`` first when this data dir has no copy of the stored certificates
    (``operator_guard``). On a database without them the workers wait for them
    (``operator_stored``) before anything reads this data dir's certificate files."""
    settings = container.settings()
    files = container.operator_environments
    stored = await asyncio.to_thread(operator_guard.check, settings, files)
    container.worker_loops().waiting = STARTING  # not ready until the loops have started
    async with contextlib.AsyncExitStack() as running:
        running.push_async_callback(lambda: settle(container.shutdown_resources()))
        if sock is not None:
            # before the storage opens: its /metrics counts failed authentications with serve's
            share_failures(container)
            # served before the loops start: its metrics count their first events
            app = await worker_app(container)
            edge = server.Edge.of(settings)
            await running.enter_async_context(server.listening(app, sock=sock, edge=edge))
        # memory://: the database is this process's own, where no serve stores anything
        waits = not stored and settings.storage_kind != "memory"
        if waits and not await operator_stored(container, stop):
            return
        await settle(container.init_resources())
        await _ensure_smp(container)
        workers = await _workers(container)
        await asyncio.gather(*container.worker_loops().start(workers, stop))


async def operator_stored(container: Container, stop: asyncio.Event) -> bool:
    """Wait until the database holds the operator's certificates, looking every
    ``OPERATOR_POLL`` seconds; True once it does and this data dir's files are theirs
    (``StartupError`` when not, as at start), False when ``stop`` is set first. Only
    ``fourcorner serve`` stores them (and makes the test PKI when there is no other): a worker
    that made its own would sign with certificates the network is not told of. The worker
    says so once in the log, and is not ready meanwhile (``WorkerLoops.waiting``)."""
    settings, loops = container.settings(), container.worker_loops()
    log.warning(
        f"{NO_OPERATOR}; they start once it has",
        extra={"event": "worker.waiting", "poll_seconds": OPERATOR_POLL},
    )
    loops.waiting = NO_OPERATOR
    failed: set[str] = set()  # the kinds of failed looks logged
    try:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), OPERATOR_POLL)
                return False
            try:
                stored = await asyncio.to_thread(operator_guard.stored_certificates, settings)
            except operator_guard.READ_ERRORS as e:
                _look_failed(settings, e, failed)
                continue
            except ValueError as e:  # a stored record is no certificate's: as at start
                raise StartupError(str(e)) from None
            if not stored:
                continue  # nothing to check yet
            line = await asyncio.to_thread(
                operator_guard.refusal, settings, stored, container.operator_environments
            )
            if line is not None:
                raise StartupError(line)
            log.info(
                "the operator's certificates are stored: the workers start",
                extra={"event": "worker.waited"},
            )
            return True
        return False
    finally:
        loops.waiting = STARTING


def _look_failed(settings: Settings, error: Exception, failed: set[str]) -> None:
    """A look of ``operator_stored`` failed (the database restarts, say): logged once for
    each kind of error, and looked again at the next poll."""
    kind = f"{type(error).__module__}.{type(error).__qualname__}"
    if kind in failed:
        return
    failed.add(kind)
    log.warning(
        f"{operator_guard.read_problem(settings, error)}; the worker looks again every "
        f"{OPERATOR_POLL:g} seconds",
        extra={"event": "worker.wait_failed", "problem": kind},
    )
