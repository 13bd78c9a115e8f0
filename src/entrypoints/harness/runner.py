"""Running the state machine against a service: the divergences it found, each as the shrunk
sequence of calls that shows it, written as curl commands; and a JUnit report for CI."""

from __future__ import annotations

import re
import secrets
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import attrs
from hypothesis import HealthCheck, Phase
from hypothesis import seed as seeded
from hypothesis import settings as hsettings
from hypothesis.stateful import get_state_machine_test

from fourcorner.entrypoints.harness.comparison import Divergence, Step
from fourcorner.entrypoints.harness.machine import machine
from fourcorner.entrypoints.harness.records import Run
from fourcorner.entrypoints.harness.servers import Call, ModelServer, Target, curl, exports

_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
DEFAULT_EXAMPLES = 25
DEFAULT_STEPS = 20


@attrs.frozen
class Finding:
    """One divergence: what differs, and the calls that reproduce it."""

    what: str
    steps: tuple[Step, ...]

    def reproduction(self, base_url: str, token_command: str | None) -> list[str]:
        callers = list(
            dict.fromkeys((s.sut.email, s.sut.superadmin) for s in self.steps if not s.sut.api_key)
        )
        lines = exports(callers, token_command)
        for step in self.steps:
            caller = (step.sut.email, step.sut.superadmin)
            n = callers.index(caller) if caller in callers else 0
            lines.append(curl(step.sut, base_url, f"TOKEN_{n}"))
        return lines

    def symbolic(self) -> list[str]:
        """The calls with each id written as the order it first appeared in: the same for
        every run with the same seed and namespace, whatever ids the service gave."""
        ids: dict[str, str] = {}

        def name(match: re.Match[str]) -> str:
            return ids.setdefault(match.group(0), f"#{len(ids)}")

        return [
            _ID.sub(name, f"{s.sut.method} {s.sut.path} {s.sut.query} {s.sut.body}")
            for s in self.steps
        ]


@attrs.frozen
class Report:
    base_url: str
    token_command: str | None
    seed: int
    namespace: str
    examples: int
    seconds: float
    findings: tuple[Finding, ...]
    error: str | None = None

    @property
    def ok(self) -> bool:
        return not self.findings and self.error is None

    def text(self) -> str:
        lines = [
            f"fourcorner harness: {self.base_url}, seed {self.seed}, namespace {self.namespace}, "
            f"{self.examples} examples in {self.seconds:.1f} s"
        ]
        if self.error:
            lines.append(f"error: {self.error}")
        for n, finding in enumerate(self.findings, start=1):
            lines.append("")
            lines.append(f"divergence {n}: {finding.what}")
            lines.append(f"reproduction ({len(finding.steps)} requests):")
            lines += [f"  {x}" for x in finding.reproduction(self.base_url, self.token_command)]
        if self.ok:
            lines.append("no divergence from the model")
        return "\n".join(lines) + "\n"

    def junit(self, path: Path) -> None:
        suite = ET.Element(
            "testsuite",
            name="fourcorner-harness",
            tests=str(max(1, len(self.findings))),
            failures=str(len(self.findings)),
            errors="1" if self.error else "0",
            time=f"{self.seconds:.3f}",
        )
        ET.SubElement(suite, "properties").extend(
            [
                ET.Element("property", name="seed", value=str(self.seed)),
                ET.Element("property", name="namespace", value=self.namespace),
                ET.Element("property", name="base_url", value=self.base_url),
            ]
        )
        if not self.findings:
            case = ET.SubElement(suite, "testcase", classname="harness", name="model")
            if self.error:
                ET.SubElement(case, "error", message=self.error)
        for n, finding in enumerate(self.findings, start=1):
            case = ET.SubElement(suite, "testcase", classname="harness", name=f"divergence {n}")
            failure = ET.SubElement(case, "failure", message=finding.what)
            failure.text = "\n".join(finding.reproduction(self.base_url, self.token_command))
        ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def _findings(error: BaseException) -> list[Finding]:
    if isinstance(error, Divergence):
        return [Finding(error.what, tuple(error.steps))]
    if isinstance(error, BaseExceptionGroup):
        return [f for e in error.exceptions for f in _findings(e)]
    return []


def run_machine(
    shared: Run, *, max_examples: int, steps: int, seed: int
) -> tuple[list[Finding], str | None]:
    """Run the machine over ``shared``'s two sides: the divergences found (each shrunk), or
    the error that stopped the run."""
    test = get_state_machine_test(
        machine(shared),
        settings=hsettings(
            max_examples=max_examples,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            phases=(Phase.generate, Phase.shrink),
            report_multiple_bugs=True,
            print_blob=False,
        ),
    )
    try:
        seeded(seed)(test)()
    except (Divergence, BaseExceptionGroup) as e:
        findings = _findings(e)
        if not findings:
            return [], f"{type(e).__name__}: {e}"
        return findings, None
    except Exception as e:  # the service could not be reached, a token not be had, ...
        return [], f"{type(e).__name__}: {e}"
    return [], None


def run(
    sut: Target,
    *,
    max_examples: int = DEFAULT_EXAMPLES,
    steps: int = DEFAULT_STEPS,
    seed: int | None = None,
    namespace: str | None = None,
    token_command: str | None = None,
) -> Report:
    """Run the machine against ``sut`` with the model served in this process; every failing
    example is shrunk and reported once. The same ``seed`` and ``namespace`` make the same
    calls (the namespace keeps the run's records apart from other runs' on the same service)."""
    seed = secrets.randbelow(2**32) if seed is None else seed
    namespace = namespace or secrets.token_hex(3)
    started = time.monotonic()
    try:  # the service answers and a token can be had, before any example is run
        sut.send(Call("GET", "/users/me", f"root.{namespace}@harness.test", superadmin=True))
    except Exception as e:
        unusable = f"the service cannot be used: {type(e).__name__}: {e}"
        return Report(sut.base_url, token_command, seed, namespace, 0, 0.0, (), unusable)
    with ModelServer() as model:
        shared = Run(sut, model, namespace)
        findings, error = run_machine(shared, max_examples=max_examples, steps=steps, seed=seed)
    return Report(
        sut.base_url,
        token_command,
        seed,
        namespace,
        shared.examples,
        time.monotonic() - started,
        tuple(findings),
        error,
    )
