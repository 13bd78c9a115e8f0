"""Text the service accepts from outside: what every store and format can write back.

A JSON string may escape any code point (``"\\ud800"``, ``"\\u0000"``), and a request line
decoded leniently carries undecodable bytes as lone surrogates. Such text cannot be encoded as
UTF-8 (lone surrogates), stored by PostgreSQL (NUL) or written in XML (other control
characters, U+FFFE and U+FFFF), so a record holding it could be stored but never shown again.
Accepted text is a sequence of Unicode scalar values that XML 1.0 allows: tab, line feed and
carriage return are the only control characters.
"""

from __future__ import annotations

import re

_UNWRITABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be accepted (naming the first offending code point), or None."""
    found = _UNWRITABLE.search(text)
    if found is None:
        return None
    point, at = ord(found.group()), found.start()
    if 0xD800 <= point <= 0xDFFF:
        return f"not valid Unicode: a lone surrogate (U+{point:04X}) at character {at}"
    if point >= 0xFFFE:
        return f"a noncharacter (U+{point:04X}) at character {at}"
    return (
        f"a control character (U+{point:04X}) at character {at}; text holds none but tab, "
        "line feed and carriage return"
    )


QUOTED_LENGTH = 60  # characters of a value an answer quotes back


def quoted(value: object, limit: int = QUOTED_LENGTH) -> str:
    """``value`` quoted as an answer echoes it (``repr``): at most ``limit`` characters of it,
    then how long it was, so that no answer repeats a large input back."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text)} characters)"


def cut(text: str, limit: int = QUOTED_LENGTH) -> str:
    """``text`` as an answer names it (the name of an element in a path): at most ``limit``
    characters, an ellipsis marking a cut."""
    return text if len(text) <= limit else text[:limit] + "…"
