"""``Absent``: the default of a command field whose null means something of its own.

Most fields of an update keep their value when left out or null. A field where null is a value
(``modeChangeRequest: null`` withdraws the request) defaults to ``ABSENT`` instead, so that
the use case tells a field left out from one sent as null. The interface's converter reads
``X | Absent | None`` as ``X | None``, and its JSON Schema does not show ``Absent``.
"""

from __future__ import annotations

import enum


class Absent(enum.Enum):
    ABSENT = "absent"


ABSENT = Absent.ABSENT
