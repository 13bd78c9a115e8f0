"""The README's embedding example, run as written: the core in another Python system, on the
in-memory adapters, through the same container the server uses."""

from __future__ import annotations

from pathlib import Path

from application import organisations, users
from application.access import Principal
from application.identity import Identity
from application.organisations import CreateOrganisation
from entrypoints.config import Settings
from entrypoints.container import build_container, resolve


async def test_the_readme_embedding_example(tmp_path: Path) -> None:
    path = tmp_path
    container = build_container(Settings(data_dir=path, database_url="memory://"))
    await container.init_resources()
    try:
        ctx = await resolve(container.context)
        user = await users.sign_in(ctx, Identity("u1", "u@example.com"))
        org = await organisations.create(
            ctx, Principal(user=user), CreateOrganisation("2120000787", "ACME", "SE", "SE:ORGNR")
        )
        view = await organisations.get(ctx, Principal(user=user), org.id)
        assert view.org.legal_name == "ACME" and view.org.shared_mode_enabled
        assert not (path / "fourcorner.db").exists()  # memory:// writes no database file
    finally:
        await container.shutdown_resources()
