"""Random sequences of participant changes keep the SMP's view equal to the database's."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from core_world import started
from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.application import (
    participants,
)
from fourcorner.application.collections import PARTICIPANTS
from fourcorner.application.participants import (
    CreateParticipant,
    SupportedDocumentTypes,
    UpdateParticipant,
)
from fourcorner.domain.checkdigits import gs1_check_digit
from fourcorner.domain.network_services import Environment
from fourcorner.domain.participant import SupportedDocumentType
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container

_PKI = Path(tempfile.mkdtemp(prefix="fc-pki-"))
ensure_test_pki(_PKI)


def gln(n: int) -> str:
    payload = f"730002{n:06d}"
    return f"0088:{payload}{gs1_check_digit(payload)}"


class SmpMirrorsDatabase(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.dir = Path(tempfile.mkdtemp(prefix="fc-smp-"))
        shutil.copytree(_PKI / "pki", self.dir / "pki")
        self.container = build_container(Settings(data_dir=self.dir, database_url="memory://"))
        self.runner.run(self._start())

    async def _start(self) -> None:
        world = await started(self.container)
        self.ctx, self.net, self.me = world.ctx, world.net, world.me
        self.org, self.smp, self.ap = world.org, world.smp, world.ap
        docs = [d for d in self.ctx.catalogue.document_types if d.state == "active"][:6]
        self.entries = [SupportedDocumentType(d.id, d.process_ids[0].process_id) for d in docs]

    def teardown(self) -> None:
        self.runner.run(self.container.shutdown_resources())
        self.runner.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    async def _ids(self):
        async with self.ctx.uow() as uow:
            return await uow.repository(PARTICIPANTS).all(orgId=self.org)

    @rule(n=st.integers(0, 5))
    def create(self, n: int) -> None:
        cmd = CreateParticipant(f"p{n}", gln(n), self.smp, self.ap)
        try:
            self.runner.run(participants.create(self.ctx, self.net, self.me, self.org, cmd))
        except Exception as e:  # a second create of the same identifier
            assert type(e).__name__ == "Conflict"

    @rule(i=st.integers(0, 10), name=st.text(min_size=1, max_size=5).filter(str.strip))
    def rename(self, i: int, name: str) -> None:
        found = self.runner.run(self._ids())
        if found:
            p = found[i % len(found)]
            self.runner.run(
                participants.update(
                    self.ctx, self.net, self.me, self.org, p.id, UpdateParticipant(name=name)
                )
            )

    @rule(i=st.integers(0, 10), chosen=st.sets(st.integers(0, 5), max_size=4))
    def announce(self, i: int, chosen: set[int]) -> None:
        found = self.runner.run(self._ids())
        if found:
            p = found[i % len(found)]
            cmd = SupportedDocumentTypes(tuple(self.entries[c] for c in sorted(chosen)))
            self.runner.run(
                participants.set_supported(self.ctx, self.net, self.me, self.org, p.id, cmd)
            )

    @rule(i=st.integers(0, 10))
    def delete(self, i: int) -> None:
        found = self.runner.run(self._ids())
        if found:
            p = found[i % len(found)]
            self.runner.run(participants.delete_many(self.ctx, self.net, self.me, self.org, [p.id]))

    @invariant()
    def smp_view_equals_database_view(self) -> None:
        self.runner.run(self._check())

    async def _check(self) -> None:
        registrar = self.container.smp_registrar()
        db = await self._ids()
        async with self.ctx.uow() as uow:
            for p in db:
                reg = await registrar.lookup(uow, p.environment, p.identifier_key)
                assert reg is not None and reg.smp_id == p.smp_ref
                published = {
                    (s.document_value.rstrip("*"), pr.scheme + "::" + pr.value)
                    for s in reg.services
                    for pr in s.processes
                }
                expected = {
                    (self.ctx.catalogue.document_type(e.document_id).value, e.process_id)
                    for e in p.supported_document_types
                }
                assert published == expected
            for n in range(6):
                ident = gln(n)
                for env in Environment:
                    in_db = any(p.identifier_key == ident and p.environment is env for p in db)
                    assert (await registrar.lookup(uow, env, ident) is not None) == in_db


SmpMirrorsDatabase.TestCase.settings = settings(
    max_examples=15, stateful_step_count=12, deadline=None
)
TestSmpMirrorsDatabase = SmpMirrorsDatabase.TestCase
