"""Documents validated per second, and peak memory, next to the bare compiled pipeline.

Run by hand: ``.venv/bin/python bench/bench_validation.py [--seconds S] [--rounds R]``.

Throughput: the published ``base-example.xml`` and a 1 MiB invoice (the example's lines
repeated, totals kept right: valid), one document at a time, through ``SaxonValidator``
(the ``DocumentValidator`` port: a file path in, a ``ValidationResult`` out; the hardened
parser, a worker process, the SVRL read into failed asserts) and through the bare pipeline in
this process (saxonche alone: the two rule sets compiled with SchXslt, each document parsed from
its file and both transforms run to a string), the two taken in turn ``--rounds`` times and the
medians compared. "Per core" divides the documents by the CPU time they used in every process
involved (ours: this process and the worker), which this shared machine's load does not
inflate as it inflates wall time. The figure with every core's worker busy is printed too.
The same document is checked over and over, so the validator's cache of answers is off
(``cache=0``): every document here is run through the rules.

Memory: the peak resident size a 10 MiB invoice adds, over the state after a first small
document (rules compiled), of the worker and of this process, against 10 times the file; the
bare pipeline's own peak, in a fresh process, is printed beside it. Saxon's heap varies from
run to run by as much as 3x the file in the bare pipeline alone, so the two are taken in turn
``--memory-rounds`` times, each round printed, and the target is judged on the median.

``--baseline PYTHONPATH``: instead, this code, the code at ``PYTHONPATH`` (another checkout's
``.build/typecheck``) and the bare pipeline, each in a process of its own started once, are
given ``base-example.xml`` for ``--seconds`` in turn, ``--rounds`` times (the order reversed
every other round); each round's documents per CPU second are compared, and the medians of
those ratios printed. A few per cent show there that separate runs of the default mode, whose
figures follow the machine's load from one minute to the next, do not.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
from common import cpu_seconds  # noqa: E402

from fourcorner.adapters.validation import SaxonValidator  # noqa: E402
from fourcorner.adapters.validation.pool import cores  # noqa: E402
from validation_cases import big_invoice  # noqa: E402

RULES = ROOT / "src" / "adapters" / "validation" / "data"
BASE = ROOT / "tests" / "data" / "validation" / "examples" / "base-example.xml"
PER_CORE_TARGET = 150.0  # base-example.xml documents per second per core
RATIO_TARGET = 0.8
MEMORY_TARGET = 10.0  # peak added memory, in times the file's size

BARE = """
import sys, time
from saxonche import PySaxonProcessor
rules, files, seconds = sys.argv[1], sys.argv[2].split(','), float(sys.argv[3])
processor = PySaxonProcessor(license=False)
compiler = processor.new_xslt30_processor()
pipeline = compiler.compile_stylesheet(stylesheet_file=rules + '/schxslt/pipeline-for-svrl.xsl')
pipeline.set_parameter('schxslt.svrl.compact', processor.make_boolean_value(True))
compiled = [
    compiler.compile_stylesheet(stylesheet_text=pipeline.transform_to_string(
        source_file=rules + '/schematron/' + name))
    for name in ('CEN-EN16931-UBL.sch', 'PEPPOL-EN16931-UBL.sch')
]
def once(path):
    document = processor.parse_xml(xml_file_name=path)
    return [rules.transform_to_string(xdm_node=document) for rules in compiled]
"""

BARE_RATE = (
    BARE
    + """
for path in files:
    once(path)
    count, wall, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - wall < seconds or count < 3:
        once(path)
        count += 1
    print(count, time.perf_counter() - wall, time.process_time() - cpu, flush=True)
"""
)

# a process of the comparison: told seconds on each line, it answers "documents CPU-seconds"
BARE_TURNS = (
    BARE
    + """
once(files[0])
print('ready', flush=True)
for line in sys.stdin:
    count, wall, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - wall < float(line) or count < 3:
        once(files[0])
        count += 1
    print(count, time.process_time() - cpu, flush=True)
"""
)

BARE_MEMORY = (
    BARE
    + """
