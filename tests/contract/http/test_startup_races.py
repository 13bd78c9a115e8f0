"""Processes of one deployment starting at once on a new database, as an orchestrator starts
its replicas: each must start (``asyncio.gather`` of two servers' start, many rounds, each
on a fresh PostgreSQL schema and a shared data dir), and the operator's records are made
once.

``operator_setup.ensure_operator`` reads whether the operator's organisation, certificates,
SMPs and access points exist and adds those it did not find; the process that commits second
clashes, and looks again (as ``sml.ensure_smp`` does): it finds them there.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

import pg
from fourcorner.application.collections import (
    ACCESS_POINTS,
    CERTIFICATES,
    ORGANISATIONS,
    PARTICIPANTS,
    SMPS,
)
from fourcorner.entrypoints.container import build_container, resolve, settle, web_app

from .conftest import settings_for

ROUNDS = 6


@pytest.mark.postgres
async def test_two_processes_starting_at_once_on_a_new_database_both_start(
    tmp_path: Path, shared_pki: Path, validator: Any
) -> None:
    shutil.copytree(shared_pki, tmp_path / "pki")
    failed = []
    for round_ in range(ROUNDS):
        with pg.fresh_schema("fc_http") as schema:
            settings = settings_for("postgres", tmp_path, schema)
            containers = [build_container(settings, validator=validator) for _ in "ab"]
            started = await asyncio.gather(
                *(web_app(container) for container in containers), return_exceptions=True
            )
            failed += [(round_, repr(app)) for app in started if isinstance(app, BaseException)]
            if not failed:
                made = await _made(containers[0])
                if made != _once(containers[0]):
                    failed.append((round_, made))
            for container in containers:  # their pools close before the schema goes
                await settle(container.shutdown_resources())
    assert not failed, failed


async def _made(container: Any) -> dict[str, int]:
    """How many records of each of the operator's kinds the new database holds."""
    ctx = await resolve(container.context)
    async with ctx.uow() as uow:
        return {c.name: await uow.repository(c).count() for c in _KINDS}


def _once(container: Any) -> dict[str, int]:
    """What one process's start makes: the operator organisation; per environment its AP and
    SMP certificates, its SMP, its access point and its own participant ``0242:<spid>``."""
    envs = len(container.operator_environments())
    return dict(zip((c.name for c in _KINDS), (1, 2 * envs, envs, envs, envs), strict=True))


_KINDS = (ORGANISATIONS, CERTIFICATES, SMPS, ACCESS_POINTS, PARTICIPANTS)
