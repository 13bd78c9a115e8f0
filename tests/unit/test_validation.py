"""``SaxonValidator`` through the ``DocumentValidator`` port: the rules' own unit tests, the
published examples, SBDs, documents the rules do not apply to, hostile input, the SVRL report,
and the worker processes (killed when too slow, replaced when gone)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from lxml import etree

from fourcorner.adapters.validation import SaxonValidator
from fourcorner.application.ports import DocumentValidator
from fourcorner.domain.errors import InvalidInput, RulesFailed, ServiceUnavailable
from fourcorner.domain.validation import Flag
from fourcorner.entrypoints.config import Settings
from sbd_factory import make_sbd
from validation_cases import EXAMPLES, big_invoice, examples, mismatches, unit_cases

CASES = unit_cases()
BASE = (EXAMPLES / "base-example.xml").read_bytes()
CUSTOMIZATION = "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0"
PROFILE = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
UBL_RULES = "EN 16931 UBL 1.3.14.1, BIS Billing 3.0 UBL 3.0.19"
SVRL = "http://purl.oclc.org/dsdl/svrl"
CII = b"""<?xml version="1.0" encoding="UTF-8"?>
<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
  xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
  xmlns:udt="urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100">
  <rsm:ExchangedDocumentContext>
    <ram:BusinessProcessSpecifiedDocumentContextParameter>
      <ram:ID>urn:fdc:peppol.eu:2017:poacc:billing:01:1.0</ram:ID>
    </ram:BusinessProcessSpecifiedDocumentContextParameter>
    <ram:GuidelineSpecifiedDocumentContextParameter>
      <ram:ID>urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0</ram:ID>
    </ram:GuidelineSpecifiedDocumentContextParameter>
  </rsm:ExchangedDocumentContext>
  <rsm:ExchangedDocument>
    <ram:ID>INV-1</ram:ID>
    <ram:TypeCode>380</ram:TypeCode>
    <ram:IssueDateTime><udt:DateTimeString format="102">20240101</udt:DateTimeString></ram:IssueDateTime>
  </rsm:ExchangedDocument>