def hwm():
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))
def rss():
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS'))
once(files[0])
before = rss()
open('/proc/self/clear_refs', 'w').write('5')
once(files[1])
print((hwm() - before) * 1024)
"""
)


def _status(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


async def ours(validator: SaxonValidator, path: Path, seconds: float) -> tuple[float, float]:
    """(documents per second, documents per CPU second) one at a time."""
    result = await validator.validate(path)
    assert result.valid, result.errors
    (pid,) = validator.pool.pids()
    count, wall, cpu = 0, time.perf_counter(), time.process_time() + cpu_seconds(pid)
    while time.perf_counter() - wall < seconds or count < 3:
        await validator.validate(path)
        count += 1
    return count / (time.perf_counter() - wall), count / (
        time.process_time() + cpu_seconds(pid) - cpu
    )


def bare(paths: list[Path], seconds: float) -> list[tuple[float, float]]:
    done = subprocess.run(
        [sys.executable, "-c", BARE_RATE, str(RULES), ",".join(map(str, paths)), str(seconds)],
        capture_output=True,
        text=True,
        check=True,
    )
    out = []
    for line in done.stdout.splitlines():
        count, wall, cpu = line.split()
        out.append((int(count) / float(wall), int(count) / float(cpu)))
    return out


async def all_cores(path: Path, seconds: float) -> float:
    validator = SaxonValidator(workers=cores(), cache=0)
    try:
        await asyncio.gather(*(validator.validate(path) for _ in range(cores() * 2)))
        count, wall = 0, time.perf_counter()

        async def feed() -> None:
            nonlocal count
            while time.perf_counter() - wall < seconds:
                await validator.validate(path)
                count += 1

        await asyncio.gather(*(feed() for _ in range(cores() * 2)))
        return count / (time.perf_counter() - wall)
    finally:
        await validator.aclose()


async def turns(path: Path) -> None:
    """This code's side of ``--baseline``: checks ``path`` for the seconds of each line."""
    validator = SaxonValidator(workers=1, cache=0)
    try:
        await validator.validate(path)
        (pid,) = validator.pool.pids()
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            count, wall = 0, time.perf_counter()
            cpu = time.process_time() + cpu_seconds(pid)
            while time.perf_counter() - wall < float(line) or count < 3:
                await validator.validate(path)
                count += 1
            print(count, time.process_time() + cpu_seconds(pid) - cpu, flush=True)
    finally:
        await validator.aclose()


def compare(baseline: str, seconds: float, rounds: int) -> None:
    """This code, the code at ``baseline`` and the bare pipeline, taken in turn."""
    here = [sys.executable, __file__, "--turns"]
    commands = {
        "this code": (here, os.environ.get("PYTHONPATH")),
        "baseline": (here, baseline),
        "bare pipeline": ([sys.executable, "-c", BARE_TURNS, str(RULES), str(BASE), "0"], None),
    }
    procs = {}
    for name, (command, path) in commands.items():
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        procs[name] = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env | ({"PYTHONPATH": path} if path else {}),
        )
    rates: dict[str, list[float]] = {name: [] for name in procs}
    try:
        for proc in procs.values():
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for n in range(rounds):
            for name in list(procs)[:: 1 if n % 2 == 0 else -1]:
                proc = procs[name]
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(f"{seconds}\n")
                proc.stdin.flush()
                count, cpu = proc.stdout.readline().split()
                rates[name].append(int(count) / float(cpu))
    finally:
        for proc in procs.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()
    for name, got in rates.items():
        print(
            f"{name}: {statistics.median(got):,.1f} base-example docs per CPU second "
            f"(rounds {', '.join(f'{r:.0f}' for r in got)})"
        )
    for a, b in (
        ("this code", "bare pipeline"),
        ("baseline", "bare pipeline"),
        ("this code", "baseline"),
    ):
        ratios = [x / y for x, y in zip(rates[a], rates[b], strict=True)]
        low, _, high = statistics.quantiles(ratios, n=4)
        print(f"{a} / {b}: median {statistics.median(ratios):.3f} (quartiles {low:.3f}-{high:.3f})")
    print("load average", " ".join(Path("/proc/loadavg").read_text().split()[:3]))


def _reset_peak(*pids: int) -> None:
    for pid in pids:
        Path(f"/proc/{pid}/clear_refs").write_text("5")


async def memory(small: Path, big: Path) -> tuple[int, int]:
    """(bytes the worker's peak grew by, this process's)."""
    validator = SaxonValidator(workers=1, cache=0)
    try:
        await validator.validate(small)
        (pid,) = validator.pool.pids()
        worker, here = _status(pid, "VmRSS"), _status(os.getpid(), "VmRSS")
        _reset_peak(pid, os.getpid())
        result = await validator.validate(big)
        assert result.valid, result.errors
        return _status(pid, "VmHWM") - worker, _status(os.getpid(), "VmHWM") - here
    finally:
        await validator.aclose()


