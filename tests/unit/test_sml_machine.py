"""Random sequences of participant creations and deletions, an SML that goes down and comes
back, another SMP registering identifiers, and the SML worker running now and then: once the
SML is up and the worker has caught up, the SML has exactly our participants that it does not
have from the other SMP, those are ACTIVE, and the others FAILED."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from core_world import started
from fourcorner.adapters.memory.sml import InMemoryLocator, InMemorySml
from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.application import (
    participants,
    sml,
    sml_worker,
)
from fourcorner.application.collections import LOCATOR_TASKS, PARTICIPANTS
from fourcorner.application.participants import CreateParticipant
from fourcorner.domain.checkdigits import gs1_check_digit
from fourcorner.domain.errors import DomainError
from fourcorner.domain.network_services import Environment
from fourcorner.domain.participant import ParticipantStatus
from fourcorner.domain.sml import LocatorOperation
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container

TEST = Environment.TEST
OURS, THEIRS = "SMP-OURS", "SMP-THEIRS"
_PKI = Path(tempfile.mkdtemp(prefix="fc-pki-"))
ensure_test_pki(_PKI)


def gln(n: int) -> str:
    payload = f"730003{n:06d}"
    return f"0088:{payload}{gs1_check_digit(payload)}"


class SmlMirrorsParticipants(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.dir = Path(tempfile.mkdtemp(prefix="fc-sml-"))
        shutil.copytree(_PKI / "pki", self.dir / "pki")
        self.sml = InMemorySml()
        self.theirs = InMemoryLocator({TEST: THEIRS}, self.sml)
        self.now = datetime.now(UTC)
        self.container = build_container(
            Settings(data_dir=self.dir, database_url="memory://"),
            locator=InMemoryLocator({TEST: OURS}, self.sml),
            clock=lambda: self.now,
        )
        self.runner.run(self._start())

    async def _start(self) -> None:
        world = await started(self.container)
        self.ctx, self.net, self.me = world.ctx, world.net, world.me
        self.org, self.smp, self.ap = world.org, world.smp, world.ap
        await sml.ensure_smp(self.ctx, self.net, {TEST: "https://ours.example.org/smp"})
        await self.theirs.register_smp(TEST, "https://theirs.example.org/smp")
        self.worker = sml_worker.LocatorWorker(self.ctx, self.net)
        await self.worker.run_once()  # the SMP itself, and the operator's participant

    def teardown(self) -> None:
        self.runner.run(self.container.shutdown_resources())
        self.runner.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    async def _ours(self):
        async with self.ctx.uow() as uow:
            return await uow.repository(PARTICIPANTS).all(environment=TEST)

    @rule(n=st.integers(0, 4))
    def create(self, n: int) -> None:
        cmd = CreateParticipant(f"p{n}", gln(n), self.smp, self.ap)
        try:
            self.runner.run(participants.create(self.ctx, self.net, self.me, self.org, cmd))
        except DomainError as e:  # ours already, being removed, or the other SMP's
            assert e.code in ("AT-1090", "AT-1105"), e

    @rule(i=st.integers(0, 10))
    def delete(self, i: int) -> None:
        found = [p for p in self.runner.run(self._ours()) if p.org_id == self.org]
        if found:
            p = found[i % len(found)]
            self.runner.run(participants.delete_many(self.ctx, self.net, self.me, self.org, [p.id]))

    @rule(down=st.booleans())
    def sml_up_or_down(self, down: bool) -> None:
        self.sml.down = down

    @rule(n=st.integers(0, 4))
    def the_other_smp_registers(self, n: int) -> None:
        if self.sml.down or self.sml.smp_of(TEST, gln(n)) is not None:
            return
        self.runner.run(self.theirs.create(TEST, gln(n)))

    @rule(minutes=st.sampled_from([0, 1, 90]))
    def the_worker_runs(self, minutes: int) -> None:
        self.now += timedelta(minutes=minutes)
        self.runner.run(self.worker.run_once())

    @invariant()
    def active_means_ours_in_the_sml(self) -> None:
        for p in self.runner.run(self._ours()):
            if p.status is ParticipantStatus.ACTIVE:
                assert self.sml.smp_of(TEST, p.identifier_key) == OURS, p

    @invariant()
    def what_the_sml_has_from_us_is_a_participant_or_a_deletion_to_come(self) -> None:
        self.runner.run(self._check_registrations())

    async def _check_registrations(self) -> None:
        async with self.ctx.uow() as uow:
            kept = {p.identifier_key for p in await uow.repository(PARTICIPANTS).all()}
            deleting = {
                t.subject
                for t in await uow.repository(LOCATOR_TASKS).all()
                if t.operation is LocatorOperation.DELETE
            }
        registered = {k[1] for k, smp in self.sml.participants.items() if smp == OURS}
        assert registered <= kept | deleting, registered - kept - deleting

    @rule()
    def settle(self) -> None:
        self.sml.down = False
        for _ in range(5):
            self.now += timedelta(hours=2)
            self.runner.run(self.worker.run_once())
        found = self.runner.run(self._ours())
        for p in found:
            owner = self.sml.smp_of(TEST, p.identifier_key)
            expected = ParticipantStatus.ACTIVE if owner == OURS else ParticipantStatus.FAILED
            assert p.status is expected, (p, owner)
        kept = {p.identifier_key for p in found}
        registered = {k[1] for k, smp in self.sml.participants.items() if smp == OURS}
        assert registered <= kept, registered - kept


TestSmlMirrorsParticipants = SmlMirrorsParticipants.TestCase
TestSmlMirrorsParticipants.settings = settings(
    max_examples=40, stateful_step_count=25, deadline=None
)
