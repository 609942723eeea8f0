//! Opening a TUN device (inside a network namespace): the two ends of a linkem link (`forwarder.rs`).
//!
//! Linux TUN (Documentation/networking/tuntap.rst): a file descriptor on /dev/net/tun attached
//! with ioctl TUNSETIFF to an interface; every IP packet the kernel routes out of the interface
//! can be read from the fd, and every packet written to the fd is received by the interface as if
//! it came from a wire. IFF_TUN gives layer-3 packets (no Ethernet header), IFF_NO_PI drops the
//! 4-byte packet-information prefix, so a read returns exactly one IP packet. Without
//! IFF_VNET_HDR the device cannot take GSO super-packets, so the kernel segments them before the
//! fd: every read is at most one MTU.
//!
//! The device is looked up by name in the namespace of the *opening* thread (drivers/net/tun.c
//! `tun_chr_open` records `current->nsproxy->net_ns`), so the open and the ioctl run on a thread
//! that entered the namespace (`netns::run_in`). The interface is expected to exist already
//! (`ip -n NS tuntap add dev NAME mode tun`, persistent): its addresses and routes are configured
//! with iproute2 before or after, independently of this fd.

use std::ffi::CString;
use std::io;

use crate::netns;

// include/uapi/linux/if_tun.h
const TUNSETIFF: libc::c_ulong = 0x4004_54ca; // _IOW('T', 202, int)
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Open /dev/net/tun attached to `name` in the current thread's namespace; non-blocking fd.
pub fn open_here(name: &str) -> io::Result<i32> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name {name:?}"),
        ));
    }
    let dev = CString::new("/dev/net/tun").expect("static path");
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: IFF_TUN | IFF_NO_PI,
        _pad: [0; 22],
    };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: fd checked; `req` is a correctly sized struct ifreq (40 bytes) living across the call.
    unsafe {
        let fd = libc::open(
            dev.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::ioctl(fd, TUNSETIFF as _, &mut req as *mut IfReq) < 0 {
            let e = io::Error::last_os_error();
            libc::close(fd);
            return Err(io::Error::new(e.kind(), format!("TUNSETIFF {name}: {e}")));
        }
        Ok(fd)
    }
}

/// Open the existing TUN interface `name` inside the namespace file `netns` (e.g.
/// "/var/run/netns/NAME"; None: the caller's namespace). The caller owns the returned fd.
pub fn open_in(name: &str, netns: Option<&str>) -> io::Result<i32> {
    let name = name.to_string();
    netns::run_in(netns.map(str::to_string), move || open_here(&name))
}
