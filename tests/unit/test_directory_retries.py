"""The workers ask the directory again for a business card left OUTDATED in it: after 30 s,
5 min and then every 30 min (FOURCORNER_DIRECTORY_RETRY_DELAYS) until the directory answers,
one worker at a time, each call bounded; a newer change of the card, or a claim taken over,
wins over an answer in flight. On the in-memory adapters with a fake clock; the race of two
workers also on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

import pg
from directory_world import World, directory_world, gln, module_pki
from fourcorner.application import directory_cards
from fourcorner.application.context import DIRECTORY_ATTEMPTS
from fourcorner.application.directory_worker import DirectoryWorker
from fourcorner.domain.network_services import Environment
from fourcorner.domain.participant import BusinessCard, Participant, PublicationState
from fourcorner.entrypoints.adapter_setup import directory_delays
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import run_workers

TEST = Environment.TEST
DOWN = "the directory answered 503"
SECONDS = timedelta(seconds=1)


class FakeClock:
    """Now when made (the test PKI's certificates are valid from then), moved by hand."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def pki_dir(tmp_path_factory: Any) -> Path:
    return module_pki(tmp_path_factory)


@contextlib.contextmanager
def settings_on(backend: str, tmp_path: Path, pki_dir: Path) -> Iterator[Settings]:
    (tmp_path / "pki").symlink_to(pki_dir, target_is_directory=True)
    with contextlib.ExitStack() as stack:
        schema = stack.enter_context(pg.fresh_schema("fc_dir")) if backend == "postgres" else ""
        url = {
            "memory": "memory://",
            "sqlite": f"sqlite:///{tmp_path / 'fourcorner.db'}",
            "postgres": pg.URL,
        }[backend]
        yield Settings(data_dir=tmp_path, database_url=url, database_schema=schema).check()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def world(tmp_path: Path, pki_dir: Path, clock: FakeClock) -> AsyncIterator[World]:
    with settings_on("memory", tmp_path, pki_dir) as settings:
        async with directory_world(settings, clock=clock) as made:
            yield made


def asked_at(world: World, clock: FakeClock) -> list[datetime]:
    """The times the directory is asked from now on, answering or not."""
    calls: list[datetime] = []
    publish = world.directory.publish

    async def counted(environment: Environment, participant: str) -> None:
        calls.append(clock())
        await publish(environment, participant)

    world.directory.publish = counted  # type: ignore[method-assign]
    return calls


async def outdated(world: World, n: int, name: str = "New") -> Participant:
    """A published participant whose card changed while the directory did not answer."""
    made = await world.participant(f"0088:{gln(n)}", TEST, "ACME")
    await world.publish(made)
    world.directory.down = DOWN
    after = await world.update(made, business_card=BusinessCard(legal_name=name, country_code="SE"))
    world.directory.down = None
    assert (after.directory.state, after.directory.reason) == (PublicationState.OUTDATED, DOWN)
    return after


async def test_an_outdated_card_is_asked_for_again_with_backoff_until_the_directory_answers(
    world, clock
):
    worker = DirectoryWorker(world.ctx, world.net)
    made = await outdated(world, 1)
    changed = clock()
    assert made.directory_retry.due == changed + 30 * SECONDS
    calls = asked_at(world, clock)
    world.directory.down = DOWN
    # the waits: 30 s, 5 min, then 30 min again and again
    for wait in (30, 300, 1800, 1800):
        clock.advance(wait - 1)
        assert await worker.run_once() == 0
        clock.advance(1)
        assert await worker.run_once() == 1
        now = await world.get(made)
        assert (now.directory.state, now.directory.reason) == (PublicationState.OUTDATED, DOWN)
    assert [t - changed for t in calls] == [timedelta(seconds=s) for s in (30, 330, 2130, 3930)]
    assert now.directory_retry.attempts == 5  # the change's own asking, then four
    assert now.directory.changed_at == changed  # still the change's time
    # the directory is back: the next retry publishes the card, and nothing is due after
    world.directory.down = None
    clock.advance(1800)
    assert await worker.run_once() == 1
    now = await world.get(made)
    assert (now.directory.state, now.directory.reason) == (PublicationState.PUBLISHED, None)
    assert (now.directory.published_at, now.directory.changed_at) == (clock(), None)
    assert now.directory_due is None and now.directory_retry.attempts == 0
    assert world.directory.cards(TEST) == {made.identifier_key}
    clock.advance(86400)
    assert await worker.run_once() == 0
    assert len(calls) == 5


async def test_the_workers_stop_asking_once_the_attempts_run_out(world, clock, caplog):
    """By default 50 attempts, the change's own asking the first: the 50th, about a day after
    the change, is the last. The card stays OUTDATED, its reason says it is asked no more, an
    error is logged, and nothing is due; the card's next change asks again, and counts anew,
    and request-pd-publish asks at once."""
    assert world.net.directory_attempts == DIRECTORY_ATTEMPTS == 50
    caplog.set_level(logging.INFO, logger="fourcorner.directory")
    worker = DirectoryWorker(world.ctx, world.net)
    made = await outdated(world, 70)
    changed = clock()
    calls = asked_at(world, clock)
    world.directory.down = DOWN
    for _ in range(100):
        due = (await world.get(made)).directory_due
        if due is None:
            break
        clock.now = due
        assert await worker.run_once() == 1
    assert len(calls) == 49
    assert calls[-1] - changed == timedelta(seconds=30 + 300 + 47 * 1800)  # 23 h 35 min
    now = await world.get(made)
    assert now.directory.state is PublicationState.OUTDATED
    assert now.directory.reason is not None and now.directory.reason.startswith(DOWN)
    assert "asked 50 times" in now.directory.reason and "request-pd-publish" in now.directory.reason
    assert (now.directory_retry.attempts, now.directory_retry.given_up) == (50, True)
    reindexed = [r for r in caplog.records if getattr(r, "event", "") == "directory.reindex"]
    assert [(r.levelno, r.attempts) for r in reindexed if r.final] == [(logging.ERROR, 50)]
    assert all(r.levelno == logging.WARNING for r in reindexed if not r.final)
    # a day later, nothing was asked
    clock.advance(86400)
    assert await worker.run_once() == 0
    assert len(calls) == 49
    # the card's next change asks again (unanswered: the first of a new count)
    again = await world.update(made, business_card=BusinessCard(legal_name="B", country_code="SE"))
    assert (again.directory.state, again.directory.reason) == (PublicationState.OUTDATED, DOWN)
    assert (again.directory_retry.attempts, again.directory_retry.given_up) == (1, False)
    assert again.directory_due == clock() + 30 * SECONDS
    # request-pd-publish asks at once, and the directory is back
    world.directory.down = None
    await world.publish(made)
    now = await world.get(made)
    assert (now.directory.state, now.directory.reason) == (PublicationState.PUBLISHED, None)
    assert now.directory_retry.attempts == 0 and not now.directory_retry.given_up


async def test_an_outdated_card_is_given_up_exactly_when_its_attempts_run_out(world, clock):
    """For each limit, each unanswered attempt before the last is due again after its delay;
    the last is given up, due no more."""
    made = await outdated(world, 71)  # one unanswered attempt
    for limit in range(1, 7):
        p = attrs.evolve(made, directory_retry=attrs.evolve(made.directory_retry, attempts=0))
        for failed in range(1, limit + 1):
            p = p.directory_asked(clock(), DOWN, (30 * SECONDS,), limit)
            assert p.directory_retry.attempts == failed
            assert p.directory_retry.given_up is (failed == limit), (limit, failed)
            expected = None if failed == limit else clock() + 30 * SECONDS
            assert p.directory_due == expected, (limit, failed)
    # no limit: never given up
    p = made
    for _ in range(100):
        p = p.directory_asked(clock(), DOWN, (30 * SECONDS,))
    assert not p.directory_retry.given_up and p.directory_due == clock() + 30 * SECONDS


async def test_a_card_whose_change_never_asked_is_asked_for_by_the_workers(world, clock):
    """The change's process ended before it asked (or its asking never recorded): the
    publication is due the first delay after the change all the same."""
    made = await world.participant(f"0088:{gln(2)}", TEST, "ACME")
    await world.publish(made)
    calls = asked_at(world, clock)
    asked = world.directory.publish

    async def lost(environment: Environment, participant: str) -> None:
        world.directory.publish = asked  # once: the change's own asking is lost
        raise RuntimeError("the process ends")

    world.directory.publish = lost  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="the process ends"):
        await world.update(made, business_card=BusinessCard(legal_name="New", country_code="SE"))
    assert (await world.get(made)).directory.state is PublicationState.OUTDATED
    worker = DirectoryWorker(world.ctx, world.net)
    clock.advance(30)
    assert await worker.run_once() == 1
    assert (await world.get(made)).directory.state is PublicationState.PUBLISHED
    assert calls == [clock()]


