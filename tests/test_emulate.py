"""``tcpvideo emulate``: refusals before anything exists, a short real run, and hygiene.

Without root only the first part runs (refusals need no privileges: they happen before the
privilege check). The real-network tests build their own namespaces (run ids of their own), stay
under ~15 s each, and check against what the emulator does not compute itself: the kernel's
counters, ``ip netns list``, the host's own interface list.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tcpvideo.emulate import ScenarioRefused, cleanup, emulate
from tcpvideo.emulate.network import MANIFEST_DIR, NS_PREFIX, PrivilegeError, check_privileges
from tcpvideo.simulation import ScenarioError, simulate

TWO_HOSTS = {
    "name": "emu_two_hosts",
    "duration": "3s",
    "seed": 3,
    "node": [{"name": "srv"}, {"name": "rtr", "kind": "router"}, {"name": "cli"}],
    "link": [
        {"name": "access", "a": "srv", "b": "rtr", "rate": "1Gbps"},
        {"name": "wan", "a": "rtr", "b": "cli", "rate": "20Mbps", "delay": "10ms", "queue": 60,
         "ab": {"loss": {"model": "bernoulli", "p": 0.01}}},
    ],
    "flow": [
        {"name": "bulk", "client": "cli", "server": "srv", "app": "bulk", "bytes": "2MB", "tcp": {"cc": "cubic"}},
        {"name": "segments", "client": "cli", "server": "srv", "app": "reqresp", "period": "0.5s", "count": 4,
         "response_bytes": "100kB", "start": "0.2s", "tcp": {"cc": "reno"}},
    ],
    "record": {"sample_interval": "50ms"},
}


def _with(**over) -> dict:
    d = json.loads(json.dumps(TWO_HOSTS))
    for k, v in over.items():
        d[k] = v
    return d


def _run_namespaces() -> set[str]:
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return {line.split()[0] for line in r.stdout.splitlines() if line.startswith(f"{NS_PREFIX}-")}


# ---------------------------------------------------------------------------------------------
# refused before anything is created (no root needed)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("flow_over, key", [
    ({"reader": {"rate": "1Mbps"}}, "flow[0].reader"),
    ({"cwnd_clamp": 10}, "flow[0].cwnd_clamp"),
    ({"tcp": {"cc": "cubic", "cc_params": {"beta": 0.7}}}, "flow[0].tcp.cc_params"),
    ({"tcp": {"cc": "cubic", "tso": False}}, "flow[0].tcp.tso"),
    ({"tcp": {"cc": "no_such_cc_in_any_kernel"}}, None),  # the simulator's parser refuses it first
])
def test_a_simulator_only_option_is_refused_with_one_line_naming_the_key(flow_over, key):
    sc = _with()
    sc["flow"][0].update(flow_over)
    before = _run_namespaces() if os.geteuid() == 0 else set()
    with pytest.raises((ScenarioRefused, ScenarioError)) as e:
        emulate(sc)
    msg = str(e.value)
    assert "\n" not in msg
    if key is not None:
        assert msg.startswith(key), msg
    else:
        assert "tcp.cc" in msg, msg
    if os.geteuid() == 0:
        assert _run_namespaces() == before, "nothing was created"


@pytest.mark.parametrize("where, table, key", [
    ("", {"reorder": {"p": 0.01, "delay": "30ms"}}, "link[1].reorder"),
    ("ab", {"spikes": {"every": "10s", "length": "500ms"}}, "link[1].ab.spikes"),
    ("", {"jitter": {"mean": "20us"}}, "link[1].jitter"),
])
def test_a_simulator_only_link_key_is_refused_not_silently_dropped(where, table, key):
    from tcpvideo.emulate.plan import make_plan, read_scenario

    sc = _with()
    link = sc["link"][1]
    (link.setdefault(where, {}) if where else link).update(table)
    text, fmt, raw = read_scenario(sc)
    with pytest.raises(ScenarioRefused) as e:
        make_plan(text, fmt, raw, ccs={"reno", "cubic", "bbr"})
    assert str(e.value).startswith(key + ": simulator-only"), str(e.value)
    assert "\n" not in str(e.value)


def test_a_video_app_is_refused_naming_the_key_instead_of_running_without_moving_a_byte():
    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "seed004_live.toml"
    before = _run_namespaces() if os.geteuid() == 0 else set()
    with pytest.raises(ScenarioRefused, match=r"^dumbbell\.flow\.app: 'live' is simulator-only") as e:
        emulate(scenario)
    assert "\n" not in str(e.value)
    if os.geteuid() == 0:
        assert _run_namespaces() == before, "nothing was created"


def test_a_congestion_control_the_kernel_lacks_is_refused_naming_the_flow():
    from tcpvideo.emulate.plan import make_plan, read_scenario

    sc = _with()
    sc["flow"][1]["tcp"] = {"cc": "vegas"}  # known to the simulator
    text, fmt, raw = read_scenario(sc)
    with pytest.raises(ScenarioRefused, match=r"^flow\[1\]\.tcp\.cc: 'vegas' is not a congestion control of this kernel"):
        make_plan(text, fmt, raw, ccs={"reno", "cubic", "bbr"})


def test_per_host_tcp_settings_that_disagree_are_refused():
    from tcpvideo.emulate.plan import make_plan, read_scenario

    sc = _with()
    sc["flow"][0]["tcp"] = {"cc": "cubic", "sack": False}
    sc["flow"][1]["tcp"] = {"cc": "reno", "sack": True}
    text, fmt, raw = read_scenario(sc)
    with pytest.raises(ScenarioRefused, match=r"^flow\[1\]\.tcp\.sack: Linux sets it per host"):
        make_plan(text, fmt, raw, ccs={"reno", "cubic"})


def test_tlp_and_rack_map_to_linuxs_two_sysctls_and_a_kernel_that_keeps_rack_says_so(monkeypatch):
    from tcpvideo.emulate import plan as plan_mod

    def sysctls_for(tcp: dict, release: str):
        monkeypatch.setattr(plan_mod.platform, "release", lambda: release)
        sc = _with()
        for f in sc["flow"]:
            f["tcp"] = {"cc": f["tcp"]["cc"], **tcp}
        text, fmt, raw = plan_mod.read_scenario(sc)
        p = plan_mod.make_plan(text, fmt, raw, ccs={"reno", "cubic"})
        return p.sysctls[0], p.warnings

    # TLP alone off: tcp_early_retrans = 0, RACK untouched.
    s, w = sysctls_for({"tlp": False}, "6.18.44")
    assert s.get("net.ipv4.tcp_early_retrans") == 0 and "net.ipv4.tcp_recovery" not in s and not w
    # rack_tlp off is both off in the simulator, so both sysctls; 6.18 keeps RACK and says so.
    s, w = sysctls_for({"rack_tlp": False}, "6.18.44")
    assert (s["net.ipv4.tcp_recovery"], s["net.ipv4.tcp_early_retrans"]) == (0, 0)
    assert len(w) == 1 and "cannot turn RACK off" in w[0], w
    _, w = sysctls_for({"rack_tlp": False}, "6.12.9")
    assert w == []


def test_the_plan_uses_the_simulators_addresses_routes_and_link_kinds():
    from tcpvideo.emulate.plan import linkem_settings, make_plan, read_scenario

    text, fmt, raw = read_scenario(TWO_HOSTS)
    plan = make_plan(text, fmt, raw, ccs={"reno", "cubic"})
    assert [n["ip"] for n in plan.nodes] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert [l.kind for l in plan.links] == ["tbf", "linkem"]  # 1 Gbit/s: shaped; delay or loss: linkem
    # srv reaches cli through rtr over link 0; rtr reaches cli over link 1
    assert {(r["node"], r["dst"]): (r["link"], r["next"]) for r in plan.topology["routes"]} == {
        (0, 2): (0, 1), (1, 0): (0, 0), (1, 2): (1, 2), (2, 0): (1, 1)}
    wan = plan.links[1]
    assert linkem_settings(wan.ab) == {"rate": "20000000bps", "delay": "10000000ns", "queue": "60",
                                       "loss": "bernoulli", "loss_p": "0.01"}
    assert "loss" not in linkem_settings(wan.ba)


def test_without_root_emulate_refuses_with_one_line(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(PrivilegeError, match="needs root"):
        check_privileges()


def test_bad_input_on_the_command_line_exits_2_before_creating_anything(tmp_path):
    p = tmp_path / "bad.json"
    sc = _with()
    sc["flow"][0]["reader"] = {"rate": "1Mbps"}
    p.write_text(json.dumps(sc))
    r = subprocess.run([sys.executable, "-m", "tcpvideo.cli", "emulate", str(p)], capture_output=True, text=True,
                       env=dict(os.environ, COLUMNS="200"))
    if "No module named tcpvideo.cli.__main__" in r.stderr:
        r = subprocess.run([sys.executable, "-c", "from tcpvideo.cli import main; main()", "emulate", str(p)],
                           capture_output=True, text=True, env=dict(os.environ, COLUMNS="200"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "flow[0].reader" in r.stdout


def test_the_ks_distance_is_the_largest_gap_between_the_two_empirical_cdfs():
    from tcpvideo.emulate.compare import ks_distance

    assert ks_distance([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == 0.0
    assert ks_distance([1.0, 2.0], [5.0, 6.0]) == 1.0
    assert ks_distance([1.0, 2.0, 3.0], [2.0, 3.0, 4.0]) == pytest.approx(1 / 3)
    assert ks_distance([None, 1.0], [1.0]) == 0.0  # unfinished requests (None) are left out
    assert ks_distance([], [1.0]) is None


def test_a_window_no_path_can_have_is_named_per_flow_from_its_first_sample():
    from tcpvideo.emulate.anomalies import IMPLAUSIBLE_BYTES, describe, window_anomalies

    # flow 1 as in the CI run of 2026-11-29: ssthresh 668 121 856 segments, then cwnd set to it
    bogus = 668_121_856 * 1448
    series = {"t_s": [4.5, 4.6, 4.7, 4.8, 0.1, 0.2],
              "flow": [1, 1, 1, 1, 0, 0],
              "cwnd_bytes": [27_512, 28_960, bogus, 739_928, 14_480, None],
              "ssthresh_bytes": [10_136, bogus, bogus, bogus // 2, None, None]}
    found = window_anomalies(series)
    assert found == [{"flow": 1, "first_t_s": 4.6, "samples": 3, "max_cwnd_bytes": bogus,
                      "max_ssthresh_bytes": bogus}]
    assert "flow 1" in describe(found[0]) and "4.60 s" in describe(found[0])
    # the infinite threshold (None) and a window at the bound are not anomalies
    series = {"t_s": [1.0, 2.0], "flow": [0, 0], "cwnd_bytes": [IMPLAUSIBLE_BYTES, 1448], "ssthresh_bytes": [None, None]}
    assert window_anomalies(series) == []


# ---------------------------------------------------------------------------------------------
# real runs (root)
# ---------------------------------------------------------------------------------------------
def _skip_reason() -> str | None:
    try:
        check_privileges()
    except PrivilegeError as e:
        return str(e)
    return None


needs_root = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")


@needs_root
def test_a_short_scenario_runs_on_linux_and_writes_the_simulators_tables(tmp_path):
    before = _run_namespaces()
    real = emulate(TWO_HOSTS, out=tmp_path / "real")
    sim = simulate(TWO_HOSTS)
    assert _run_namespaces() == before, "torn down"
    assert not real.summary["errors"], real.summary["errors"]
    # same tables, same columns in the same order (real runs add one column each to flows and
    # links: the total retransmissions, and what emulated the link)
    for name in ("series", "queues", "requests", "events"):
        assert getattr(real, name).column_names == getattr(sim, name).column_names, name
    assert real.flows.column_names == sim.flows.column_names + ["retransmissions"]
    assert real.links.column_names == sim.links.column_names + ["emulated_by"]
    flows = {f["name"]: f for f in real.flows.to_pylist()}
    # the finite bulk flow completed: every byte arrived, an FCT was measured
    assert flows["bulk"]["bytes"] == 2_000_000 and flows["bulk"]["fct_s"] is not None
    # the handshake crossed the 10 ms link twice: ≥ 20 ms (never less: linkem never releases early)
    assert flows["bulk"]["handshake_rtt_ms"] >= 20.0
    # all four requests were answered in full, in the simulator's schedule
    req = real.requests.to_pylist()
    assert [r["scheduled_s"] for r in req] == pytest.approx([0.2, 0.7, 1.2, 1.7])
    assert all(r["completed_s"] is not None and r["download_s"] > 0.02 for r in req)
    links = {(l["link"], l["from"]): l for l in real.links.to_pylist()}
    wan = links[("wan", "rtr")]
    assert wan["emulated_by"] == "linkem"
    # 1 % loss on the data direction: linkem dropped some, and the kernel retransmitted at least
    # as many segments as linkem dropped on the wire (its own counter, not ours)
    assert wan["loss_drops"] >= 1
    srv_counters = real.summary["host_tcp_counters"]["srv"]
    assert srv_counters["Tcp.RetransSegs"] >= wan["loss_drops"] + wan["queue_drops"] - 5
    assert links[("wan", "cli")]["loss_drops"] == 0
    # the sender's TCP_INFO series exists and the queue of the shaped link was sampled
    assert real.series.num_rows > 10
    assert real.summary["kernel_window_anomalies"] == [], real.summary["kernel_window_anomalies"]
    assert any(q["link"] == "wan" for q in real.queues.to_pylist())
    assert (tmp_path / "real" / "flows.parquet").exists() and (tmp_path / "real" / "summary.json").exists()


@needs_root
def test_kill_9_mid_run_leaves_nothing_after_cleanup_and_the_hosts_network_is_untouched(tmp_path):
    host_links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    host_addrs = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True).stdout
    before = _run_namespaces()
    sc = _with(duration="60s")
    p = tmp_path / "long.json"
    p.write_text(json.dumps(sc))
    proc = subprocess.Popen([sys.executable, "-c", "from tcpvideo.cli import main; main()", "emulate", str(p),
                             "--out", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            line = proc.stdout.readline()
            if line.startswith("running"):
                break
        else:
            pytest.fail("the emulation did not start")
        time.sleep(1.0)  # flows running
        mine = _run_namespaces() - before
        assert len(mine) == 3
        apps = [int(x) for ns in mine for x in subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                                                                text=True).stdout.split()]
        assert apps, "application processes run in the namespaces"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.2)
    assert _run_namespaces() - before == mine, "SIGKILL left the run's namespaces behind"
    removed = cleanup()
    assert set(removed) >= mine
    assert _run_namespaces() == before
    for pid in apps:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower(), pid
    assert not any(MANIFEST_DIR.glob("*.json")) or all(
        json.loads(m.read_text())["pid"] != proc.pid for m in MANIFEST_DIR.glob("*.json"))
    assert subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout == host_links
    assert subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True).stdout == host_addrs


def _interruptible():
    """Child setup: Ctrl-C's default action, whatever this test run inherited. A shell starts a
    background job with SIGINT ignored and children keep that, so Python would install no
    KeyboardInterrupt handler and the SIGINT case would test nothing but a timeout."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@needs_root
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_mid_run_tears_everything_down(tmp_path, sig):
    before = _run_namespaces()
    p = tmp_path / "long.json"
    p.write_text(json.dumps(_with(duration="60s")))
    proc = subprocess.Popen([sys.executable, "-c", "from tcpvideo.cli import main; main()", "emulate", str(p),
                             "--out", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, preexec_fn=_interruptible)
    try:
        deadline = time.time() + 30
        while time.time() < deadline and not proc.stdout.readline().startswith("running"):
            pass
        assert len(_run_namespaces() - before) == 3
        time.sleep(0.5)
        proc.send_signal(sig)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert _run_namespaces() == before, "the run removed its namespaces itself (no --cleanup needed)"
    assert not any(json.loads(m.read_text())["pid"] == proc.pid for m in MANIFEST_DIR.glob("*.json"))
