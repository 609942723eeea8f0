"""tcpvideo.analyze / `tcpvideo analyze`: a hand-built capture (written here with struct, no
third-party writer) goes through the Rust analyzer; tables, files, the terminal summary and the
HTML report must show the stalls the capture was built to contain."""

from __future__ import annotations

import gzip
import json
import struct

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import tcpvideo
from tcpvideo.cli import app

MSS = 1448
CLIENT = (bytes([10, 0, 0, 2]), 40000)
SERVER = (bytes([10, 0, 0, 1]), 80)


def _csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _frame(src, dst, seq, ack, flags, payload=b"", win=65535, opts=b""):
    off = (20 + len(opts)) // 4
    tcp = struct.pack("!HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, off << 4, flags, win, 0, 0) + opts + payload
    pseudo = src[0] + dst[0] + struct.pack("!BBH", 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", _csum(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, src[0], dst[0])
    ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    return b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00" + ip + tcp


class Capture:
    """Server-side view of one connection: times in ms, offsets relative to the ISNs."""

    SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01

    def __init__(self):
        self.t = 1000.0
        self.records = []
        self.c_isn, self.s_isn = 5000, 9000
        self.nxt = 0

    def _add(self, from_server, seq, ack, flags, payload=b"", win=65535, opts=b""):
        src, dst = (SERVER, CLIENT) if from_server else (CLIENT, SERVER)
        self.records.append((self.t, _frame(src, dst, seq, ack, flags, payload, win, opts)))

    def handshake(self, rtt):
        self._add(False, self.c_isn, 0, self.SYN, opts=b"\x02\x04\x05\xb4")
        self._add(True, self.s_isn, self.c_isn + 1, self.SYN | self.ACK, opts=b"\x02\x04\x05\xb4")
        self.t += rtt
        self._add(False, self.c_isn + 1, self.s_isn + 1, self.ACK)

    def send(self, n):
        for _ in range(n):
            self._add(True, self.s_isn + 1 + self.nxt, self.c_isn + 1, self.ACK | self.PSH, b"\0" * MSS)
            self.nxt += MSS
            self.t += 0.001

    def resend(self, off):
        self._add(True, self.s_isn + 1 + off, self.c_isn + 1, self.ACK, b"\0" * MSS)

    def ack(self, off):
        self._add(False, self.c_isn + 1, self.s_isn + 1 + off, self.ACK)

    def wait(self, ms):
        self.t += ms

    def pcap(self) -> bytes:
        out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
        for t, f in self.records:
            us = int(round(t * 1000))
            out.append(struct.pack("<IIII", us // 1_000_000, us % 1_000_000, len(f), len(f)) + f)
        return b"".join(out)


def build() -> bytes:
    """A download flow: RTT 50 ms; a 500 ms application pause (resource constraint); then a
    window of 6 whose first segment is lost and recovered by timeout after the other five
    arrived (their dupacks lost: ACK delay/loss)."""
    c = Capture()
    c.handshake(50)
    c.send(4)
    c.wait(50)
    c.ack(c.nxt)
    c.wait(500)
    start = c.nxt
    c.send(6)
    c.wait(250)
    c.resend(start)
    c.wait(50)
    c.ack(c.nxt)
    c.wait(1)
    c.send(4)
    c.wait(50)
    c.ack(c.nxt)
    return c.pcap()


@pytest.fixture()
def capture(tmp_path):
    p = tmp_path / "server.pcap"
    p.write_bytes(build())
    return p


def test_api_finds_the_built_stalls(capture, tmp_path):
    r = tcpvideo.analyze(capture, threads=1)
    assert r.flows.num_rows == 1
    f = r.flows.to_pylist()[0]
    assert f["direction"] == "download"
    assert f["rtt_3whs_ns"] == 50_000_000
    assert f["timeout_retrans"] == 1
    stalls = r.stalls.to_pylist()
    assert [s["kind"] for s in stalls] == ["resource_constraint", "timeout"]
    assert stalls[1]["timeout_type"] == "ack_delay_loss"
    assert r.summary["download"]["stalls"] == 2
    share = r.summary["download"]["stall_types_by_time"]["resource_constraint"]["share"]
    assert 0.6 < share < 0.75  # 500 ms of ~750 ms of stall time


def test_the_summary_alone_is_the_full_analysis_summary_on_one_and_two_threads(capture):
    # The CLI without --out asks the Rust core for the summary only (no columns built).
    from tcpvideo.analysis import analyze_summary

    for threads in (1, 2):
        s = analyze_summary(capture, threads=threads)
        assert s == tcpvideo.analyze(capture, threads=threads).summary
        assert s["download"]["stalls"] == 2


def test_tables_are_written_as_parquet_csv_and_summary(capture, tmp_path):
    out = tmp_path / "out"
    r = tcpvideo.analyze([capture], out=out, threads=1)
    for name in ("flows", "stalls", "retransmissions", "bursts", "http", "frame_types", "rtt_buckets"):
        assert (out / f"{name}.csv").exists()
        t = pq.read_table(out / f"{name}.parquet")
        assert t.num_rows == r.table(name).num_rows
    assert pq.read_table(out / "stalls.parquet").column("kind").to_pylist() == ["resource_constraint", "timeout"]
    s = json.loads((out / "summary.json").read_text())
    assert s["timeout_types"]["all"]["ack_delay_loss"]["count"] == 1
    # Empty tables keep typed columns.
    assert pq.read_table(out / "http.parquet").schema.field("path").type == "string"


def test_gzip_capture_gives_same_result(capture, tmp_path):
    gz = tmp_path / "server.pcap.gz"
    gz.write_bytes(gzip.compress(capture.read_bytes()))
    a = tcpvideo.analyze(capture, threads=1).stalls.to_pylist()
    b = tcpvideo.analyze(gz, threads=2).stalls.to_pylist()
    assert a == b


def test_options_change_the_answer(capture):
    # A larger tau raises the threshold above the 250 ms timeout gap... but RTO caps it:
    # min(tau*SRTT, RTO) never exceeds the RTO, so both stalls remain.
    r = tcpvideo.analyze(capture, tau=100.0, threads=1)
    assert r.stalls.num_rows == 2
    # Declaring the client's port as the server flips roles: an upload flow with no data.
    r = tcpvideo.analyze(capture, server_ports=[40000], threads=1)
    assert r.flows.to_pylist()[0]["server_port"] == 40000


def test_bad_arguments_raise(tmp_path, capture):
    with pytest.raises(FileNotFoundError):
        tcpvideo.analyze(tmp_path / "missing.pcap")
    with pytest.raises(ValueError):
        tcpvideo.analyze(capture, tau=0)
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a capture at all, sorry")
    with pytest.raises(ValueError):
        tcpvideo.analyze(bad)


def test_cli_prints_seed_tables_and_writes_report(capture, tmp_path):
    out = tmp_path / "cli"
    res = CliRunner().invoke(app, ["analyze", str(capture), "--out", str(out), "--threads", "1"])
    assert res.exit_code == 0, res.output
    assert "Table 2" in res.output and "Table 5" in res.output and "Fig. 5" in res.output
    assert "resource_constraint" in res.output
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 2
    assert (out / "flows.parquet").exists()


def test_cli_reports_damaged_file_and_completes(tmp_path):
    data = bytearray(build())
    data[24 + 8 : 24 + 12] = struct.pack("<I", 0x7FFFFFFF)  # first record's length
    p = tmp_path / "damaged.pcap"
    p.write_bytes(bytes(data))
    res = CliRunner().invoke(app, ["analyze", str(p), "--threads", "1"])
    # Completed, but the damage is reported in the exit status (3) and on stderr.
    assert res.exit_code == 3, res.output
    assert "1 corrupt" in res.stderr
    assert "warning" in res.stderr
    assert "Table 2" in res.stdout


def test_strict_makes_damaged_input_an_error_and_writes_nothing(tmp_path):
    data = bytearray(build())
    data[24 + 8 : 24 + 12] = struct.pack("<I", 0x7FFFFFFF)
    p = tmp_path / "damaged.pcap"
    p.write_bytes(bytes(data))
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["analyze", str(p), "--strict", "--out", str(out), "--threads", "1"])
    assert res.exit_code == 2, res.output
    assert "damaged input" in res.stderr and "strict" in res.stderr
    assert not out.exists()


def test_records_days_apart_are_all_read_and_exit_is_clean(tmp_path):
    c = Capture()
    c.handshake(50)
    c.send(4)
    c.wait(50)
    c.ack(c.nxt)
    c.wait(3 * 86_400_000)  # a merged capture: the next record three days later
    c.send(2)
    c.wait(50)
    c.ack(c.nxt)
    p = tmp_path / "merged.pcap"
    p.write_bytes(c.pcap())
    res = CliRunner().invoke(app, ["analyze", str(p), "-q", "--threads", "1"])
    assert res.exit_code == 0, res.output
    r = tcpvideo.analyze(p, threads=1)
    assert r.summary["read"]["records"] == len(c.records)
    assert r.summary["read"]["skipped_bytes"] == 0


def test_report_names_capture_and_vantage_sorts_flows_and_shows_no_python_values(capture, tmp_path):
    out = tmp_path / "rep"
    res = CliRunner().invoke(app, ["analyze", str(capture), "--out", str(out), "--threads", "1", "-q"])
    assert res.exit_code == 0, res.output
    html = (out / "report.html").read_text()
    assert "server.pcap" in html.split("</h1>")[0]
    assert "<b>server</b> 1" in html
    assert "class='sortable'" in html and "addEventListener('click'" in html
    cells = html.split("<td>")[1:]
    assert not [c for c in cells if c.startswith(("None", "{}", "[]", "nan"))]
    assert "No upload stall." in html and "No video frames recognised" in html  # empty parts are sentences


def test_analyze_without_out_imports_neither_pyarrow_nor_numpy(capture):
    # The process as a user runs it (main() ends it with os._exit): -X importtime lists on stderr
    # every module it imported, on any thread.
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-X", "importtime", "-m", "tcpvideo.cli", "analyze", "-q", str(capture)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    imported = {ln.rsplit("|", 1)[-1].strip() for ln in res.stderr.splitlines() if ln.startswith("import time:")}
    # The listing is live: it has the extension the analysis ran on. (rich.console is not a check:
    # with -q the main thread never needs it, and os._exit may end the side thread that prefetches
    # it before its import is listed.)
    assert "tcpvideo._core" in imported
    heavy = sorted(m for m in imported if m.split(".")[0] in ("pyarrow", "numpy", "matplotlib"))
    assert heavy == [], heavy
    # A plain command line (files, -q) is parsed without Typer (session 14: 45 of 62 ms of start-up).
    assert not [m for m in imported if m.split(".")[0] in ("typer", "click")]


def test_package_functions_stay_functions_after_their_submodules_are_imported(capture):
    import tcpvideo.analysis  # noqa: F401  (binds the submodule name on the package)
    import tcpvideo.simulation  # noqa: F401

    assert callable(tcpvideo.analyze) and callable(tcpvideo.simulate)
    assert tcpvideo.analyze(capture, threads=1).flows.num_rows == 1


def test_timings_name_every_phase_on_stderr_and_leave_the_tables_and_files_unchanged(capture, tmp_path):
    import subprocess
    import sys

    def run(*extra):
        out = tmp_path / ("t" if "--timings" in extra else "plain")
        argv = [sys.executable, "-m", "tcpvideo.cli", "analyze", str(capture), "--threads", "1", "--out", str(out),
                "--no-report", *extra]
        res = subprocess.run(argv, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        return res, out

    plain, plain_out = run()
    timed, timed_out = run("--timings")
    line = [ln for ln in timed.stderr.splitlines() if ln.startswith("timings:")]
    assert len(line) == 1, timed.stderr
    for phase in ("start-up", "analysis", "printing", "writing"):
        assert f"{phase} " in line[0] and " CPU)" in line[0], line[0]
    assert "timings:" not in timed.stdout and "timings:" not in plain.stderr
    assert timed.stdout == plain.stdout  # the terminal tables are the same
    for name in ("flows.csv", "stalls.csv", "retransmissions.csv", "summary.json"):
        assert (timed_out / name).read_bytes() == (plain_out / name).read_bytes(), name


def test_the_command_process_keeps_exit_status_3_and_every_line_when_it_skips_teardown(tmp_path):
    # main() ends `tcpvideo analyze` with os._exit after flushing: the status and the output
    # must be what the command produced (here: damaged input, status 3, tables and warnings).
    import subprocess
    import sys

    data = bytearray(build())
    data[24 + 8 : 24 + 12] = struct.pack("<I", 0x7FFFFFFF)  # first record's length
    p = tmp_path / "damaged.pcap"
    p.write_bytes(bytes(data))
    res = subprocess.run([sys.executable, "-m", "tcpvideo.cli", "analyze", str(p), "--threads", "1"],
                         capture_output=True, text=True)
    assert res.returncode == 3, res.stderr
    assert "1 corrupt" in res.stderr and "warning" in res.stderr
    assert "Table 2" in res.stdout and res.stdout.rstrip().splitlines()[-1].startswith("capture vantage")


def test_a_plain_command_line_is_parsed_without_typer_and_anything_else_is_left_to_it(capture, tmp_path):
    from tcpvideo.cli.analyze import plain_args

    f = str(capture)
    assert plain_args([f]) == ([capture], False, False)
    assert plain_args(["-q", f, "--timings", f]) == ([capture, capture], True, True)
    assert plain_args(["--quiet", f])[1] is True
    for argv in ([], ["-q"], [f, "--out", str(tmp_path)], [f, "--threads", "1"], ["--help"], [f, "--"],
                 [str(tmp_path / "missing.pcap")], [str(tmp_path)], [f, "-qq"]):
        assert plain_args(argv) is None, argv


def test_the_plain_path_runs_the_analysis_with_the_options_typer_gives_an_unset_command_line(capture, monkeypatch):
    # One source for the defaults: what Typer passes for `analyze FILE -q` is what the plain path passes.
    from tcpvideo.cli import analyze

    seen = []
    monkeypatch.setattr(analyze, "run", lambda captures, out, options, **kw: seen.append((captures, out, options, kw)) or 0)
    res = CliRunner().invoke(app, ["analyze", str(capture), "-q"])
    assert res.exit_code == 0, res.output
    (captures, out, options, kw), = seen
    assert (captures, out, options) == ([capture], None, analyze.analysis_options())
    assert kw["quiet"] is True and kw["csv"] and kw["report"] and kw["clock"] is None


def test_the_plain_path_prints_and_exits_as_the_typer_path(tmp_path):
    # `--tau 2.0` (the default) sends the same analysis through Typer: same tables, same status.
    import subprocess
    import sys

    data = bytearray(build())
    data[24 + 8 : 24 + 12] = struct.pack("<I", 0x7FFFFFFF)  # damaged: exit status 3
    for name, content in (("ok.pcap", build()), ("damaged.pcap", bytes(data))):
        p = tmp_path / name
        p.write_bytes(content)
        runs = [subprocess.run([sys.executable, "-m", "tcpvideo.cli", "analyze", str(p), *extra],
                               capture_output=True, text=True) for extra in ([], ["--tau", "2.0"])]
        assert runs[0].returncode == runs[1].returncode == (3 if name == "damaged.pcap" else 0), runs[0].stderr
        assert runs[0].stdout == runs[1].stdout and "Table 2" in runs[0].stdout
        assert runs[0].stderr == runs[1].stderr


def test_an_unexpected_error_in_the_command_is_printed_and_exits_1_without_teardown(monkeypatch, capsys):
    # Left to propagate, the exception's traceback waits in sys.last_traceback for the interpreter's
    # teardown, which CPython 3.11 can deadlock on (session 21: an analyzer process asleep on the
    # import lock). run_and_exit must print it and take the same no-teardown exit with status 1.
    import typer

    from tcpvideo.cli import analyze

    app = typer.Typer(pretty_exceptions_enable=False)

    @app.command()
    def boom() -> None:
        raise ValueError("a report step failed")

    codes = []
    monkeypatch.setattr(analyze, "_exit", codes.append)
    monkeypatch.setattr("sys.argv", ["tcpvideo"])
    analyze.run_and_exit(app)
    assert codes == [1]
    assert "ValueError: a report step failed" in capsys.readouterr().err
