"""SML registration rules: migration keys, the retry schedule, task identity, the SOAP messages
(valid against the SML's XSD) and faults, and the settings."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from fourcorner.adapters.sml import soap
from fourcorner.application.locator import LocatorFault
from fourcorner.domain.network_services import Environment
from fourcorner.domain.sml import (
    KEY_LENGTH,
    MAX_DELAY,
    LocatorOperation,
    LocatorTask,
    migration_key_problem,
    new_migration_key,
)
from fourcorner.entrypoints.config import Settings

XSD = Path(__file__).resolve().parents[1] / "sml" / "peppol-sml-types-v1.xsd"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@given(st.randoms(use_true_random=False))
def test_every_new_migration_key_is_one_the_sml_takes(rnd: random.Random) -> None:
    key = new_migration_key(rnd.choice, rnd.shuffle)
    assert len(key) == KEY_LENGTH
    assert migration_key_problem(key) is None


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("Ab1@", "8 to 24"),
        ("Ab12@#cdEF34" * 3, "8 to 24"),
        ("Ab12@#cd EF34", "only"),
        ("abcd1234@#xy", "at least two"),  # no upper case
        ("ABcd1234efgh", "at least two"),  # no special characters
    ],
)
def test_a_migration_key_out_of_the_rules_is_named(key: str, why: str) -> None:
    problem = migration_key_problem(key)
    assert problem is not None and why in problem


def _task(attempts: int) -> LocatorTask:
    return LocatorTask(
        id=uuid.uuid4(),
        environment=Environment.TEST,
        operation=LocatorOperation.CREATE,
        subject="0088:5798000000001",
        created_at=NOW,
        last_modified_at=NOW,
        attempts=attempts,
    )


@given(st.integers(min_value=1, max_value=10**6))
def test_retries_wait_longer_each_time_and_at_most_an_hour(attempts: int) -> None:
    first = _task(attempts).retried(NOW, "down").next_attempt_at - NOW
    after = _task(attempts + 1).retried(NOW, "down").next_attempt_at - NOW
    assert timedelta(seconds=30) <= first <= after <= MAX_DELAY


def test_a_newer_wish_replaces_the_task_and_its_generation() -> None:
    task = _task(3).failed(NOW, "refused")
    again = task.replaced(LocatorOperation.DELETE, NOW)
    assert (again.generation, again.attempts, again.last_error) == (1, 0, "")
    assert again.state.value == "PENDING" and again.next_attempt_at == NOW


def test_tasks_are_one_per_participant_and_environment() -> None:
    test, prod = Environment.TEST, Environment.PROD
    assert LocatorTask.id_for(test, "0088:ABC") == LocatorTask.id_for(test, "0088:abc")
    assert LocatorTask.id_for(test, "0088:abc") != LocatorTask.id_for(prod, "0088:abc")
    assert LocatorTask.id_for(test, None) != LocatorTask.id_for(prod, None)


identifiers = st.from_regex(r"[0-9]{4}:[A-Za-z0-9]{1,40}", fullmatch=True)
smp_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True)


@given(smp_ids, identifiers, st.sampled_from([None, "Ab12@#cdEF34"]))
def test_the_messages_are_valid_against_the_smls_schema(smp, ident, key) -> None:
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    if key is None:
        names = ["CreateParticipantIdentifier", "DeleteParticipantIdentifier"]
    else:
        names = ["PrepareMigrationRecord", "CompleteMigrationRecord"]
    messages = [soap.participant_message(n, smp, ident, key) for n in names]
    messages += [
        soap.smp_message(kind, smp, "https://smp.example.org/smp", "192.0.2.1")
        for kind in ("Create", "Update")
    ]
    messages += [soap.page_request(smp, None), soap.page_request(smp, "2")]
    for message in messages:
        document = etree.ElementTree(etree.fromstring(etree.tostring(message)))
        assert schema.validate(document), schema.error_log.last_error


def _fault(kind: str | None, text: str) -> etree._Element:
    detail = (
        f'<detail><lrs:{kind} xmlns:lrs="{soap.LRS}"><lrs:FaultMessage>{text}</lrs:FaultMessage>'
        f"</lrs:{kind}></detail>"
        if kind
        else ""
    )
    data = (
        f'<S:Envelope xmlns:S="{soap.SOAP_NS}"><S:Body><S:Fault><faultcode>S:Client</faultcode>'
        f"<faultstring>fault</faultstring>{detail}</S:Fault></S:Body></S:Envelope>"
    )
    return soap.body_of(data.encode())


@pytest.mark.parametrize(
    ("operation", "kind", "text", "fault"),
    [
        ("Create", "BadRequestFault", "The participant identifier 'x' already exists", "ALREADY"),
        ("Create", "UnauthorizedFault", "already registered by SMP other", "ALREADY"),
        ("Create", "NotFoundFault", "The SMP 'x' does not exist", "NOT_FOUND"),
        ("Create", "BadRequestFault", "The SMP 'x' does not exists", "BAD_REQUEST"),
        ("Delete", "BadRequestFault", "already deleted", "BAD_REQUEST"),
        ("Migrate", "UnauthorizedFault", "not yours", "UNAUTHORIZED"),
        ("Create", "InternalErrorFault", "database down", "UNREACHABLE"),
        ("Create", None, "", "UNREACHABLE"),
    ],
)
def test_faults_are_told_apart(operation, kind, text, fault) -> None:
    wanted = {"ALREADY": LocatorFault.ALREADY_REGISTERED}.get(fault) or LocatorFault[fault]
    error = soap.fault_of(_fault(kind, text), operation)
    assert error is not None and error.fault is wanted
    assert text in error.reason


def test_an_answer_that_is_not_soap_is_refused() -> None:
    with pytest.raises(ValueError):
        soap.body_of(b"<html><body>502 Bad Gateway</body></html>")
    with pytest.raises(ValueError):
        soap.body_of(b'<!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>')


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"sml_url_test": "https://sml.example.org/edelivery-sml"}, "needs FOURCORNER_SMP_ID_TEST"),
        (
            {"sml_url_prod": "http://sml.example.org", "smp_id_prod": "X"},
            "FOURCORNER_SML_URL_PROD='http://sml.example.org' is not https",
        ),
        ({"smp_id_test": "not an id!"}, "FOURCORNER_SMP_ID_TEST='not an id!' is not an SMP id"),
        ({"sml_timeout": 0.0}, "FOURCORNER_SML_TIMEOUT=0 is out of range"),
        ({"sml_ca_file": "/nonexistent/ca.pem"}, "FOURCORNER_SML_CA_FILE="),
    ],
)
def test_sml_settings_are_checked(settings, problem) -> None:
    problems = Settings(**settings).problems()
    assert any(problem in p for p in problems), problems


def test_sml_settings_that_work() -> None:
    ok = Settings(
        sml_url_test="https://api.sml.test.tech.peppol.org/edelivery-sml",
        smp_id_test="FOURCORNER-01",
    )
    assert ok.problems() == []
    loaded = Settings.load(
        {"FOURCORNER_SML_URL_PROD": "https://sml.example/x", "FOURCORNER_SMP_ID_PROD": "A.b-1"}
    )
    assert (loaded.sml_url_prod, loaded.smp_id_prod) == ("https://sml.example/x", "A.b-1")
