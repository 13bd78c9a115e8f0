"""Validations per second of ``Catalogue.validate_participant_identifier``.

Run by hand: ``.venv/bin/python bench/bench_identifiers.py [--seconds S]``. It validates a mix of
valid identifiers of several schemes (check digits of many kinds, patterns only, the optional
scheme prefix, a deprecated scheme) in one process and prints the best of a few rounds.
"""

from __future__ import annotations

import argparse
import time

from fourcorner.adapters.codelists import load_catalogue

TARGET = 200_000  # validations per second

MIX = (
    "0088:1548079098355",  # GLN, GS1 mod 10
    "0088:5790000435975",
    "0192:745707327",  # NO, mod 11
    "0007:2120000787",  # SE, Luhn
    "0002:784301772",  # FR SIREN, Luhn
    "0009:78430177200025",  # FR SIRET, Luhn
    "0151:51824753556",  # AU ABN, mod 89
    "0204:991-33333TEST-33",  # DE Leitweg-ID, ISO 7064 MOD 97-10
    "0208:0899965307",  # BE, mod 97
    "9925:be0899965307",  # BE VAT, mod 97, lower case
    "0184:13585628",  # DK CVR, mod 11
    "0198:DK26769388",  # DK SE, mod 11
    "0211:IT06363391001",  # IT Partita IVA, Luhn
    "0106:12345678",  # NL KvK, format only
    "0190:00000001820029336000",  # NL OIN, pattern
    "0060:812810734",  # DUNS, pattern
    "0195:SGUEN199704270W",  # SG UEN, code-list pattern only
    "9930:DE123456789",  # DE VAT, no rule beyond the general form
    "9909:NO990399123MVA",  # NO VAT, deprecated: a warning
    "iso6523-actorid-upis::0088:7300010000001",  # with the scheme prefix
)


def run(seconds: float) -> float:
    catalogue = load_catalogue()
    validate = catalogue.validate_participant_identifier
    for value in MIX:  # every value of the mix is valid
        validate(value)
    best = 0.0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        rounds = 2_000
        start = time.perf_counter()
        for _ in range(rounds):
            for value in MIX:
                validate(value)
        elapsed = time.perf_counter() - start
        best = max(best, rounds * len(MIX) / elapsed)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="how long to measure")
    args = parser.parse_args()
    rate = run(args.seconds)
    verdict = "meets" if rate >= TARGET else "MISSES"
    print(f"validate_participant_identifier: {rate:,.0f} validations/s over {len(MIX)} kinds")
    print(f"target: >= {TARGET:,}/s ({verdict} it)")


if __name__ == "__main__":
    main()