async def test_a_change_made_while_a_retry_is_in_flight_wins(world, clock):
    """The directory answers the worker for the older card while the card changes again (and
    the change's own asking finds the directory down): the worker's answer is not recorded
    over the change, which stays OUTDATED, due after the first delay from the change."""
    made = await outdated(world, 3)
    clock.advance(30)
    asked = world.directory.publish

    async def meddling(environment: Environment, participant: str) -> None:
        await asked(environment, participant)
        world.directory.publish = asked  # once
        clock.advance(1)
        world.directory.down = "the directory answered 502"
        card = BusinessCard(legal_name="Newer", country_code="SE")
        await world.update(made, business_card=card)
        world.directory.down = None

    world.directory.publish = meddling  # type: ignore[method-assign]
    worker = DirectoryWorker(world.ctx, world.net)
    assert await worker.run_once() == 1
    now = await world.get(made)
    assert now.business_card is not None and now.business_card.legal_name == "Newer"
    assert (now.directory.state, now.directory.reason) == (
        PublicationState.OUTDATED,
        "the directory answered 502",
    )
    assert now.directory.changed_at == clock()
    assert now.directory_retry.revision == made.directory_retry.revision + 1
    assert (now.directory_retry.attempts, now.directory_due) == (1, clock() + 30 * SECONDS)
    # the newer card is asked for in its turn
    clock.advance(30)
    assert await worker.run_once() == 1
    assert (await world.get(made)).directory.state is PublicationState.PUBLISHED


