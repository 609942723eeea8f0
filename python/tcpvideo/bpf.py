"""tcpvideo's kernel congestion controls: build, load and unload the BPF struct_ops ports in
``bpf/``, and hand a socket's video facts (playout buffer POB, POBRate, video rate) to them.

The ports are kernel twins of the model's algorithms (``crates/model/src/cc/``): loaded, each
is an ordinary Linux congestion control (``setsockopt(TCP_CONGESTION, "tv_ccplb")``, ``ss -ti``
shows it) with the whole Linux TCP stack around it. See ``docs/bpf.md``.

* :func:`catalog` — the ports found in the source folder, with their model twin and state;
* :func:`load` / :func:`unload` — register / unregister by name (``tv_ccplb`` or its twin's
  name ``ccplb``); a load that fails part-way unregisters what it registered, so nothing is
  left half-way;
* :func:`set_app_info` — what the server tells the kernel CC about one socket, written into the
  ``tv_app_info`` BPF socket storage (pinned at ``/sys/fs/bpf/tv_app_info``; ``bpf/tv_app_info.h``).

Errors are :class:`BpfError` with one line naming what was wrong. Needs root, clang, bpftool,
the libbpf headers and a kernel with BTF; :func:`missing` says which is absent.

The build goes to ``$TCPVIDEO_BPF_BUILD`` (default ``bpf/build``, ignored by git): vmlinux.h is
generated from the running kernel and never committed. ``$TCPVIDEO_BPF_SRC`` points at another
source folder (tests use it for a port that must fail the verifier).
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import shutil
import socket
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Union

ROOT = Path(__file__).resolve().parents[2]
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
BPFFS = Path("/sys/fs/bpf")
APP_INFO_PIN = BPFFS / "tv_app_info"
PREFIX = "tv_"

# What each known port is the twin of (the model's registry name), and its one-line summary.
TWINS = {
    "tv_vegas": ("vegas", "Vegas as Linux tcp_vegas.c (bench reference for the model)"),
    "tv_bic": ("bic", "BIC-TCP as Linux tcp_bic.c (bench reference for the model)"),
    "tv_ccp": ("ccp", "CCP: cwnd = [Kp(B - x) - in_flight]/2 (seed 001 Eq. 4)"),
    "tv_ccplca": ("ccplca", "CCPLCA: CCP with cwnd >= video rate x RTT (seed 001 sec. V)"),
    "tv_ccplb": ("ccplb", "CCPLB: CCP + POB/POBRate (seed 001 Eq. 5); POB per socket"),
    "tv_compound": ("compound", "Compound TCP: Reno + delay window (seed 001 Eq. 2-3)"),
}
# Ports that read the per-socket app info (and so share the pinned tv_app_info map).
APP_INFO_USERS = ("tv_ccp", "tv_ccplca", "tv_ccplb")


class BpfError(Exception):
    """One line saying what failed and what to do."""


@dataclass(frozen=True)
class Port:
    name: str          # kernel name, e.g. tv_ccplb
    twin: Optional[str]  # the model algorithm it mirrors, e.g. ccplb
    summary: str
    source: Path
    registered: bool


def source_dir() -> Path:
    return Path(os.environ.get("TCPVIDEO_BPF_SRC", ROOT / "bpf"))


def build_dir() -> Path:
    return Path(os.environ.get("TCPVIDEO_BPF_BUILD", source_dir() / "build"))


def registered_names() -> list[str]:
    try:
        return AVAILABLE.read_text().split()
    except OSError:
        return []


def catalog() -> list[Port]:
    """Every port in the source folder (``tv_*.bpf.c``), in name order."""
    have = set(registered_names())
    out = []
    for src in sorted(source_dir().glob(f"{PREFIX}*.bpf.c")):
        name = src.name[: -len(".bpf.c")]
        twin, summary = TWINS.get(name, (None, ""))
        out.append(Port(name, twin, summary, src, name in have))
    return out


def resolve(name: str) -> Port:
    """A port by kernel name or by its twin's model name; BpfError for anything else."""
    ports = catalog()
    for p in ports:
        if name in (p.name, p.twin):
            return p
    known = ", ".join(p.name for p in ports) or f"none in {source_dir()}"
    raise BpfError(f"unknown BPF congestion control {name!r} (known: {known})")


def missing() -> Optional[str]:
    """Why ports cannot be built and loaded here, or None."""
    if os.geteuid() != 0:
        return "needs root (loading BPF struct_ops needs CAP_BPF and CAP_NET_ADMIN)"
    for tool in ("clang", "bpftool"):
        if shutil.which(tool) is None:
            return f"no {tool} (apt-get install -y clang libbpf-dev bpftool)"
    if not Path("/usr/include/bpf/bpf_helpers.h").exists():
        return "no libbpf headers (apt-get install -y libbpf-dev)"
    if not Path("/sys/kernel/btf/vmlinux").exists():
        return "kernel without BTF (/sys/kernel/btf/vmlinux)"
    return None


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)


