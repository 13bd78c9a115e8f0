"""Stored records changed behind the service's back, as someone with the database could, and
secrets sealed as the previous release sealed them."""

from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path
from typing import Any

import attrs
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fourcorner.entrypoints.container import resolve


def legacy_seal(api: Any, plaintext: bytes) -> str:
    """``plaintext`` sealed as the previous release sealed stored secrets: v1, under the data
    dir's at-rest key, with no associated data."""
    key = (Path(api.container.settings().data_dir) / "keys" / "at-rest.key").read_bytes()
    nonce = os.urandom(12)
    raw = nonce + AESGCM(key).encrypt(nonce, plaintext, None)
    return "v1:" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


async def record(api: Any, collection: Any, ident: Any) -> Any:
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        return await uow.repository(collection).get(uuid.UUID(str(ident)))


async def tamper(api: Any, collection: Any, ident: Any, **changes: Any) -> Any:
    """Change a stored record behind the service's back, as someone with the database could."""
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        repo = uow.repository(collection)
        changed = attrs.evolve(await repo.get(uuid.UUID(str(ident))), **changes)
        await repo.update(changed)
        await uow.commit()
    return changed
