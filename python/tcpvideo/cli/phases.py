"""Where one command's time goes: wall and CPU seconds per phase, for ``tcpvideo analyze
--timings`` (issue 16: the CLI at >= 10 M packets/s, bench/analyze_speed.py prints the line).

Phases are timed from the moment the command's function runs; the time before it, start-up
(interpreter, imports, argument parsing), is measured too:
- its CPU: this process's user + system time at that moment (``getrusage``);
- its wall: now minus the process's start time (``/proc/self/stat`` field 22, in clock ticks
  since boot, so 10 ms resolution at the usual 100 Hz), None where /proc is missing.
What comes after the last phase (interpreter shut-down, freeing memory) cannot be measured from
inside: the bench gives it as the process's wall minus start-up and phases (so it carries the
start-up's 10 ms resolution).

The line (bench/analyze_speed.py reads it back)::

    timings: start-up 0.081 s (0.071 CPU), analysis 0.446 s (0.741 CPU), printing 0.021 s (0.021 CPU)
"""

from __future__ import annotations

import os
import resource
import time


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _since_process_start_s() -> float | None:
    """Wall seconds since this process was exec'd (fork time, to clock-tick resolution)."""
    try:
        with open("/proc/self/stat") as f:
            # Field 2 (comm) may hold spaces and parentheses: count fields after its last ')'.
            fields = f.read().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])  # field 22 of the whole line
        return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class PhaseClock:
    """Records (name, wall s, CPU s) per phase; ``mark(name)`` closes the phase that ran since
    the previous mark (or since the clock was made, which closes "start-up")."""

    def __init__(self) -> None:
        self.phases: list[tuple[str, float | None, float]] = [("start-up", _since_process_start_s(), _cpu_s())]
        self._wall = time.perf_counter()
        self._cpu = self.phases[0][2]

    def mark(self, name: str) -> None:
        wall, cpu = time.perf_counter(), _cpu_s()
        self.phases.append((name, wall - self._wall, cpu - self._cpu))
        self._wall, self._cpu = wall, cpu

    def line(self) -> str:
        parts = []
        for name, wall, cpu in self.phases:
            w = "?" if wall is None else f"{wall:.3f}"
            parts.append(f"{name} {w} s ({cpu:.3f} CPU)")
        return "timings: " + ", ".join(parts)
