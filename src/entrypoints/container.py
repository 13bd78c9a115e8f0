"""The one composition root: every adapter is built here, from ``Settings``.

The server, the CLI commands and the test fixtures all build their objects through
``build_container``; embedders call it too (with ``memory://`` and their own overrides).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aiohttp import web
from dependency_injector import containers, providers

from adapters.auth import CachingTokenVerifier, LocalTokenAuthority, OidcTokenVerifier
from adapters.codelists import load_catalogue
from adapters.directory import IndexerDirectoryPublisher
from adapters.memory import InMemoryStorage
from adapters.memory.smp import InMemoryDirectory
from adapters.pki.inspector import TrustAnchorInspector
from adapters.pki.sealing import KeySealer
from adapters.postgres import PostgresStorage
from adapters.smp.reader import SmpReader
from adapters.smp.registrar import StoredSmpRegistrar
from adapters.sqlite import SqliteStorage
from application import infrastructure
from application.context import Context, Network
from application.ports import DirectoryPublisher
from application.storage import Storage
from entrypoints import operator
from entrypoints.config import Settings
from entrypoints.http import routes
from entrypoints.http.app import build_app
from entrypoints.http.auth import Authenticator
from entrypoints.http.catalogue_handlers import RenderCache
from entrypoints.http.converter import make_converter


def _directory(url: str) -> DirectoryPublisher:
    """The directory's indexer when one is configured; otherwise publication is recorded and
    the business card is served by the built-in SMP, and no outside directory is contacted."""
    return IndexerDirectoryPublisher(url) if url else InMemoryDirectory()


async def _opened(storage: Storage) -> AsyncIterator[Storage]:
    await storage.open()
    try:
        yield storage
    finally:
        await storage.close()


async def _closing(verifier: CachingTokenVerifier) -> AsyncIterator[CachingTokenVerifier]:
    try:
        yield verifier
    finally:
        await verifier.aclose()


class Container(containers.DeclarativeContainer):
    wiring_config = containers.WiringConfiguration(
        modules=[
            "entrypoints.http.handlers",
            "entrypoints.http.catalogue_handlers",
            "entrypoints.http.network_handlers",
            "entrypoints.http.smp_handlers",
        ]
    )

    config = providers.Configuration(strict=True)

    storage_adapter = providers.Selector(
        config.storage_kind,
        memory=providers.Singleton(InMemoryStorage),
        sqlite=providers.Singleton(SqliteStorage, config.sqlite_path),
        postgres=providers.Singleton(
            PostgresStorage,
            config.database,
            schema=config.database_schema,
            max_size=config.db_pool_size,
        ),
    )
    # Opened (and migrated) by init_resources(), closed by shutdown_resources().
    storage = providers.Resource(_opened, storage_adapter)

    catalogue = providers.Singleton(load_catalogue)

    token_authority = providers.Singleton(
        LocalTokenAuthority, providers.Callable(Path, config.data_dir)
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
        ),
    )
    token_verifier = providers.Resource(
        _closing, providers.Singleton(CachingTokenVerifier, token_verifier_adapter)
    )

    settings = providers.Dependency(instance_of=Settings)
    trust_anchors = providers.Singleton(operator.trust_anchors, settings)
    sealer = providers.Singleton(
        KeySealer.from_config, config.at_rest_key, providers.Callable(Path, config.data_dir)
    )
    smp_registrar = providers.Singleton(StoredSmpRegistrar)
    directory = providers.Singleton(_directory, config.directory_url)
    network = providers.Singleton(
        Network,
        smp=smp_registrar,
        certificates=providers.Singleton(TrustAnchorInspector, trust_anchors),
        sealer=sealer,
        directory=directory,
        ap_host=config.access_point_host,
    )
    context = providers.Singleton(
        Context, uow=storage.provided.unit_of_work, catalogue=catalogue, network=network
    )
    smp_reader = providers.Singleton(
        SmpReader,
        storage.provided.unit_of_work,
        smp_registrar,
        sealer,
        providers.Callable(lambda base, prefix: base + prefix, config.base_url, config.smp_prefix),
    )
    operator_environments = providers.Callable(operator.environments, settings)
    converter = providers.Singleton(make_converter)
    render_cache = providers.Singleton(RenderCache)
    authenticator = providers.Singleton(Authenticator, context, token_verifier)

    app = providers.Factory(
        build_app,
        routes=providers.Callable(routes.routes, config.smp_prefix),
        converter=converter,
        authenticate=authenticator,
        max_body=config.max_body_bytes,
    )


async def resolve(provider: Any) -> Any:
    """A provider's value, awaiting it when it depends on an async resource."""
    value = provider()
    return await value if inspect.isawaitable(value) else value


def build_container(settings: Settings | None = None, **overrides: Any) -> Container:
    """A wired container for ``settings`` (default: the environment)."""
    container = Container()
    settings = settings or Settings.load()
    container.config.from_dict(settings.as_config())
    container.settings.override(providers.Object(settings))
    for name, value in overrides.items():
        getattr(container, name).override(providers.Object(value))
    container.wire()
    return container


async def web_app(container: Container) -> web.Application:
    """The aiohttp app, its resources opened now and closed when the app shuts down."""
    await container.init_resources()
    app = await resolve(container.app)
    ctx = await resolve(container.context)
    await infrastructure.ensure_operator(ctx, container.operator_environments())

    async def close(_: web.Application) -> None:
        await container.shutdown_resources()

    app.on_cleanup.append(close)
    return app