async def test_a_claim_taken_over_after_its_lease_records_nothing(world, clock):
    """A worker whose lease ran out (it hung) records nothing over the worker that took the
    card over; nor does a worker's answer after request-pd-publish recorded one."""
    made = await outdated(world, 4)
    clock.advance(30)
    first = DirectoryWorker(world.ctx, world.net, lease=timedelta(seconds=60))
    second = DirectoryWorker(world.ctx, world.net, lease=timedelta(seconds=60))
    (claimed,) = await first.claim()
    assert await second.claim() == []  # leased
    clock.advance(61)
    (taken,) = await second.claim()
    world.directory.down = DOWN
    recorded = await directory_cards.ask(world.ctx, world.net, taken)  # not answered
    assert recorded is not None and recorded == await world.get(made)
    world.directory.down = None
    assert await directory_cards.ask(world.ctx, world.net, claimed) is None
    now = await world.get(made)
    assert now == recorded
    assert (now.directory.state, now.directory_retry.attempts) == (PublicationState.OUTDATED, 2)
    # request-pd-publish meanwhile: the worker in flight records nothing after it
    clock.advance(300)
    (claimed,) = await first.claim()
    await world.publish(made)
    published = await world.get(made)
    assert published.directory.state is PublicationState.PUBLISHED
    assert await directory_cards.ask(world.ctx, world.net, claimed) is None
    assert await world.get(made) == published


async def test_a_claim_leaves_the_card_s_publication_the_same_a_change_or_answer_not(world, clock):
    """``same_card`` (what request-pd-publish records over) allows a worker's claim, or an
    attempt that changed nothing shown; ``same_publication`` (what a worker records over)
    allows neither. A newer card, or an answer shown, changes both."""
    made = await outdated(world, 60)
    claimed = made.directory_claimed(clock() + 60 * SECONDS)
    again = made.directory_asked(clock(), DOWN, (30 * SECONDS,))  # the same reason
    assert made.same_card(made) and made.same_publication(made)
    for meanwhile in (claimed, again):
        assert meanwhile.same_card(made) and not meanwhile.same_publication(made)
    for other in (
        made.card_changed(clock(), 30 * SECONDS),
        made.directory_asked(clock(), None, ()),
        made.directory_asked(clock(), "the directory answered 500", (30 * SECONDS,)),
    ):
        assert not other.same_card(made) and not other.same_publication(made)


