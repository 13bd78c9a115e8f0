"""``fourcorner harness``: the runner behind the command line."""

from __future__ import annotations

import argparse
import sys

from fourcorner.entrypoints.harness.runner import run
from fourcorner.entrypoints.harness.servers import Target, command_tokens


def run_harness(args: argparse.Namespace) -> int:
    """Run, print the report, write the JUnit file; 0 without divergence, 1 with one, 2 when
    the run could not be made (the service or the token command failed)."""
    target = Target(args.base_url, command_tokens(args.token_command))
    report = run(
        target,
        max_examples=args.max_examples,
        seed=args.seed,
        namespace=args.namespace,
        token_command=args.token_command,
    )
    sys.stdout.write(report.text())
    if args.report is not None:
        report.junit(args.report)
    if report.findings:
        return 1
    return 2 if report.error else 0