</rsm:CrossIndustryInvoice>"""


def test_the_adapter_is_a_document_validator(validator):
    port: DocumentValidator = validator
    assert callable(port.validate)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_the_rules_own_unit_tests_pass(validator, case):
    result = await validator.validate(case.document)
    assert mismatches(case, result) == []


def test_every_unit_test_is_loaded():
    # 269 active tests in the two sets (the two of PEPPOL-COMMON-R048.xm are commented out)
    assert len(CASES) == 269
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("path", examples(), ids=lambda p: p.name)
async def test_the_published_examples_are_valid(validator, path):
    result = await validator.validate(path)
    assert (result.checked, result.valid, result.errors) == (True, True, ())
    assert result.rules == UBL_RULES
    assert (result.customization_id, result.profile_id) == (CUSTOMIZATION, PROFILE)


async def test_bytes_and_a_file_give_the_same_answer(validator, tmp_path):
    broken = BASE.replace(b"<cbc:IssueDate>2017-11-13</cbc:IssueDate>", b"")
    (tmp_path / "doc.xml").write_bytes(broken)
    from_file = await validator.validate(tmp_path / "doc.xml")
    assert from_file == await validator.validate(broken)
    assert [e.id for e in from_file.errors] == ["BR-03"]


async def test_the_payload_of_an_sbd_is_checked(validator):
    broken = BASE.replace(b"<cbc:IssueDate>2017-11-13</cbc:IssueDate>", b"")
    bare = await validator.validate(broken)
    wrapped = await validator.validate(make_sbd(payload=broken))
    assert wrapped.checked and wrapped.valid is False
    assert wrapped.errors == bare.errors  # same rules, same locations: the payload's own
    assert (
        wrapped.errors[0].location
        == "/Q{urn:oasis:names:specification:ubl:schema:xsd:Invoice-2}Invoice[1]"
    )
    valid = await validator.validate(make_sbd(payload=BASE))
    assert valid.valid is True and valid.root == "Invoice"


async def test_a_payload_using_the_namespaces_of_the_sbd_is_checked_as_itself(validator):
    """The payload of a small SBD is handed to Saxon as lxml writes it: with the namespace
    declarations it uses from the SBD's root, as XSLT's copy-of of a large one has them."""
    cbc = b'\n    xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"'
    broken = BASE.replace(b"<cbc:IssueDate>2017-11-13</cbc:IssueDate>", b"")
    sbd = make_sbd(payload=broken)
    assert sbd.count(cbc) == 1
    moved = sbd.replace(cbc, b"").replace(
        b"<sh:StandardBusinessDocument ", b"<sh:StandardBusinessDocument" + cbc + b" ", 1
    )
    bare = await validator.validate(broken)
    wrapped = await validator.validate(moved)
    assert (wrapped.customization_id, wrapped.profile_id) == (CUSTOMIZATION, PROFILE)
    assert [e.id for e in wrapped.errors] == ["BR-03"]
    assert wrapped.errors == bare.errors and wrapped.warnings == bare.warnings


async def test_a_credit_note_gets_the_ubl_rules(validator):
    result = await validator.validate(EXAMPLES / "base-creditnote-correction.xml")
    assert (result.root, result.rules, result.valid) == ("CreditNote", UBL_RULES, True)


async def test_a_cii_invoice_gets_the_cii_rules(validator):
    result = await validator.validate(CII)
    assert result.checked and result.valid is False
    assert result.rules == "EN 16931 CII 1.3.14.1, BIS Billing 3.0 CII 3.0.19"
    assert (result.customization_id, result.profile_id) == (CUSTOMIZATION, PROFILE)
    assert "BR-CL-01" not in {e.id for e in result.errors}
    bad_type = CII.replace(b"<ram:TypeCode>380<", b"<ram:TypeCode>999<")
    assert "BR-CL-01" in {e.id for e in (await validator.validate(bad_type)).errors}


@pytest.mark.parametrize(
    "document",
    [
        b'<Order xmlns="urn:oasis:names:specification:ubl:schema:xsd:Order-2"><ID>1</ID></Order>',
        b'<ApplicationResponse xmlns="urn:oasis:names:specification:ubl:schema:xsd:'
        b'ApplicationResponse-2"/>',
        b'<Catalogue xmlns="urn:oasis:names:specification:ubl:schema:xsd:Catalogue-2"/>',
        b"<Invoice><ID>not in the UBL namespace</ID></Invoice>",
        b'<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2"/>',
    ],
    ids=["order", "mls", "catalogue", "no-namespace", "wrong-namespace"],
)
async def test_other_documents_are_not_checked(validator, document):
    result = await validator.validate(document)
    assert (result.checked, result.valid, result.errors, result.svrl) == (False, None, (), b"")
    assert result.root == etree.QName(etree.fromstring(document)).localname


async def test_an_sbd_of_another_document_is_not_checked(validator):
    order = b'<Order xmlns="urn:oasis:names:specification:ubl:schema:xsd:Order-2"/>'
    result = await validator.validate(
        make_sbd(
            payload=order,
            document="urn:oasis:names:specification:ubl:schema:xsd:Order-2::Order"
            "##urn:fdc:peppol.eu:poacc:trns:order:3::2.1",
        )
    )
    assert (result.checked, result.valid, result.root) == (False, None, "Order")


async def test_a_missing_or_foreign_customization_is_a_failed_rule(validator):
    missing = BASE.replace(
        f"<cbc:CustomizationID>{CUSTOMIZATION}</cbc:CustomizationID>".encode(), b""
    )
    result = await validator.validate(missing)
    assert result.checked and result.customization_id is None
    assert {"BR-01", "PEPPOL-EN16931-R004"} <= {e.id for e in result.errors}
    foreign = await validator.validate(BASE.replace(CUSTOMIZATION.encode(), b"urn:example:other"))
    assert foreign.checked and foreign.customization_id == "urn:example:other"
    assert [e.id for e in foreign.errors] == ["PEPPOL-EN16931-R004"]
    no_profile = await validator.validate(
        BASE.replace(f"<cbc:ProfileID>{PROFILE}</cbc:ProfileID>".encode(), b"")
    )
    assert no_profile.profile_id is None
    assert "PEPPOL-EN16931-R001" in {e.id for e in no_profile.errors}


async def test_a_rule_failing_at_two_places_is_reported_twice(validator):
    nameless = BASE.replace(b"<cbc:Name>item name</cbc:Name>", b"").replace(
        b"<cbc:Name>item name 2</cbc:Name>", b""
    )
    result = await validator.validate(nameless)
    assert [e.id for e in result.errors] == ["BR-25", "BR-25"]
    assert len({e.location for e in result.errors}) == 2
    assert all(e.flag is Flag.FATAL and e.text.startswith("[BR-25]") for e in result.errors)


async def test_warnings_are_kept_apart_from_errors(validator):
    case = next(c for c in CASES if any(e.kind == "warning" for e in c.expect))
    result = await validator.validate(case.document)
    rule = next(e.rule for e in case.expect if e.kind == "warning")
    assert rule in {w.id for w in result.warnings}
    assert all(w.flag is Flag.WARNING for w in result.warnings)
    assert rule not in {e.id for e in result.errors}


async def test_the_svrl_holds_every_failed_assert(validator):
    broken = BASE.replace(b"<cbc:DocumentCurrencyCode>EUR<", b"<cbc:DocumentCurrencyCode>QQQ<")
    result = await validator.validate(broken)
    svrl = etree.fromstring(result.svrl)
    assert svrl.tag == f"{{{SVRL}}}schematron-output" and svrl.get("title") == UBL_RULES
    failed = svrl.findall(f"{{{SVRL}}}failed-assert")
    reported = result.errors + result.warnings
    assert Counter(f.get("id") for f in failed) == Counter(f.id for f in reported)
    assert {(f.get("id"), f.get("location")) for f in failed} == {
        (f.id, f.location) for f in reported
    }
    assert Counter(e.id for e in result.errors)["PEPPOL-EN16931-R051"] > 1


async def test_rules_that_cannot_run_on_a_document_are_reported(validator):
    bad = BASE.replace(
        b'<cbc:PayableAmount currencyID="EUR">1656.25<', b'<cbc:PayableAmount currencyID="EUR">abc<'
    )
    with pytest.raises(RulesFailed) as caught:
        await validator.validate(bad)
    assert '"abc"' in caught.value.reason and "xs:decimal" in caught.value.reason
    assert (await validator.validate(BASE)).valid  # the worker goes on


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        (b"<Invoice", "not well-formed"),
        (b"", "empty"),
        (b'<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>', "DOCTYPE"),
        (
            b'<?xml version="1.0" encoding="ISO-8859-1"?><a/>',
            "UTF-8",
        ),
        (b"<a>" * 70 + b"</a>" * 70, "deeper"),
        (
            b'<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2">'
            b"<a>&ext;</a></Invoice>",
            "never ends",
        ),
    ],
    ids=["cut", "empty", "entities", "latin1", "deep", "undefined-entity"],
)
async def test_hostile_or_broken_documents_are_refused(validator, document, problem):
    with pytest.raises(InvalidInput) as caught:
        await validator.validate(document)
    assert problem in caught.value.problems[0].problem


async def test_an_sbd_without_a_business_document_is_refused(validator):
    sbd = etree.fromstring(make_sbd(payload=BASE))
    sbd.remove(sbd[1])
    header_only = etree.tostring(sbd)
    with pytest.raises(InvalidInput) as caught:
        await validator.validate(header_only)
    assert "no business document" in caught.value.problems[0].problem


async def test_concurrent_documents_get_their_own_answers(validator):
    broken = BASE.replace(b"<cbc:IssueDate>2017-11-13</cbc:IssueDate>", b"")
    documents = [BASE if n % 2 else broken for n in range(40)]
    results = await asyncio.gather(*(validator.validate(d) for d in documents))
    assert [r.valid for r in results] == [bool(n % 2) for n in range(40)]


async def test_a_document_taking_too_long_stops_its_worker():
    slow = SaxonValidator(workers=1, timeout=0.001)
    try:
        with pytest.raises(ServiceUnavailable) as caught:
            await slow.validate(BASE)
        assert "longer than 0.001 s" in caught.value.reason
        assert slow.pool.pids() == []  # killed, not left running
    finally:
        await slow.aclose()


async def test_a_worker_that_died_is_replaced():
    own = SaxonValidator(workers=1, cache=0)  # the same document again goes to a worker
    try:
        assert (await own.validate(BASE)).valid
        (pid,) = own.pool.pids()
        os.kill(pid, signal.SIGKILL)
        # wait until it is dead, leaving it for the pool to reap
        await asyncio.to_thread(os.waitid, os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        assert (await own.validate(BASE)).valid
        assert own.pool.pids() != [pid]
    finally:
        await own.aclose()
    assert own.pool.pids() == []
    with pytest.raises(ServiceUnavailable):
        await own.validate(BASE)


async def test_a_caller_that_stops_waiting_leaves_its_worker_to_the_next_document():
    own = SaxonValidator(workers=1, cache=0)
    try:
        assert (await own.validate(BASE)).valid
        (pid,) = own.pool.pids()
        given_up = asyncio.create_task(own.validate(big_invoice(2**20)))
        async with asyncio.timeout(60):
            while own.pool._idle:  # noqa: ASYNC110 (until the worker is taken: being checked)
                await asyncio.sleep(0.001)
        given_up.cancel()
        with pytest.raises(asyncio.CancelledError):
            await given_up
        broken = BASE.replace(b"<cbc:IssueDate>2017-11-13</cbc:IssueDate>", b"")
        # the worker's answer about the large invoice is read and dropped, not given here
        assert not (await own.validate(broken)).valid
        assert (await own.validate(BASE)).valid
        assert own.pool.pids() == [pid]  # the same worker: not killed, not replaced
    finally:
        await own.aclose()


def test_saxon_runs_only_in_the_workers(tmp_path):
    """The server's process never loads Saxon: its calls hold the GIL for their whole length."""
    code = (
        "import asyncio, pathlib, sys\n"
        "from fourcorner.adapters.validation import SaxonValidator\n"
        "async def main():\n"
        "    v = SaxonValidator(workers=1)\n"
        f"    r = await v.validate(pathlib.Path({str(EXAMPLES / 'base-example.xml')!r}))\n"
        "    await v.aclose()\n"
        "    assert r.valid, r\n"
        "    assert 'saxonche' not in sys.modules\n"
        "if __name__ == '__main__':\n"
        "    asyncio.run(main())\n"
    )
    script = tmp_path / "run.py"
    script.write_text(code)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_importing_starts_nothing_and_reads_no_rules():
    code = (
        "import sys\n"
        "opened = []\n"
        "sys.addaudithook(lambda e, a: opened.append(str(a[0])) if e == 'open' else None)\n"
        "import fourcorner.adapters.validation\n"
        "v = fourcorner.adapters.validation.SaxonValidator()\n"
        "assert not [p for p in opened if p.endswith(('.sch', '.xsl'))], opened\n"
        "assert v.pool.pids() == [] and 'saxonche' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_worker_is_given_files_by_absolute_path(validator, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("doc.xml").write_bytes(BASE)
    assert asyncio.run(validator.validate(Path("doc.xml"))).valid


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("FOURCORNER_VALIDATION_WORKERS", "-1", "0 (one per core but one) or more"),
        ("FOURCORNER_VALIDATION_TIMEOUT", "0", "more than 0 seconds"),
        ("FOURCORNER_VALIDATION_CACHE_MIB", "-1", "0 (no cache) or more"),
    ],
)
def test_validation_settings_are_checked(name, value, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        Settings.load({name: value, "FOURCORNER_DATABASE_URL": "memory://"})
    loaded = Settings.load(
        {"FOURCORNER_VALIDATION_WORKERS": "3", "FOURCORNER_DATABASE_URL": "memory://"}
    )
    assert (loaded.validation_workers, loaded.validation_timeout) == (3, 300.0)


def _until_started(validator: SaxonValidator) -> None:
    while not validator.pool.pids():
        time.sleep(0.01)


async def test_closing_answers_a_document_being_checked_at_once():
    own = SaxonValidator(workers=1)
    checking = asyncio.create_task(own.validate(big_invoice(4 * 2**20)))
    await asyncio.to_thread(_until_started, own)
    await own.aclose()
    with pytest.raises(ServiceUnavailable):
        await checking
    assert own.pool.pids() == []


async def test_a_large_invoice_is_valid(validator):
    result = await validator.validate(big_invoice(2**20))
    assert result.valid is True and result.errors == ()
