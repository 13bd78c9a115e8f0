"""The report ``fourcorner check`` prints: one finding a line, ``ok``, ``warn`` (works, but
look at it) or ``FAIL`` (the service will not work as configured), then a summary."""

from __future__ import annotations

import attrs

OK, WARN, FAIL = "ok", "warn", "FAIL"


@attrs.frozen
class Finding:
    level: str
    subject: str
    text: str


class Report:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, level: str, subject: str, text: str) -> None:
        self.findings.append(Finding(level, subject, text))

    def lines(self) -> list[str]:
        width = max((len(f.subject) for f in self.findings), default=0)
        out = [f"{f.level:<4}  {f.subject:<{width}}  {f.text}" for f in self.findings]
        counts = {level: sum(f.level == level for f in self.findings) for level in (OK, WARN)}
        failed = sum(f.level == FAIL for f in self.findings)
        verdict = "fix the FAIL lines" if failed else "ready"
        out.append(
            f"{counts[OK]} ok, {counts[WARN]} warning{'s' * (counts[WARN] != 1)}, "
            f"{failed} failed: {verdict}"
        )
        return out

    @property
    def failed(self) -> bool:
        return any(f.level == FAIL for f in self.findings)
