"""Fill a database with a realistic history through the storage port's bulk path
(``Repository.add_many``: ``COPY`` on PostgreSQL, one ``executemany`` per batch, in one
transaction, on SQLite).

By default 1,000,000 transactions over 1,000 organisations and 3,000 participants (the first
organisation holds 5% of them), 5 webhook events per transaction, each with its delivery, over
60 days. The records are those of ``tests/scale_records.py`` (the query plan test's), the same
for a seed. ``--member-email EMAIL`` makes that user (``fourcorner token --email``) an orgadmin of
the large organisation, for reading it over HTTP.

    .venv/bin/python bench/seed_scale.py --backend postgres --schema fc_scale
    .venv/bin/python bench/seed_scale.py --backend sqlite --sqlite /tmp/scale.sqlite \\
        --transactions 100000
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import scale_records  # noqa: E402
from fourcorner.adapters.auth.local import subject_for  # noqa: E402
from fourcorner.adapters.postgres import PostgresStorage  # noqa: E402
from fourcorner.adapters.sqlite import SqliteStorage  # noqa: E402
from fourcorner.application.collections import (  # noqa: E402
    DELIVERIES,
    EVENTS,
    MEMBERS,
    ORGANISATIONS,
    PARTICIPANTS,
    TRANSACTIONS,
    USERS,
    WEBHOOKS,
)
from fourcorner.domain.member import Member, MemberStatus  # noqa: E402
from fourcorner.domain.roles import Role  # noqa: E402
from fourcorner.domain.user import User  # noqa: E402

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


def storage_for(args: argparse.Namespace) -> Any:
    if args.backend == "postgres":
        return PostgresStorage(args.pg_url, schema=args.schema, cache=False, max_size=2)
    return SqliteStorage(args.sqlite, cache=False)


def shape_of(args: argparse.Namespace) -> scale_records.Shape:
    return scale_records.Shape(
        transactions=args.transactions,
        organisations=args.organisations,
        participants=args.participants,
        events_per_transaction=args.events_per_transaction,
        big_share=args.big_share,
        seed=args.seed,
    )


def member(org: scale_records.Org, email: str) -> Member:
    at = org.organisation.created_at
    return Member(
        id=uuid.uuid5(org.organisation.id, email),
        org_id=org.organisation.id,
        role=Role.ORGADMIN,
        status=MemberStatus.ACTIVE,
        user_ref=subject_for(email),
        first_name="Bench",
        last_name="User",
        created_at=at,
        created_by=scale_records.ROOT,
        last_modified_at=at,
        email=email,
    )


def user(email: str) -> User:
    """The user ``fourcorner token --email`` signs in, recorded as before it signed in once
    (its id the local authority's subject; bound to its identity at its first request)."""
    subject = subject_for(email)
    at = scale_records.START
    return User(
        id=subject,
        email=email,
        name="Bench User",
        created_at=at,
        created_by=scale_records.ROOT,
        last_modified_at=at,
        last_modified_by=scale_records.ROOT,
        terms_accepted_at=at,
    )


async def seed(args: argparse.Namespace) -> dict[str, float]:
    shape = shape_of(args)
    storage = storage_for(args)
    await storage.open()
    started = time.perf_counter()
    counts = {"transactions": 0, "events": 0, "deliveries": 0}
    try:
        orgs = scale_records.organisations(shape)
        async with storage.unit_of_work() as uow:
            await uow.repository(ORGANISATIONS).add_many([o.organisation for o in orgs])
            await uow.repository(PARTICIPANTS).add_many([p for o in orgs for p in o.participants])
            await uow.repository(WEBHOOKS).add_many([o.webhook for o in orgs])
            if args.member_email:
                await uow.repository(USERS).add_many([user(args.member_email)])
                await uow.repository(MEMBERS).add_many([member(orgs[0], args.member_email)])
            await uow.commit()
        rng = random.Random(shape.seed + 2)
        batch: list[Any] = []
        for tx, org in scale_records.transactions(shape, orgs):
            batch.append((tx, org))
            if len(batch) == args.batch:
                await store(storage, shape, batch, rng, counts)
                batch = []
                if counts["transactions"] % (args.batch * 10) == 0:
                    elapsed = time.perf_counter() - started
                    print(
                        f"  {counts['transactions']:,} transactions, {counts['events']:,} events"
                        f" ({elapsed:.0f} s)",
                        flush=True,
                    )
        await store(storage, shape, batch, rng, counts)
    finally:
        await storage.close()
    elapsed = time.perf_counter() - started
    return {**counts, "seconds": elapsed}


async def store(
    storage: Any,
    shape: scale_records.Shape,
    batch: list[Any],
    rng: random.Random,
    counts: dict[str, int],
) -> None:
    events: list[Any] = []
    deliveries: list[Any] = []
    for tx, org in batch:
        found, sent = scale_records.events(shape, tx, org, rng)
        events += found
        deliveries += sent
    async with storage.unit_of_work() as uow:
        await uow.repository(TRANSACTIONS).add_many([tx for tx, _ in batch])
        await uow.repository(EVENTS).add_many(events)
        await uow.repository(DELIVERIES).add_many(deliveries)
        await uow.commit()
    counts["transactions"] += len(batch)
    counts["events"] += len(events)
    counts["deliveries"] += len(deliveries)


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("postgres", "sqlite"), required=True)
    parser.add_argument("--pg-url", default=PG_URL)
    parser.add_argument("--schema", default="fc_scale", help="PostgreSQL schema (created)")
    parser.add_argument("--sqlite", type=Path, default=Path("/tmp/fc_scale.sqlite"))
    add_shape(parser)
    parser.add_argument("--batch", type=int, default=5_000, help="transactions per commit")
    parser.add_argument(
        "--member-email", metavar="EMAIL", help="an orgadmin of the large organisation"
    )
    return parser.parse_args(argv)


def add_shape(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--transactions", type=int, default=1_000_000)
    parser.add_argument("--organisations", type=int, default=1_000)
    parser.add_argument("--participants", type=int, default=3_000)
    parser.add_argument("--events-per-transaction", type=int, default=5)
    parser.add_argument("--big-share", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=17)


def main() -> None:
    args = arguments()
    result = asyncio.run(seed(args))
    rate = result["transactions"] / result["seconds"]
    print(
        f"seeded {result['transactions']:,} transactions, {result['events']:,} events, "
        f"{result['deliveries']:,} deliveries in {result['seconds']:.0f} s "
        f"({rate:,.0f} transactions/s with their events) on {args.backend}"
    )


if __name__ == "__main__":
    main()
