"""Golden outputs (scripts/golden.py): every scenario file, the demo, one lossy dumbbell per
congestion control and the analyzer on the test captures and on every simulated pcap give the
SHA-256 recorded in tests/golden/hashes.json. A refactor must keep them; a deliberate behaviour
change reruns ``python scripts/golden.py --update`` and says which outputs changed in its commit."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _golden():
    spec = importlib.util.spec_from_file_location("golden", ROOT / "scripts" / "golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_golden_output_is_byte_identical_to_the_record(capsys):
    rc = _golden().main([])
    out = capsys.readouterr().out
    assert rc == 0, out


def test_a_changed_output_is_reported_by_name():
    golden = _golden()
    record = json.loads((ROOT / "tests" / "golden" / "hashes.json").read_text())["cases"]
    changed = json.loads(json.dumps(record))
    changed["demo"]["outputs"]["flows"] = "0" * 64
    del changed["scenario/one_flow"]
    assert golden.compare(record, record) == []
    assert golden.compare(record, changed) == ["demo: flows differs", "scenario/one_flow: not run (in the record)"]