def bare_memory(small: Path, big: Path) -> int:
    """Bytes the bare pipeline's peak grew by, in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", BARE_MEMORY, str(RULES), f"{small},{big}", "0"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout.split()[-1])


def _mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="ours and bare, taken in turn")
    parser.add_argument(
        "--memory-rounds", type=int, default=5, help="10 MiB peaks, ours and bare in turn"
    )
    parser.add_argument(
        "--baseline", metavar="PYTHONPATH", help="compare with that code, in turn (see above)"
    )
    parser.add_argument("--turns", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.turns:
        await turns(BASE)
        return
    if args.baseline:
        compare(args.baseline, args.seconds, args.rounds)
        return
    with tempfile.TemporaryDirectory() as tmp:
        one, ten = Path(tmp) / "1mib.xml", Path(tmp) / "10mib.xml"
        one.write_bytes(big_invoice(2**20))
        ten.write_bytes(big_invoice(10 * 2**20))
        documents = [
            ("base-example.xml", BASE),
            (f"1 MiB invoice ({_mib(one.stat().st_size)})", one),
        ]
        validator = SaxonValidator(workers=1, cache=0)
        figures: dict[str, dict[str, list[float]]] = {n: {} for n, _ in documents}
        try:
            for _ in range(args.rounds):
                for (name, _), (rate, per_core) in zip(
                    documents, bare([p for _, p in documents], args.seconds), strict=True
                ):
                    figures[name].setdefault("bare", []).append(rate)
                    figures[name].setdefault("bare/core", []).append(per_core)
                for name, path in documents:
                    rate, per_core = await ours(validator, path, args.seconds)
                    figures[name].setdefault("ours", []).append(rate)
                    figures[name].setdefault("ours/core", []).append(per_core)
        finally:
            await validator.aclose()
        for name, got in figures.items():
            med = {k: statistics.median(v) for k, v in got.items()}
            print(
                f"{name}: {med['ours']:,.1f} docs/s ({med['ours/core']:,.1f} per core), bare "
                f"pipeline {med['bare']:,.1f} docs/s ({med['bare/core']:,.1f} per core): "
                f"ratio {med['ours'] / med['bare']:.2f} (per core "
                f"{med['ours/core'] / med['bare/core']:.2f}); rounds "
                + ", ".join(
                    f"{o:,.1f}/{b:,.1f}" for o, b in zip(got["ours"], got["bare"], strict=True)
                )
            )
        base = figures["base-example.xml"]
        per_core = statistics.median(base["ours/core"])
        ratio = statistics.median(base["ours"]) / statistics.median(base["bare"])
        print(
            f"target: >= {PER_CORE_TARGET:.0f} base-example docs/s per core "
            f"({'meets' if per_core >= PER_CORE_TARGET else 'MISSES'} it), ratio >= "
            f"{RATIO_TARGET} ({'meets' if ratio >= RATIO_TARGET else 'MISSES'} it)"
        )
        busy = await all_cores(BASE, args.seconds)
        print(f"base-example.xml with {cores()} workers busy: {busy:,.1f} docs/s")
        size = ten.stat().st_size
        ours_x: list[float] = []
        bare_x: list[float] = []
        for _ in range(args.memory_rounds):
            worker, here = await memory(BASE, ten)
            baseline = bare_memory(BASE, ten)
            ours_x.append((worker + here) / size)
            bare_x.append(baseline / size)
            print(
                f"10 MiB invoice ({_mib(size)}): peak +{_mib(worker + here)} "
                f"({ours_x[-1]:.1f}x; worker +{_mib(worker)}, this process +{_mib(here)}); "
                f"bare pipeline +{_mib(baseline)} ({bare_x[-1]:.1f}x)"
            )
        if not ours_x:  # --memory-rounds 0: no memory figure
            return
        median = statistics.median(ours_x)
        over = sum(x > MEMORY_TARGET for x in ours_x)
        print(
            f"10 MiB invoice over {len(ours_x)} rounds: median {median:.1f}x (max "
            f"{max(ours_x):.1f}x, over {MEMORY_TARGET:.0f}x in {over}); bare pipeline median "
            f"{statistics.median(bare_x):.1f}x (max {max(bare_x):.1f}x, over in "
            f"{sum(x > MEMORY_TARGET for x in bare_x)})"
        )
        verdict = "meets" if median <= MEMORY_TARGET else "MISSES"
        print(f"target: <= {MEMORY_TARGET:.0f}x the file, median ({verdict} it)")


if __name__ == "__main__":
    asyncio.run(main())