async def test_a_directory_that_hangs_is_given_up_after_half_the_lease(world, clock):
    made = await outdated(world, 5)
    clock.advance(30)

    async def hangs(environment: Environment, participant: str) -> None:
        await asyncio.Event().wait()

    world.directory.publish = hangs  # type: ignore[method-assign]
    worker = DirectoryWorker(world.ctx, world.net, lease=timedelta(seconds=0.2))
    started = asyncio.get_running_loop().time()
    assert await worker.run_once() == 1
    assert asyncio.get_running_loop().time() - started < 1.0
    now = await world.get(made)
    assert (now.directory.state, now.directory.reason) == (
        PublicationState.OUTDATED,
        "the directory did not answer in time",
    )
    assert now.directory_due == clock() + 300 * SECONDS


async def published_then_stopped(
    world: World, made: Participant, run: Any, within: float = 5.0
) -> None:
    """``run(stop)`` until ``made``'s card is PUBLISHED (2 s at most), then stopped: it ends
    ``within`` seconds."""
    stop = asyncio.Event()
    running = asyncio.create_task(run(stop))
    for _ in range(200):
        if (await world.get(made)).directory.state is PublicationState.PUBLISHED:
            break
        await asyncio.sleep(0.01)
    assert (await world.get(made)).directory.state is PublicationState.PUBLISHED
    stop.set()
    await asyncio.wait_for(running, within)


async def test_the_worker_stops_when_told(world, clock):
    """Stopped, a worker ends its round in flight (its calls bounded) and asks nothing more."""
    made = await outdated(world, 6)
    clock.advance(30)
    worker = DirectoryWorker(world.ctx, world.net, poll_interval=60.0)
    await published_then_stopped(world, made, worker.run, within=1.0)  # not the poll


async def test_the_workers_of_a_worker_process_ask_again_and_stop_on_shutdown(world, clock):
    """``fourcorner worker``'s workers (``run_workers``) include the directory's retries,
    with the delays of FOURCORNER_DIRECTORY_RETRY_DELAYS; stopped, they all end."""
    assert world.net.directory_delays == tuple(
        timedelta(seconds=s) for s in Settings().directory_delays
    )
    made = await outdated(world, 7)
    clock.advance(30)
    await published_then_stopped(world, made, lambda stop: run_workers(world.container, stop))


async def test_the_attempts_are_read_from_the_setting(tmp_path, pki_dir, clock):
    """FOURCORNER_DIRECTORY_ATTEMPTS=2: the change's own asking and one worker's."""
    with settings_on("memory", tmp_path, pki_dir) as settings:
        async with directory_world(
            attrs.evolve(settings, directory_attempts=2), clock=clock
        ) as world:
            assert world.net.directory_attempts == 2
            made = await outdated(world, 72)
            world.directory.down = DOWN
            clock.advance(30)
            assert await DirectoryWorker(world.ctx, world.net).run_once() == 1
            now = await world.get(made)
            assert (now.directory_retry.attempts, now.directory_due) == (2, None)


def test_the_delays_are_read_from_the_setting():
    delays = Settings(directory_retry_delays="1, 2.5").directory_delays
    assert directory_delays(Settings(directory_retry_delays="1, 2.5")) == (
        timedelta(seconds=1),
        timedelta(seconds=2.5),
    )
    assert delays == (1.0, 2.5)


# --- several workers on one database ------------------------------------------------------

ROUNDS = 12
CARDS = 6


