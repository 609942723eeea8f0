"""The CLI lists every congestion control of the Rust registry."""

from typer.testing import CliRunner

from tcpvideo.cc import cc_list
from tcpvideo.cli import app


def test_cc_list_prints_every_registered_algorithm():
    result = CliRunner().invoke(app, ["cc", "list"])
    assert result.exit_code == 0, result.output
    names = [a["name"] for a in cc_list()]
    assert "reno" in names
    for name in names:
        assert name in result.output
