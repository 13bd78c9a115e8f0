"""Helpers shared by the benchmarks: free ports, starting servers, running wrk, reading a
process's CPU time, sampling it with py-spy."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def need_wrk() -> str:
    wrk = shutil.which("wrk")
    if wrk is None:
        sys.exit("wrk is not installed: apt-get install wrk")
    return wrk


def pinned(core: int, argv: list[str]) -> list[str]:
    return (["taskset", "-c", str(core)] if shutil.which("taskset") else []) + argv


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"{url} not ready")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def http(method: str, url: str, headers: dict[str, str], body: Any = None) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.read()


def _ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    assert m, text
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def wrk(url: str, headers: dict[str, str], *, duration: int, connections: int) -> dict[str, float]:
    argv = [need_wrk(), "-t1", f"-c{connections}", f"-d{duration}s", "--latency"]
    for k, v in headers.items():
        argv += ["-H", f"{k}: {v}"]
    out = subprocess.run(pinned(1, [*argv, url]), capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    if non2xx:
        sys.exit(f"{url}: {non2xx.group(1)} non-2xx answers under load:\n{out}")
    return {"rps": rps, "p50": p50, "p99": p99}


def env_for(data_dir: Path, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOURCORNER_")}
    env |= {
        "FOURCORNER_DATA_DIR": str(data_dir),
        "FOURCORNER_PORT": str(port),
        "FOURCORNER_LOG_LEVEL": "warning",
    }
    return env | extra


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of ``pid`` so far (``/proc/<pid>/stat``); raises OSError once
    the process is gone."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def py_spy(
    pid: int, out: Path, *, seconds: float | None = None, subprocesses: bool = False
) -> subprocess.Popen[bytes]:
    """py-spy sampling ``pid`` (and its children with ``subprocesses``) into the raw profile
    ``out``, for ``seconds`` or until interrupted (SIGINT writes the profile)."""
    spy = shutil.which("py-spy") or str(BIN / "py-spy")
    argv = [spy, "record", "--nonblocking", "--format", "raw", "--rate", "200"]
    if subprocesses:
        argv.append("--subprocesses")
    if seconds is not None:
        argv += ["--duration", str(int(seconds))]
    return subprocess.Popen(
        [*argv, "--pid", str(pid), "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
