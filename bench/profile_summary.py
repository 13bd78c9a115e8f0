"""Where the time goes in py-spy raw profiles (``py-spy record --format raw``, as
``bench_transactions.py --profile`` writes them): samples per process, then the functions
holding the most samples, inclusive (on the stack) and self (on top).

    .venv/bin/python bench/profile_summary.py /tmp/prof/postgres-this-burst.serve.txt --top 30
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

_FRAME = re.compile(r"^(.*) \((.*?)(?::\d+)?\)$")


def frame(text: str) -> str:
    """``function (file:line)`` -> ``function (file)``: every line of a function together."""
    m = _FRAME.match(text)
    return f"{m.group(1)} ({m.group(2)})" if m else text


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--match", default="", help="only inclusive frames containing this text")
    args = p.parse_args()
    for path in args.files:
        processes: Counter[str] = Counter()
        inclusive: Counter[str] = Counter()
        own: Counter[str] = Counter()
        total = 0
        for line in path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack:
                continue
            n = int(count)
            total += n
            frames = stack.split(";")
            procs = [f for f in frames if f.startswith("process ")]
            # without --subprocesses py-spy names no process: the one recorded
            processes[procs[-1].split(" -c ")[0][:90] if procs else "(the process)"] += n
            frames = [f for f in frames if not f.startswith("process ")]
            for f in {frame(f) for f in frames}:
                inclusive[f] += n
            if frames:
                own[frame(frames[-1])] += n
        print(f"== {path} ({total} samples)")
        for name, n in processes.most_common():
            print(f"{n / total:6.1%}  {name}")
        print("-- inclusive")
        shown = [(f, n) for f, n in inclusive.most_common() if args.match in f]
        for f, n in shown[: args.top]:
            print(f"{n / total:6.1%}  {f}")
        print("-- self")
        for f, n in own.most_common(args.top):
            print(f"{n / total:6.1%}  {f}")


if __name__ == "__main__":
    main()