def _first_error(text: str) -> str:
    """The line of a clang/libbpf/verifier log that says what went wrong."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for pat in (r"error:", r"R\d+ .*invalid|invalid .*access|too large|unbounded|not allowed|unknown func"):
        hit = [l for l in lines if re.search(pat, l)]
        if hit:
            return hit[0][:200]
    return (lines[-1] if lines else "no output")[:200]


def build(port: Port) -> Path:
    """Compile one port against the running kernel's BTF; returns the object file."""
    why = missing()
    if why:
        raise BpfError(f"{port.name}: cannot build: {why}")
    out = build_dir()
    out.mkdir(parents=True, exist_ok=True)
    vmlinux = out / "vmlinux.h"
    if not vmlinux.exists() or vmlinux.stat().st_size == 0:
        r = _run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"])
        if r.returncode != 0:
            raise BpfError(f"vmlinux.h: bpftool btf dump failed: {_first_error(r.stderr)}")
        tmp = out / "vmlinux.h.tmp"
        tmp.write_text(r.stdout)
        tmp.replace(vmlinux)
    obj = out / f"{port.name}.bpf.o"
    deps = [port.source, vmlinux] + list(port.source.parent.glob("*.h"))
    if obj.exists() and all(obj.stat().st_mtime >= d.stat().st_mtime for d in deps):
        return obj
    r = _run(["clang", "-O2", "-g", "-Wall", "-Werror", "-target", "bpf", f"-I{out}",
              f"-I{port.source.parent}", "-c", str(port.source), "-o", str(obj)])
    if r.returncode != 0:
        obj.unlink(missing_ok=True)
        raise BpfError(f"{port.name}: does not compile: {_first_error(r.stderr)}")
    return obj


def _ensure_bpffs() -> None:
    if os.path.ismount(BPFFS):
        return
    r = _run(["mount", "-t", "bpf", "bpf", str(BPFFS)])
    if r.returncode != 0:
        raise BpfError(f"{BPFFS}: cannot mount the BPF file system: {r.stderr.strip()}")


def _unregister(name: str) -> None:
    if name not in registered_names():
        return
    # Every struct_ops map of that name goes; one that sockets still hold answers EINPROGRESS.
    _run(["bpftool", "struct_ops", "unregister", "name", name])
    if name in registered_names():
        raise BpfError(f"{name}: still registered after bpftool struct_ops unregister")


def _drop_app_info_pin_if_unused() -> None:
    if not any(n in registered_names() for n in APP_INFO_USERS):
        try:
            APP_INFO_PIN.unlink()
        except OSError:
            pass


def load(names: Iterable[str]) -> list[str]:
    """Build and register the named ports (already registered ones are registered afresh).
    All or nothing: on any failure, those registered by this call are unregistered again."""
    ports = [resolve(n) for n in names]
    why = missing()
    if why:
        raise BpfError(f"cannot load: {why}")
    _ensure_bpffs()
    pin_existed = APP_INFO_PIN.exists()
    done: list[str] = []
    try:
        for p in ports:
            obj = build(p)
            _unregister(p.name)
            r = _run(["bpftool", "struct_ops", "register", str(obj)])
            if r.returncode != 0 or p.name not in registered_names():
                raise BpfError(f"{p.name}: the kernel refused it: {_first_error(r.stderr + r.stdout)}")
            done.append(p.name)
    except BpfError:
        for n in done:
            try:
                _unregister(n)
            except BpfError:
                pass
        if not pin_existed:
            _drop_app_info_pin_if_unused()
        raise
    return done


def unload(names: Iterable[str]) -> list[str]:
    """Unregister the named ports; returns those that were registered."""
    ports = [resolve(n) for n in names]
    gone = []
    for p in ports:
        if p.name in registered_names():
            _unregister(p.name)
            gone.append(p.name)
    _drop_app_info_pin_if_unused()
    return gone


# ---- per-socket app info (bpf/tv_app_info.h) ----

_BPF_MAP_UPDATE_ELEM = 2
_BPF_OBJ_GET = 7
_BPF_MAP_GET_NEXT_ID = 12
_BPF_MAP_GET_FD_BY_ID = 14
_BPF_OBJ_GET_INFO_BY_FD = 15
_MAP_TYPE_SK_STORAGE = 24
_NR_BPF = {"x86_64": 321, "aarch64": 280}
_APP_INFO = struct.Struct("=IIQ")  # pob_segments, pob_rate_milli, video_rate_bps


