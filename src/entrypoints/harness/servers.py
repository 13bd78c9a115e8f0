"""The two sides the harness talks to: a service under test at a base URL, and the reference
model, the in-memory core served in this process (the same rules and error codes, on
``memory://``); and how a call is written as a curl command.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import socket
import subprocess
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs

# (email, superadmin) -> a bearer token
Tokens = Callable[[str, bool], str]


@attrs.frozen
class Call:
    """One HTTP request as the harness makes it: the caller (an email; superadmin or not)."""

    method: str
    path: str
    email: str
    superadmin: bool = False
    body: Any = None  # JSON, or bytes sent as application/xml (an SBD)
    query: tuple[tuple[str, str], ...] = ()
    api_key: str | None = None  # sent as X-Api-Key instead of the caller's token
    headers: tuple[tuple[str, str], ...] = ()  # more request headers (Idempotency-Key)

    def url(self, base: str) -> str:
        query = f"?{urllib.parse.urlencode(self.query)}" if self.query else ""
        return f"{base.rstrip('/')}{self.path}{query}"


@attrs.frozen
class Answer:
    status: int
    body: Any


def command_tokens(command: str) -> Tokens:
    """Tokens from a command: ``{email}`` in it is replaced by the user's email address and
    ``{superadmin}`` by ``--superadmin`` for a superadmin (else nothing); it prints the token."""

    def token(email: str, superadmin: bool) -> str:
        done = subprocess.run(
            shlex.split(render_command(command, email, superadmin)),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"the token command failed: {done.stderr.strip()[-500:]}")
        return done.stdout.strip()

    return token


def render_command(command: str, email: str, superadmin: bool) -> str:
    flag = "--superadmin" if superadmin else ""
    text = command.replace("{email}", shlex.quote(email))
    return (text.replace(" {superadmin}", f" {flag}" if flag else "")).replace("{superadmin}", flag)


class Target:
    """A running service: calls go to ``base_url`` with tokens from ``tokens`` (kept per
    caller for the run)."""

    def __init__(self, base_url: str, tokens: Tokens, *, timeout: float = 30.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"the base URL is http:// or https://, not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._tokens = tokens
        self._kept: dict[tuple[str, bool], str] = {}
        self._timeout = timeout

    def token(self, email: str, superadmin: bool) -> str:
        key = (email, superadmin)
        if key not in self._kept:
            self._kept[key] = self._tokens(email, superadmin)
        return self._kept[key]

    def send(self, call: Call) -> Answer:
        xml = isinstance(call.body, bytes)
        data = call.body if xml else None if call.body is None else json.dumps(call.body).encode()
        url = call.url(self.base_url)
        request = urllib.request.Request(url, data=data, method=call.method)  # noqa: S310 - http(s) only
        if call.api_key is not None:
            request.add_header("X-Api-Key", call.api_key)
        else:
            token = self.token(call.email, call.superadmin)
            request.add_header("Authorization", f"Bearer {token}")
        for name, value in call.headers:
            request.add_header(name, value)
        if data is not None:
            request.add_header("Content-Type", "application/xml" if xml else "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as r:  # noqa: S310
                return Answer(r.status, _json(r.read()))
        except urllib.error.HTTPError as e:
            return Answer(e.code, _json(e.read()))


def _json(data: bytes) -> Any:
    try:
        return json.loads(data) if data else None
    except ValueError:
        return data.decode("utf-8", "replace")


def curl(call: Call, base_url: str, token_variable: str) -> str:
    """``call`` as a curl command; the token is read from ``$token_variable``."""
    parts = ["curl -s"]
    if call.method != "GET":
        parts.append(f"-X {call.method}")
    parts.append(shlex.quote(call.url(base_url)))
    if call.api_key is not None:
        parts.append(f"-H {shlex.quote('X-Api-Key: ' + call.api_key)}")
    else:
        parts.append(f'-H "Authorization: Bearer ${token_variable}"')
    parts.extend(f"-H {shlex.quote(f'{name}: {value}')}" for name, value in call.headers)
    if isinstance(call.body, bytes):
        parts.append("-H 'Content-Type: application/xml'")
        parts.append(f"--data-binary {shlex.quote(call.body.decode())}")
    elif call.body is not None:
        parts.append("-H 'Content-Type: application/json'")
        parts.append(f"-d {shlex.quote(json.dumps(call.body, separators=(',', ':')))}")
    return " ".join(parts)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class InProcessServer:
    """The service's app (``container.web_app``) served on 127.0.0.1 from a thread of this
    process, for a container built by the caller (the reference model, or a test's container
    with its own overrides)."""

    def __init__(self, container: Any, port: int) -> None:
        self.container = container
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: Any = None

    def start(self) -> InProcessServer:
        from aiohttp import web

        from fourcorner.entrypoints.container import web_app

        self._thread.start()

        async def up() -> Any:
            app = await web_app(self.container, workers=False)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", self.port).start()
            return runner

        self._runner = asyncio.run_coroutine_threadsafe(up(), self._loop).result(60)
        return self

    def tokens(self, email: str, superadmin: bool) -> str:
        authority = self.container.token_authority()
        return str(authority.issue(email, name="", superadmin=superadmin, ttl=timedelta(hours=12)))

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(60)
            self._runner = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> InProcessServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def in_process(
    data_dir: Path, database_url: str = "memory://", **overrides: Any
) -> InProcessServer:
    """A server of this process on ``database_url`` (the in-memory core by default), its
    container built with ``overrides`` (``build_container``'s: provider name -> value)."""
    from fourcorner.entrypoints.config import Settings
    from fourcorner.entrypoints.container import build_container

    port = free_port()
    settings = Settings.load(
        {},
        data_dir=str(data_dir),
        database_url=database_url,
        port=str(port),
        workers="false",
        base_url=f"http://127.0.0.1:{port}",
    )
    return InProcessServer(build_container(settings, **overrides), port)


class ModelServer:
    """The reference model: the in-memory core on a temporary data dir, served here."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="fourcorner-model-")
        self.server = in_process(Path(self._dir.name))

    def __enter__(self) -> Target:
        self.server.start()
        return Target(self.server.base_url, self.server.tokens)

    def __exit__(self, *exc: object) -> None:
        self.server.stop()
        self._dir.cleanup()


def exports(users: Sequence[tuple[str, bool]], command: str | None) -> list[str]:
    """The shell lines that put each caller's token in ``$TOKEN_<n>``."""
    lines = []
    for n, (email, superadmin) in enumerate(users):
        made = render_command(command, email, superadmin) if command else f"<a token of {email}>"
        lines.append(f"TOKEN_{n}=$({made})" if command else f"TOKEN_{n}='{made}'")
    return lines
