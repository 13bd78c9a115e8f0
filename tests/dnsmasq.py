"""A real DNS server for the discovery tests: Debian's dnsmasq in the foreground on 127.0.0.1
and a free port, answering NAPTR records for one zone (and NXDOMAIN for any other name in it).

``make test`` installs dnsmasq when it is missing; without it the tests that need it are
skipped with the reason, or fail when ``CI=true``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence

import attrs
import dns.exception
import dns.message
import dns.query
import pytest


@attrs.frozen
class Naptr:
    name: str  # absolute or relative to nothing: "<hash>.iso6523-actorid-upis.<zone>"
    regexp: str
    order: int = 100
    preference: int = 10
    flags: str = "U"
    service: str = "Meta:SMP"

    def option(self) -> str:
        name = self.name.rstrip(".")
        fields = (name, self.order, self.preference, self.flags, self.service, self.regexp)
        return "--naptr-record=" + ",".join(str(f) for f in fields)


def _free_port() -> int:
    """A port free for both UDP and TCP on 127.0.0.1 (dnsmasq listens on both)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind(("127.0.0.1", 0))
            port = int(udp.getsockname()[1])
            with socket.socket() as tcp:
                try:
                    tcp.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port for dnsmasq")


def binary() -> str:
    found = shutil.which("dnsmasq") or next(
        (p for p in ("/usr/sbin/dnsmasq", "/sbin/dnsmasq") if os.path.exists(p)), None
    )
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("dnsmasq is not installed (make test installs Debian's dnsmasq-base)")
        pytest.skip("dnsmasq is not installed: apt-get install dnsmasq-base")
    return found


class Dnsmasq:
    """One dnsmasq process; ``start`` (again) with the records it should answer."""

    def __init__(self, zone: str) -> None:
        self.zone = zone.rstrip(".")
        self.port = _free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def nameserver(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, records: Sequence[Naptr], *, ttl: int = 0, extra: Sequence[str] = ()) -> None:
        self.stop()
        args = [
            binary(),
            "--no-daemon",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            f"--port={self.port}",
            "--listen-address=127.0.0.1",
            "--bind-interfaces",
            f"--local=/{self.zone}/",  # names of the zone that are not below: NXDOMAIN
            f"--local-ttl={ttl}",
            "--cache-size=0",
            *(r.option() for r in records),
            *extra,
        ]
        self._process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        self._wait_until_answering()

    def _wait_until_answering(self) -> None:
        probe = dns.message.make_query(f"probe.{self.zone}.", "NAPTR")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                err = self._process.stderr.read().decode() if self._process.stderr else ""
                raise RuntimeError(f"dnsmasq exited: {err.strip()}")
            try:
                dns.query.udp(probe, "127.0.0.1", port=self.port, timeout=0.2)
                return
            except (OSError, dns.exception.Timeout):
                time.sleep(0.05)
        raise RuntimeError("dnsmasq did not answer within 10 s")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process is not None and process.stderr is not None:
            process.stderr.close()


@pytest.fixture
def dnsmasq() -> Iterator[Dnsmasq]:
    """A stopped dnsmasq for ``sml.test.`` (``start`` it with records)."""
    binary()
    server = Dnsmasq("sml.test.")
    try:
        yield server
    finally:
        server.stop()
