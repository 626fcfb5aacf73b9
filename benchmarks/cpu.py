"""The machine's busy and idle core-seconds, as ``/proc/stat`` counts them (Linux).

Work in every process counts, so a figure read around a step is that step's only on an
otherwise idle machine.
"""

from __future__ import annotations

from pathlib import Path

_TICKS_PER_SECOND = 100  # USER_HZ: /proc/stat counts in hundredths of a second
_IDLE_FIELDS = (3, 4)  # idle and iowait, after the "cpu" label


def busy_and_idle() -> tuple[float, float]:
    """Core-seconds the machine's cores have been busy and idle since it booted."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:9]]
    idle = sum(fields[index] for index in _IDLE_FIELDS)
    return (sum(fields) - idle) / _TICKS_PER_SECOND, idle / _TICKS_PER_SECOND
