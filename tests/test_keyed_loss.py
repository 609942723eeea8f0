"""Content-keyed loss (``loss.model = "keyed"``, crates/sim/src/keyed_loss.rs): the simulator and
linkem under ``tcpvideo emulate`` lose the same data segments of a real Linux TCP transfer.

One CUBIC bulk flow over ``scenarios/cc_loss_keyed.toml`` (20 Mbit/s, 40 ms, 1 % keyed loss),
4 s, captured at the client's end of the bottleneck in both runtimes. A data segment that arrives
below the highest sequence number already seen is the retransmission that repairs a hole: the
relative sequence numbers of those repairs name the segments the link lost. With Bernoulli loss
the two lists share almost nothing (each runtime draws per packet, in its own packet order);
keyed, they must be equal over the bytes both runs sent. Needs root and tshark (skips otherwise).
"""

from __future__ import annotations

import copy
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tcpvideo.emulate import emulate
from tcpvideo.emulate.network import PrivilegeError, check_privileges
from tcpvideo.simulation import ScenarioError, simulate

ROOT = Path(__file__).resolve().parent.parent
SERVER = "10.0.0.1"  # node 0 of the scenario (docs/scenario.md addresses)


def _scenario() -> dict:
    sc = tomllib.loads((ROOT / "scenarios" / "cc_loss_keyed.toml").read_text())
    sc["duration"] = "4s"
    sc["record"]["pcap"] = [{"link": "bottleneck", "at": "client", "file": "bottleneck.pcap"}]
    return sc


def _skip_reason() -> str | None:
    if shutil.which("tshark") is None:
        return "tshark not installed"
    try:
        check_privileges()
    except PrivilegeError as e:
        return str(e)
    return None


def _repairs(pcap: Path) -> tuple[list[int], int]:
    """Relative sequence numbers of data segments that filled a hole, and the highest byte seen."""
    out = subprocess.run(["tshark", "-r", str(pcap), "-Y", f"ip.src == {SERVER} && tcp.len > 0", "-T", "fields",
                          "-e", "tcp.seq", "-e", "tcp.len"], capture_output=True, text=True, check=True).stdout
    highest, repairs = 0, set()
    for line in out.splitlines():
        seq, length = map(int, line.split())
        if seq + length <= highest:
            repairs.add(seq)
        highest = max(highest, seq + length)
    return sorted(repairs), highest


def test_keyed_is_a_scenario_loss_model_with_one_line_errors():
    sc = _scenario()
    sc["link"][1]["loss"] = {"model": "keyed", "p": 1.5}
    with pytest.raises(ScenarioError, match=r"link\[1\]\.loss\.p"):
        simulate(sc)
    sc["link"][1]["loss"] = {"model": "keyed", "p": 0.01, "r": 0.2}
    with pytest.raises(ScenarioError, match=r"\.r"):
        simulate(sc)


@pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")
def test_simulator_and_linkem_lose_the_same_segments_of_a_real_transfer(tmp_path):
    sc = _scenario()
    simulate(copy.deepcopy(sc), out=tmp_path / "sim")
    emulate(copy.deepcopy(sc), out=tmp_path / "real", log=lambda m: None, rt_priority=10)
    sim, sim_end = _repairs(tmp_path / "sim" / "bottleneck.pcap")
    real, real_end = _repairs(tmp_path / "real" / "bottleneck.pcap")
    # up to the last hole both runs repaired before the end (a loss in the last RTT is repaired
    # after the run in the slower one)
    upto = min(sim[-1] if sim else 0, real[-1] if real else 0, sim_end, real_end)
    sim = [s for s in sim if s <= upto]
    real = [s for s in real if s <= upto]
    assert len(sim) >= 5, f"too few losses to compare: {sim}"
    assert sim == real, f"simulator repaired {sim}, kernel {real}"
