"""The application layer takes time and ids from its ports (``Context.clock``, ``clock_ns``,
``new_id``), never from the system: a test decides both."""

from __future__ import annotations

import re
from pathlib import Path

APPLICATION = Path(__file__).resolve().parents[2] / "src" / "application"
FORBIDDEN = re.compile(
    r"\btime\.time(_ns)?\b|\buuid\.uuid4\b|\buuid4\(|\bdatetime\.now\b|\.utcnow\("
)


def test_the_application_layer_reads_no_system_clock_and_makes_no_random_id() -> None:
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted(APPLICATION.glob("**/*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if FORBIDDEN.search(line)
    ]
    assert APPLICATION.is_dir() and len(list(APPLICATION.glob("*.py"))) > 20
    assert found == []


def test_the_pattern_finds_what_it_forbids() -> None:
    for line in (
        "ns = time.time_ns()",
        "wall = time.time",
        "id=str(uuid.uuid4())",
        "key = uuid4().hex",
        "now = datetime.now(UTC)",
        "datetime.utcnow()",
    ):
        assert FORBIDDEN.search(line), line
    assert not FORBIDDEN.search("started = time.perf_counter()")
    assert not FORBIDDEN.search("now = ctx.clock()")
