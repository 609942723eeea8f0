"""Emulation: a scenario file on real Linux TCP (network namespaces, veth/tbf, linkem).

``tcpvideo.emulate.emulate(scenario, seed=None, out=None)`` runs the scenario the simulator would
run — same nodes, addresses, routes, start times, request schedules and loss streams, read by the
simulator's own parser — on the kernel's TCP with real applications, and returns the same tables
as :func:`tcpvideo.simulate` (a ``SimResult``). Needs root. The parts:

* ``plan.py`` — scenario → what to create; refusals of what the real stack cannot do;
* ``network.py`` — namespaces, links, link emulators; run ids, teardown, ``cleanup()``;
* ``apps.py`` — the applications (bulk, request/response), one process per host;
* ``capture.py`` — ``record.pcap`` with dumpcap;
* ``runner.py`` — one run, start to tables;
* ``compare.py`` — simulated vs real, flow by flow and link by link.
"""

from tcpvideo.emulate.network import PrivilegeError, cleanup
from tcpvideo.emulate.plan import ScenarioRefused
from tcpvideo.emulate.runner import emulate

__all__ = ["emulate", "cleanup", "ScenarioRefused", "PrivilegeError"]