@pytest.mark.parametrize(
    "backend", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_an_update_answers_the_participant_as_the_directory_s_answer_left_it(
    backend, tmp_path, pki_dir, clock
):
    """The update answers what its asking recorded, unanswered or indexed, exactly as stored."""
    with settings_on(backend, tmp_path, pki_dir) as settings:
        async with directory_world(settings, clock=clock) as world:
            made = await outdated(world, 50)  # unanswered
            assert made == await world.get(made)
            assert made.directory_retry.attempts == 1
            clock.advance(5)
            card = BusinessCard(legal_name="Indexed", country_code="SE")
            after = await world.update(made, business_card=card)
            assert after.directory.state is PublicationState.PUBLISHED
            assert after.directory.published_at == clock()
            assert after == await world.get(made)


@pytest.mark.parametrize(
    "backend", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_two_workers_racing_ask_once_per_card_and_a_concurrent_change_wins(
    backend, tmp_path, pki_dir, clock, caplog
):
    """Round after round, every card is outdated and due, and two workers (two processes'
    on PostgreSQL: a connection each) run at once while one card changes again: each due
    card is asked for once, nothing fails, and each ends PUBLISHED with its newest card (the
    change's own asking publishes it, or the worker's after it)."""
    caplog.set_level(logging.ERROR, logger="fourcorner")
    with settings_on(backend, tmp_path, pki_dir) as settings:
        async with directory_world(settings, clock=clock) as world:
            made = [
                await world.participant(f"0088:{gln(100 + i)}", TEST, "A") for i in range(CARDS)
            ]
            await world.publish(*made)
            asked: list[str] = []
            publish = world.directory.publish

            async def slow(environment: Environment, participant: str) -> None:
                asked.append(participant)
                await asyncio.sleep(0.005)  # the workers' calls overlap
                await publish(environment, participant)

            world.directory.publish = slow  # type: ignore[method-assign]
            workers = [DirectoryWorker(world.ctx, world.net, batch=4) for _ in range(2)]
            revisions = {p.id: 0 for p in made}
            for r in range(ROUNDS):
                world.directory.down = DOWN
                for p in made:
                    card = BusinessCard(legal_name=f"A {r}", country_code="SE")
                    await world.update(p, business_card=card)
                    revisions[p.id] += 1
                world.directory.down = None
                asked.clear()
                clock.advance(30)
                changing = made[r % CARDS]

                async def change(p: Participant = changing, r: int = r) -> None:
                    await asyncio.sleep(0.002 * (r % 4))
                    card = BusinessCard(legal_name=f"B {r}", country_code="SE")
                    await world.update(p, business_card=card)

                claimed = await asyncio.gather(
                    *(w.run_once() for w in workers), change(), workers[0].run_once()
                )
                revisions[changing.id] += 1
                assert sum(c for c in claimed if c) <= CARDS, r
                # every card asked for by the workers once; the changed one by its change too
                counts = {p.identifier_key: asked.count(p.identifier_key) for p in made}
                for p in made:
                    most = 3 if p is changing else 1
                    assert 1 <= counts[p.identifier_key] <= most, (r, counts)
                while sum([await w.run_once() for w in workers]):
                    pass
                for p in made:
                    now = await world.get(p)
                    assert now.directory.state is PublicationState.PUBLISHED, (r, now)
                    assert now.directory_retry.revision == revisions[p.id], r
                    want = f"B {r}" if p is changing else f"A {r}"
                    assert now.business_card is not None and now.business_card.legal_name == want
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "backend", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_what_another_writer_records_while_an_update_is_made_is_kept(
    backend, tmp_path, pki_dir, clock, monkeypatch
):
    """A participant's update holds its row from its read to its commit. Another writer that
    holds the row alone, as the SML worker records a registration's outcome (the status) or
    a worker a directory's answer, and comes in the middle of the update, is recorded after
    it: both changes are kept. An update that read the row unheld wrote its copy back over
    the status (on PostgreSQL, where the two units of work overlap)."""
    from fourcorner.application import participants
    from fourcorner.application.collections import PARTICIPANTS

    with settings_on(backend, tmp_path, pki_dir) as settings:
        async with directory_world(settings, clock=clock) as world:
            made = await outdated(world, 900)
            writing: list[asyncio.Task[None]] = []
            republish = participants.republish_card

            async def outcome() -> None:
                async with world.ctx.uow() as uow:
                    current = await uow.repository(PARTICIPANTS).lock(made.id)
                    assert current is not None
                    marked = attrs.evolve(current, status_reason="recorded meanwhile")
                    await uow.repository(PARTICIPANTS).update(marked)
                    await uow.commit()
                # and a worker's answer for the outdated card (the directory is up again)
                await directory_cards.ask(world.ctx, world.net, marked)

            async def with_a_writer_meanwhile(*args: Any) -> bool:
                changed = await republish(*args)
                writing.append(asyncio.create_task(outcome()))
                # the writer waits for the row (as it must) or is done in this window
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(writing[0]), 1.0)
                return changed

            monkeypatch.setattr(participants, "republish_card", with_a_writer_meanwhile)
            after = await world.update(made, name="Renamed")
            monkeypatch.undo()
            assert after.name == "Renamed"
            await writing[0]
            now = await world.get(made)
            assert (now.name, now.status_reason) == ("Renamed", "recorded meanwhile")
            assert now.directory.state is PublicationState.PUBLISHED, now.directory