def _bpf(cmd: int, attr: bytes, out: Optional[bytearray] = None) -> int:
    """bpf(2) with a 128-byte attribute; what the kernel writes back lands in ``out``."""
    nr = _NR_BPF.get(platform.machine())
    if nr is None:
        raise BpfError(f"bpf(2): syscall number unknown on {platform.machine()}")
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(ctypes.c_long(nr), ctypes.c_int(cmd), buf, ctypes.c_uint(128))
    if r < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    if out is not None:
        out[:] = buf.raw
    return r


def app_info_value(pob_segments: Optional[float] = None, pob_rate: Optional[float] = None,
                   video_rate_bps: Optional[float] = None) -> bytes:
    """The map value for these facts; BpfError naming the field for a bad one. None = the
    port's load-time default."""
    if pob_segments is not None and not (pob_segments > 0):
        raise BpfError(f"pob_segments: must be > 0 (got {pob_segments})")
    if pob_rate is not None and not (pob_rate > 0):
        raise BpfError(f"pob_rate: must be > 0 (got {pob_rate})")
    if video_rate_bps is not None and not (video_rate_bps >= 0):
        raise BpfError(f"video_rate_bps: must be >= 0 (got {video_rate_bps})")
    pob = 0 if pob_segments is None else int(round(pob_segments))
    rate = 0 if pob_rate is None else int(round(pob_rate * 1000))
    vr = 0 if video_rate_bps is None else int(round(video_rate_bps))
    if pob_segments is not None and pob == 0:
        raise BpfError(f"pob_segments: must be at least 1 segment (got {pob_segments})")
    if pob > 0xFFFFFFFF or rate > 0xFFFFFFFF or (pob_rate is not None and rate == 0):
        raise BpfError(f"pob_segments/pob_rate: out of range ({pob_segments}, {pob_rate})")
    return _APP_INFO.pack(pob, rate, vr)


def _map_name(fd: int) -> tuple[int, str]:
    info = ctypes.create_string_buffer(80)  # struct bpf_map_info: type, id, sizes, flags, name[16]
    _bpf(_BPF_OBJ_GET_INFO_BY_FD, struct.pack("=IIQ", fd, 80, ctypes.addressof(info)))
    kind = struct.unpack_from("=I", info.raw, 0)[0]
    return kind, info.raw[24:40].split(b"\0", 1)[0].decode(errors="replace")


def _app_info_map_fd() -> int:
    """An fd of the tv_app_info map: by its pin, or — where the pin is not visible, e.g. under
    ``ip netns exec``, which mounts its own /sys — by walking the kernel's map ids."""
    if APP_INFO_PIN.exists():
        path = ctypes.create_string_buffer(str(APP_INFO_PIN).encode())
        try:
            return _bpf(_BPF_OBJ_GET, struct.pack("=QII", ctypes.addressof(path), 0, 0))
        except OSError as e:
            raise BpfError(f"{APP_INFO_PIN}: cannot open the map: {e.strerror}") from None
    best = None
    map_id = 0
    while True:
        back = bytearray(128)
        try:
            _bpf(_BPF_MAP_GET_NEXT_ID, struct.pack("=III", map_id, 0, 0), back)
        except OSError:
            break  # ENOENT: no more maps
        map_id = struct.unpack_from("=I", back, 4)[0]
        try:
            fd = _bpf(_BPF_MAP_GET_FD_BY_ID, struct.pack("=III", map_id, 0, 0))
        except OSError:
            continue
        try:
            kind, name = _map_name(fd)
        except OSError:
            os.close(fd)
            continue
        if kind == _MAP_TYPE_SK_STORAGE and name == "tv_app_info":
            if best is not None:
                os.close(best)
            best = fd
        else:
            os.close(fd)
    if best is None:
        raise BpfError("tv_app_info: no such BPF map; load a port that reads it first "
                       f"(tcpvideo bpf load {' '.join(APP_INFO_USERS)})")
    return best


def set_app_info(sock: Union[socket.socket, int], pob_segments: Optional[float] = None,
                 pob_rate: Optional[float] = None, video_rate_bps: Optional[float] = None) -> None:
    """Tell the kernel CC of ``sock`` (a TCP socket or its fd) the client's playout buffer size
    (segments), POBRate and the video rate (bit/s). On a listening socket, every connection it
    accepts afterwards inherits the facts. Needs a CCP-family port loaded (the pinned map)."""
    value = app_info_value(pob_segments, pob_rate, video_rate_bps)
    fd = sock if isinstance(sock, int) else sock.fileno()
    map_fd = _app_info_map_fd()
    try:
        key = ctypes.c_int(fd)
        val = ctypes.create_string_buffer(value, len(value))
        attr = struct.pack("=IIQQQ", map_fd, 0, ctypes.addressof(key), ctypes.addressof(val), 0)
        try:
            _bpf(_BPF_MAP_UPDATE_ELEM, attr)
        except OSError as e:
            raise BpfError(f"socket fd {fd}: cannot store app info: {e.strerror} "
                           "(a TCP socket of this process?)") from None
    finally:
        os.close(map_fd)
