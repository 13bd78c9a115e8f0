"""The stateful test: a ``RuleBasedStateMachine`` that makes the same calls on the service under
test and on the reference model (the in-memory core) and compares every answer (how:
``harness.comparison``; what both sides created and what a run shares: ``harness.records``).

Each call goes to both sides; the answers must agree in status, error code and the fields the
error points at, and in their bodies once what legitimately differs between two deployments is
put aside: ids are compared as the order in which each side first showed them (so isolation
and list contents and order are checked through them), times, keys, secrets and cursors by
their presence. Every example works in a namespace of its own (its users' emails, its
organisations' names and legal identifiers), so a long-lived service under test can be used
again and again, and a superadmin's lists are scoped to the example by a filter on the name.

What the rules draw depends on the example's own choices only, never on the answers: a record
both sides refused adds to its bundle all the same (the example's latest record there, or an
absent one, ``Ref.absent``), so a service whose answers depend on what came before the
example (its throttles and limits are the whole run's, and Hypothesis runs an example again
to explore around it and to shrink it) meets the same draws.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, rule

from fourcorner.entrypoints.harness import strategies as hs
from fourcorner.entrypoints.harness.calling import ComparingMachine, sbd_of
from fourcorner.entrypoints.harness.records import ApiKey, Participant, Ref, Run, Sent
from fourcorner.entrypoints.harness.strategies import complete

R = TypeVar("R")
NAMES = ("Alpha", "Beta", "Gamma")
# the callers: mostly the example's first user, so that most calls get past the role checks
USERS = st.sampled_from([0, 0, 0, 1, 2])
KEY_EXPIRY = "2999-01-01T00:00:00Z"
PAGE_LIMIT = 20
MAX_UNAUTHORISED = 2


def machine(run: Run) -> type[RuleBasedStateMachine]:
    """The state machine class over ``run``'s two sides."""

    class ServiceMachine(ComparingMachine):
        orgs = Bundle("orgs")
        api_keys = Bundle("api_keys")
        participants = Bundle("participants")
        transactions = Bundle("transactions")

        def __init__(self) -> None:
            super().__init__(run)
            run.examples += 1
            # no example's tag is a part of another's (the lists are filtered on it)
            self.tag = f"{run.namespace}.{run.examples}."
            self.revoked: set[Ref] = set()
            self.unauthorised = 0
            self.refused = 0  # the example's absent records so far
            self.latest: dict[str, Any] = {}  # bundle -> its latest record both sides made
            # the run's users (a token each for the whole run); what they see of other
            # examples (their memberships) is left out: only /users/me shows it
            self.users = [f"u{n}.{run.namespace}@harness.test" for n in range(3)]
            self.root = f"root.{run.namespace}@harness.test"
            payload = f"{run.digits()}{run.examples % 1000:03d}"
            legal = [complete("0007", f"{payload}{k}") for k in range(10)]
            self.legal = [x for x in legal if x][:3]
            # GLNs of the example's participants (unique across the service, as they must be);
            # the last is never a participant: documents go to it, and are not delivered, so
            # that a service's workers add no record (an inbound document, an MLS) to compare
            self.glns = [complete("0088", f"{payload}{k}{run.digits()[:3]}") for k in range(4)]

        def made(self, ref: Ref | None) -> Ref:
            """``ref``, or an absent record when both sides refused it."""
            if ref is not None:
                return ref
            self.refused += 1
            return Ref.absent(self.tag, self.refused)

        def kept(self, bundle: str, record: R | None, absent: Callable[[], R]) -> R:
            """What goes into ``bundle``: ``record``; or, when both sides refused it, the
            example's latest record there that both made, and an absent one when there is
            none (so the bundle grows by one whatever the answers, and later rules mostly
            act on records that exist, as they would had nothing been added)."""
            if record is not None:
                self.latest[bundle] = record
                return record
            latest: R | None = self.latest.get(bundle)
            return latest if latest is not None else absent()

        # --- the rules ---------------------------------------------------------------

        @initialize(target=orgs, user=USERS, name=st.sampled_from(NAMES))
        def first_org(self, user: int, name: str) -> Any:
            return self._create_org(user, name, 0)

        @initialize(target=orgs, user=USERS, name=st.sampled_from(NAMES), legal=st.integers(0, 1))
        def second_org(self, user: int, name: str, legal: int) -> Any:
            return self._create_org(user, name, legal)

        @rule(
            target=orgs,
            user=USERS,
            name=st.sampled_from(NAMES),
            legal=st.sampled_from([0, 1, 2]),
        )
        def create_org(self, user: int, name: str, legal: int) -> Any:
            return self._create_org(user, name, legal)

        def _create_org(self, user: int, name: str, legal: int) -> Any:
            body = {
                "legalName": f"{name} {self.tag}",
                "countryCode": "SE",
                "legalIdentifier": self.legal[legal],
                "legalIdentifierCode": "SE:ORGNR",
            }
            answers = self.call("POST", lambda side: "/orgs", self.users[user], body=lambda s: body)
            return self.kept("orgs", self.created(answers), lambda: self.made(None))

        @rule(org=orgs, user=USERS)
        def get_org(self, org: Ref, user: int) -> None:
            self.call("GET", lambda side: f"/orgs/{org.on(side)}", self.users[user])

        @rule(
            extra=st.sampled_from(["none", "eq", "ne", "mode"]),
            name=st.sampled_from(NAMES),
            limit=st.integers(1, 3),
        )
        def list_orgs(self, extra: str, name: str, limit: int) -> None:
            filters = [("filter", f"legalName:contains:{self.tag}")]
            if extra in ("eq", "ne"):
                filters.append(("filter", f"legalName:{extra}:{name} {self.tag}"))
            elif extra == "mode":
                filters.append(("filter", "organisationMode:eq:DEMO"))
            cursors: dict[str, str | None] = {"sut": None, "model": None}
            for _ in range(PAGE_LIMIT):

                def query(
                    side: str, cursors: dict[str, str | None] = cursors
                ) -> tuple[tuple[str, str], ...]:
                    cursor = cursors[side]
                    more = [("cursor", cursor)] if cursor else []
                    return (*filters, ("limit", str(limit)), *more)

                sut, model = self.call(
                    "GET", lambda side: "/orgs", self.root, superadmin=True, query=query
                )
                if sut.status != 200 or not model.body.get("nextCursor"):
                    return
                cursors = {"sut": sut.body["nextCursor"], "model": model.body["nextCursor"]}

        @rule(
            org=orgs,
            admin=USERS,
            user=st.sampled_from([1, 2]),
            role=st.sampled_from(["orgmember", "orgmember", "orgadmin"]),
        )
        def add_member(self, org: Ref, admin: int, user: int, role: str) -> None:
            who = self.made(self.user_id(self.users[user]))
            self.call(
                "POST",
                lambda side: f"/orgs/{org.on(side)}/members",
                self.users[admin],
                body=lambda side: {"userId": who.on(side), "role": role},
            )

        @rule(org=orgs, user=USERS)
        def list_members(self, org: Ref, user: int) -> None:
            self.call("GET", lambda side: f"/orgs/{org.on(side)}/members", self.users[user])

        @rule(
            target=api_keys,
            org=orgs,
            user=USERS,
            role=st.sampled_from(["orgmember", "orgadmin"]),
        )
        def create_api_key(self, org: Ref, user: int, role: str) -> Any:
            body = {"name": "harness", "role": role, "expires": KEY_EXPIRY}
            sut, model = self.call(
                "POST",
                lambda side: f"/orgs/{org.on(side)}/api_keys",
                self.users[user],
                body=lambda side: body,
            )
            key = None
            if sut.status == 201:
                key = ApiKey(
                    Ref(str(sut.body["id"]), str(model.body["id"])),
                    org,
                    Ref(str(sut.body["key"]), str(model.body["key"])),
                )
            return self.kept("api_keys", key, lambda: ApiKey(self.made(None), org, None))

        @rule(key=api_keys, what=st.sampled_from(["api_keys", "members", "participants", "org"]))
        def call_with_api_key(self, key: ApiKey, what: str) -> None:
            """A key acts in its organisation with its role (orgadmin lists are refused to an
            orgmember key), and not at all once revoked."""
            secret = key.secret
            if secret is None:  # a key both refused: its use would be a failed authentication
                return
            if key.ref in self.revoked:
                # a revoked key is refused (401), and failed authentications are throttled
                # per address: a few per example, within the run's allowance (it may wait)
                if self.unauthorised >= MAX_UNAUTHORISED:
                    return
                self.unauthorised += 1
                run.failures.spend()
            path = "" if what == "org" else f"/{what}"
            self.call(
                "GET",
                lambda side: f"/orgs/{key.org.on(side)}{path}",
                "api-key",
                api_key=secret.on,
            )

        @rule(key=api_keys, user=USERS)
        def revoke_api_key(self, key: ApiKey, user: int) -> None:
            sut, _ = self.call(
                "DELETE",
                lambda side: f"/orgs/{key.org.on(side)}/api_keys/{key.ref.on(side)}",
                self.users[user],
            )
            if sut.status < 300:
                self.revoked.add(key.ref)

        @rule(org=orgs, user=USERS)
        def list_api_keys(self, org: Ref, user: int) -> None:
            self.call("GET", lambda side: f"/orgs/{org.on(side)}/api_keys", self.users[user])

        @rule(org=orgs, user=USERS, business=st.booleans())
        def set_contacts(self, org: Ref, user: int, business: bool) -> None:
            kind = "BUSINESS" if business else "TECHNICAL"
            body = {"contacts": [{"name": "Bea", "email": "bea@example.com", "contactType": kind}]}
            self.call(
                "PUT", lambda side: f"/orgs/{org.on(side)}", self.users[user], body=lambda s: body
            )

        @rule(org=orgs, user=USERS, mode=st.sampled_from(["SHARED", "WHITELABEL"]))
        def request_mode(self, org: Ref, user: int, mode: str) -> None:
            self.call(
                "PUT",
                lambda side: f"/orgs/{org.on(side)}",
                self.users[user],
                body=lambda side: {"modeChangeRequest": mode},
            )

        @rule(org=orgs, mode=st.sampled_from(["SHARED", "WHITELABEL"]))
        def grant_mode(self, org: Ref, mode: str) -> None:
            self.call(
                "PUT",
                lambda side: f"/orgs/{org.on(side)}",
                self.root,
                superadmin=True,
                body=lambda side: {"organisationMode": mode},
            )

        @rule(org=orgs, user=USERS)
        def create_webhook(self, org: Ref, user: int) -> None:
            body = {"url": "https://hooks.example.com/in", "events": ["webhook.test"]}
            self.call(
                "POST",
                lambda side: f"/orgs/{org.on(side)}/webhooks",
                self.users[user],
                body=lambda side: body,
            )

        @rule(org=orgs, user=USERS)
        def list_webhooks(self, org: Ref, user: int) -> None:
            self.call("GET", lambda side: f"/orgs/{org.on(side)}/webhooks", self.users[user])

        # --- participants and transactions ---------------------------------------------

        def operator_test(self, org: Ref, user: int, kind: str) -> Ref | None:
            """The TEST entry of ``/orgs/{id}/<kind>/alltouse`` on each side."""
            sut, model = self.call(
                "GET", lambda side: f"/orgs/{org.on(side)}/{kind}/alltouse", self.users[user]
            )
            if sut.status != 200:
                return None
            ids = [
                next(x["id"] for x in answer.body["items"] if x["environment"] == "TEST")
                for answer in (sut, model)
            ]
            return Ref(*ids)

        @rule(target=participants, org=orgs, user=USERS, k=st.sampled_from([0, 0, 1, 2]))
        def create_participant(self, org: Ref, user: int, k: int) -> Any:
            smp = self.operator_test(org, user, "smps")
            ap = self.operator_test(org, user, "aps")
            identifier = f"0088:{self.glns[k]}"

            def absent() -> Participant:
                return Participant(self.made(None), org, ap or self.made(None), identifier)

            if smp is None or ap is None:
                return self.kept("participants", None, absent)
            answers = self.call(
                "POST",
                lambda side: f"/orgs/{org.on(side)}/participants",
                self.users[user],
                body=lambda side: {
                    "name": f"Participant {k}",
                    "participantIdentifier": identifier,
                    "smpRef": smp.on(side),
                    "apRef": ap.on(side),
                },
            )
            ref = self.created(answers)
            made = None if ref is None else Participant(ref, org, ap, identifier)
            return self.kept("participants", made, absent)

        @rule(participant=participants, user=USERS)
        def list_participants(self, participant: Participant, user: int) -> None:
            self.call(
                "GET",
                lambda side: f"/orgs/{participant.org.on(side)}/participants",
                self.users[user],
            )

        @rule(
            target=transactions,
            sender=participants,
            user=USERS,
            document=hs.billing_documents(credit_note=False),
            instance=st.integers(0, 2),
        )
        def send(self, sender: Participant, user: int, document: Any, instance: int) -> Any:
            sbd = sbd_of(sender.identifier, f"0088:{self.glns[3]}", document, self.tag, instance)
            sut, model = self.call(
                "POST",
                lambda side: f"/orgs/{sender.org.on(side)}/transactions",
                self.users[user],
                body=lambda side: sbd,
                query=lambda side: (("ap", sender.ap.on(side)),),
            )
            sent = None
            if sut.status == 202:
                ids = Ref(str(sut.body["transactionId"]), str(model.body["transactionId"]))
                sent = Sent(ids, sender.org, sender.ap, sbd)
            return self.kept(
                "transactions", sent, lambda: Sent(self.made(None), sender.org, sender.ap, sbd)
            )

        @rule(
            sender=participants,
            user=USERS,
            document=hs.billing_documents(credit_note=False),
            key=st.integers(0, 1),
            repeats=st.sampled_from(["same", "other document"]),
        )
        def send_with_idempotency_key(
            self, sender: Participant, user: int, document: Any, key: int, repeats: str
        ) -> None:
            """A request with an ``Idempotency-Key``, then again with the key: the same request
            gets the first answer again (and sends nothing more); another document with the key is
            409 AT-1101. Keys belong to the organisation."""
            header = (("Idempotency-Key", f"{self.tag}-key-{key}"),)
            sbd = sbd_of(sender.identifier, f"0088:{self.glns[3]}", document, self.tag, 3 + key)
            for attempt in ("first", repeats):
                body = sbd
                if attempt == "other document":
                    body = sbd_of(sender.identifier, f"0088:{self.glns[3]}", document, self.tag, 5)
                self.call(
                    "POST",
                    lambda side: f"/orgs/{sender.org.on(side)}/transactions",
                    self.users[user],
                    body=lambda side, body=body: body,  # type: ignore[misc]  # (side) -> body
                    query=lambda side: (("ap", sender.ap.on(side)),),
                    headers=header,
                )

        @rule(sent=transactions, user=USERS)
        def send_again(self, sent: Sent, user: int) -> None:
            self.call(
                "POST",
                lambda side: f"/orgs/{sent.org.on(side)}/transactions",
                self.users[user],
                body=lambda side: sent.sbd,
                query=lambda side: (("ap", sent.ap.on(side)),),
            )

        @rule(sent=transactions, user=USERS)
        def get_transaction(self, sent: Sent, user: int) -> None:
            self.call(
                "GET",
                lambda side: f"/orgs/{sent.org.on(side)}/transactions/{sent.ref.on(side)}",
                self.users[user],
            )

        @rule(sent=transactions, user=USERS)
        def list_sent(self, sent: Sent, user: int) -> None:
            self.call(
                "GET",
                lambda side: f"/orgs/{sent.org.on(side)}/transactions/to_network",
                self.users[user],
            )

    return ServiceMachine
