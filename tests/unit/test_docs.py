"""The user's documentation stays true to the code: every error code with its status, every
endpoint and every setting is in it; its links lead to files of the repository; and nothing in
the repository refers to a place outside it."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from fourcorner.application import collections
from fourcorner.application.context import DIRECTORY_ATTEMPTS, DIRECTORY_DELAYS
from fourcorner.domain.send_failures import TXE_CATALOGUE
from fourcorner.domain.webhook import MAX_DELIVERIES, MAX_WEBHOOKS
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.http.descriptions import PROPERTIES, spoken
from fourcorner.entrypoints.http.errors import catalogue
from fourcorner.entrypoints.http.openapi import status_of
from fourcorner.entrypoints.http.rendering import ListReply
from fourcorner.entrypoints.http.routes import routes

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_every_error_code_is_in_the_api_guide_with_its_status():
    text = (DOCS / "api.md").read_text()
    rows = dict(re.findall(r"^\| `(AT-\d{4})` \| (\d{3}) \|", text, re.M))
    assert rows == {error.code: str(status_of(error.kind)) for error in catalogue()}


def test_every_transaction_error_is_in_the_api_guide_with_its_action():
    text = (DOCS / "api.md").read_text()
    rows = dict(re.findall(r"^\| `(TXE-\d{4})` \|[^|]*\| `([A-Z_]+)` \|", text, re.M))
    assert rows == {failure.code: failure.action for failure in TXE_CATALOGUE}


def test_every_endpoint_is_in_the_api_guide_with_its_role():
    text = (DOCS / "api.md").read_text()
    index = dict(re.findall(r"^\| `([A-Z]+ /\S*)` \| (\w+) \|", text, re.M))
    expected = {f"{r.method} {r.path}": r.role.value if r.role else "public" for r in routes()}
    assert index == expected


def test_the_guide_names_every_route_an_api_key_may_not_call():
    """The guide's paragraph on API keys names each route only a person may call
    (``Route.user_only``), as ``METHOD /path``."""
    text = " ".join((DOCS / "api.md").read_text().split())
    paragraph = re.search(r"A key never acts on a user's account.*?AT-1022", text)
    assert paragraph is not None
    named = set(re.findall(r"`([A-Z]+ /[^`]*)`", paragraph.group(0)))
    assert named == {f"{r.method} {r.path}" for r in routes() if r.user_only}


# the collection behind each list the guide's search table names (the catalogue's lists are
# searched by application.catalogue, over the fields the table names)
SEARCHED = {
    "GET /orgs": collections.ORGANISATIONS,
    ".../members": collections.MEMBERS,
    ".../members/pending": collections.MEMBERS,
    ".../api_keys": collections.API_KEYS,
    ".../participants": collections.PARTICIPANTS,
    ".../certificates": collections.CERTIFICATES,
    ".../aps": collections.ACCESS_POINTS,
    ".../aps/alltouse": collections.ACCESS_POINTS,
    ".../smps/alltouse": collections.SMPS,
    ".../webhooks": collections.WEBHOOKS,
    ".../webhooks/events": collections.EVENTS,
    ".../transactions/to_network": collections.TRANSACTIONS,
    ".../transactions/from_network": collections.TRANSACTIONS,
    ".../transactions/{transactionId}/artefacts": collections.ARTEFACTS,
}


def test_the_guide_names_what_search_looks_in_for_every_list():
    """Every list is in the search table, with every field its search covers."""
    text = (DOCS / "api.md").read_text()
    section = text.split("\n## Lists: filters, search, sorting and cursors\n", 1)[1]
    rows = re.findall(r"^\| (`[^|]*`) \| ([^|]*) \|$", section.split("\n## ", 1)[0], re.M)
    table = {
        name: set(re.findall(r"`(\w+)`", fields))
        for lists, fields in rows
        for name in re.findall(r"`([^`]+)`", lists)
    }
    lists = {
        "GET /orgs" if r.path == "/orgs" else r.path.replace("/orgs/{orgId}", "...")
        for r in routes()
        if isinstance(r.response, ListReply)
    }
    assert set(table) == lists
    for name, collection in SEARCHED.items():
        assert {f.name for f in collection.searched} <= table[name], name


def test_the_guide_names_the_lists_that_come_newest_first():
    text = (DOCS / "api.md").read_text()
    section = text.split("\n## Lists: filters, search, sorting and cursors\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    assert "- `sort`:" in section
    sentence = re.search(r"Without `sort`.*?newest first", section, re.S)
    assert sentence is not None
    named = set(re.findall(r"`\.\.\./([\w/]+)`", sentence.group(0)))
    defaults = {
        "/".join(r.path.split("/")[-2:]): q.schema.get("default")
        for r in routes()
        for q in r.query
        if q.name == "sort"
    }
    assert named == {path for path, sort in defaults.items() if sort == "-createdAt"}
    assert set(defaults.values()) == {"createdAt", "-createdAt", None}


def test_every_setting_is_in_the_operations_guide():
    text = (DOCS / "operations.md").read_text()
    listed = set(re.findall(r"^\| `FOURCORNER_([A-Z0-9_]+)` \|", text, re.M))
    assert listed == {a.name.upper() for a in attrs.fields(Settings)}


def _in_order(text: str, figures: list[str]) -> bool:
    at = 0
    for figure in figures:
        found = re.search(rf"(?<![\d.]){re.escape(figure)}\b", text[at:])
        if found is None:
            return False
        at += found.end()
    return True


def _cited(setting: str, default: str, says: Callable[[str], bool]) -> int:
    """How often the guides cite ``setting``: rows of their settings tables (each with
    ``default``) and paragraphs (each of which ``says`` holds for)."""
    row = f"| `{setting}` | `{default}` |"
    cited = 0
    for page in (ROOT / "README.md", DOCS / "operations.md", DOCS / "api.md"):
        text = page.read_text()
        if f"| `{setting}` |" in text:
            assert row in text, page.name
            cited += 1
        for paragraph in re.split(r"\n\s*\n", text):
            prose = " ".join(line for line in paragraph.splitlines() if not line.startswith("|"))
            if setting in prose:
                assert says(prose), (page.name, prose)
                cited += 1
    return cited


def test_the_directory_retry_delays_are_cited_as_the_code_has_them():
    """The delays are written once (``context.DIRECTORY_DELAYS``); the setting's default and
    every guide's and the API description's words about it say the same figures, in turn."""
    seconds = ",".join(f"{d.total_seconds():g}" for d in DIRECTORY_DELAYS)
    assert Settings().directory_retry_delays == seconds
    figures = [spoken(d) for d in DIRECTORY_DELAYS]
    cited = _cited("FOURCORNER_DIRECTORY_RETRY_DELAYS", seconds, lambda t: _in_order(t, figures))
    assert cited == 5  # two setting tables and three paragraphs
    assert _in_order(PROPERTIES["DirectoryPublication"]["state"], figures)


def test_the_directory_attempts_are_cited_as_the_code_has_them():
    """The attempts after which the workers stop asking are written once
    (``context.DIRECTORY_ATTEMPTS``); the setting's default, the guides and the API
    description say the same number."""
    assert Settings().directory_attempts == DIRECTORY_ATTEMPTS
    number = str(DIRECTORY_ATTEMPTS)
    cited = _cited("FOURCORNER_DIRECTORY_ATTEMPTS", number, lambda t: f"{number} " in t)
    assert cited == 5  # two setting tables and three paragraphs
    assert f"{number} attempts" in PROPERTIES["DirectoryPublication"]["state"]


def test_the_webhook_limits_are_cited_as_the_code_has_them():
    """The webhooks an organisation may have and the deliveries an event keeps are written
    once (``domain.webhook``); the API guide, the README's and SECURITY.md's limits say the
    same numbers."""
    guide = (DOCS / "api.md").read_text()
    assert f"An organisation has at most {MAX_WEBHOOKS} webhooks" in guide
    assert f"An event keeps at most {MAX_DELIVERIES} deliveries" in guide
    assert f"the organisation has {MAX_WEBHOOKS}, as many" in guide
    assert f"it keeps at most {MAX_DELIVERIES} (" in guide
    readme = (ROOT / "README.md").read_text()
    assert f"| webhooks of an organisation | {MAX_WEBHOOKS} (`MAX_WEBHOOKS`" in readme
    assert f"| deliveries an event keeps | {MAX_DELIVERIES} (`MAX_DELIVERIES`)" in readme
    security = (ROOT / "SECURITY.md").read_text()
    assert f"{MAX_WEBHOOKS} webhooks an organisation" in security
    assert f"{MAX_DELIVERIES} deliveries an event keeps" in security


def test_going_live_names_only_settings_that_exist():
    text = (DOCS / "operations.md").read_text()
    section = text.split("\n## Going live\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"FOURCORNER_([A-Z0-9_]+)", section))
    known = {a.name.upper() for a in attrs.fields(Settings)}
    assert named - known == set()
    # the settings the network needs are all there
    assert {
        "OPERATOR_CERTS_DIR",
        "TRUST_ANCHORS_FILE",
        "SEAT_ID",
        "SML_URL_TEST",
        "SMP_ID_TEST",
        "SML_CA_FILE",
        "DISCOVERY",
        "SML_ZONE_TEST",
        "SML_ZONE_PROD",
        "DNS_NAMESERVERS",
        "ALLOW_HTTP_PEERS",
        "PUBLIC_URL",
    } <= named


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", *DOCS.glob("*.md"), *(ROOT / "examples").rglob("*.md")]


@pytest.mark.parametrize("page", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_lead_to_files_of_the_repository(page):
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text()):
        if re.match(r"[a-z]+://", target):
            continue
        assert (page.parent / target).exists(), f"{page.name} links to {target}"


def _tracked_text_files() -> list[Path]:
    run = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        pytest.skip("not a git work tree")
    names = [n for n in run.stdout.splitlines() if not n.endswith((".json", ".xml"))]
    return [ROOT / n for n in names if (ROOT / n).is_file()]


def test_nothing_refers_to_a_place_outside_the_repository():
    outside = re.compile("|".join(re.escape(p) for p in ("../" + "shared", "/work" + "/")))
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _tracked_text_files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if outside.search(line)
    ]
    assert found == []
