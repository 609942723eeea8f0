//! `linkem`: run one emulated link between two existing TUN devices until SIGINT/SIGTERM or
//! `--duration`, then print what each direction did as one JSON object.
//!
//! ```text
//! linkem --a NS_A:tun0 --b NS_B:tun0 --ab rate=100Mbps,delay=20ms,queue=100 \
//!        --ba delay=20ms,loss=bernoulli,loss_p=0.01 [--seed 1] [--duration 10s] [--rt-priority 10]
//! ```
//! `NS` is a name under /var/run/netns (what `ip netns add` makes) or a path; `-` (or no `NS:`)
//! is linkem's own namespace. Direction keys are in `spec.rs`. Exit status 2 on a bad argument
//! (one line naming it), 1 when the link fails while running.

use std::process::ExitCode;
use std::time::Duration;

use tcpvideo_linkem::counters::Snapshot;
use tcpvideo_linkem::forwarder::{Link, LinkConfig};
use tcpvideo_linkem::spec::parse_direction;
use tcpvideo_linkem::tun;
use tcpvideo_sim::scenario::Qty;

const USAGE: &str = "usage: linkem --a [NS:]DEV --b [NS:]DEV [--ab KEY=V,...] [--ba KEY=V,...] [--seed N] [--duration T] [--rt-priority N]";

struct Args {
    a: (Option<String>, String),
    b: (Option<String>, String),
    cfg: LinkConfig,
    duration: Option<Duration>,
}

fn endpoint(v: &str, flag: &str) -> Result<(Option<String>, String), String> {
    let (ns, dev) = match v.rsplit_once(':') {
        Some((ns, dev)) => (ns, dev),
        None => ("-", v),
    };
    if dev.is_empty() || dev.len() >= 16 {
        return Err(format!("{flag}: bad interface name {dev:?}"));
    }
    let ns = match ns {
        "-" | "" => None,
        p if p.starts_with('/') => Some(p.to_string()),
        name => Some(format!("/var/run/netns/{name}")),
    };
    Ok((ns, dev.to_string()))
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut a, mut b, mut duration) = (None, None, None);
    let mut cfg = LinkConfig {
        channel_b_to_a: 1,
        ..Default::default()
    };
    while let Some(flag) = it.next() {
        if flag == "-h" || flag == "--help" {
            return Err(USAGE.into());
        }
        let val = it
            .next()
            .ok_or_else(|| format!("{flag}: missing value ({USAGE})"))?;
        match flag.as_str() {
            "--a" => a = Some(endpoint(&val, "--a")?),
            "--b" => b = Some(endpoint(&val, "--b")?),
            "--ab" => cfg.a_to_b = parse_direction(&val, "--ab")?,
            "--ba" => cfg.b_to_a = parse_direction(&val, "--ba")?,
            "--seed" => {
                cfg.seed = val
                    .parse()
                    .map_err(|_| format!("--seed: {val:?} is not a whole number"))?
            }
            "--rt-priority" => {
                cfg.rt_priority = val
                    .parse()
                    .map_err(|_| format!("--rt-priority: {val:?} is not a whole number"))?
            }
            "--duration" => {
                duration = Some(
                    Qty::Str(val.clone())
                        .duration("--duration")
                        .map_err(|e| e.0)?,
                )
            }
            other => return Err(format!("{other}: unknown flag ({USAGE})")),
        }
    }
    Ok(Args {
        a: a.ok_or("--a: missing")?,
        b: b.ok_or("--b: missing")?,
        cfg,
        duration,
    })
}

fn json(s: &Snapshot) -> String {
    let us = |d: Option<Duration>| {
        d.map_or("null".to_string(), |d| {
            format!("{:.3}", d.as_secs_f64() * 1e6)
        })
    };
    format!(
        "{{\"packets_in\":{},\"bytes_in\":{},\"delivered_packets\":{},\"delivered_bytes\":{},\"queue_drops\":{},\"loss_drops\":{},\"write_errors\":{},\"truncated\":{},\"max_queue_packets\":{},\"max_queue_bytes\":{},\"late_mean_us\":{:.3},\"late_p50_us\":{},\"late_p99_us\":{},\"late_p999_us\":{},\"late_max_us\":{:.3}}}",
        s.packets_in, s.bytes_in, s.delivered_packets, s.delivered_bytes, s.queue_drops, s.loss_drops, s.write_errors,
        s.truncated, s.max_queue_packets, s.max_queue_bytes, s.late_mean.as_secs_f64() * 1e6, us(s.late_p50), us(s.late_p99),
        us(s.late_p999), s.late_max.as_secs_f64() * 1e6
    )
}

/// Block SIGINT/SIGTERM in every thread (the link's inherits the mask) and wait for one of them
/// or the timeout.
fn wait_for_signal(limit: Option<Duration>, set: &libc::sigset_t) {
    let ts = limit.map(|d| libc::timespec {
        tv_sec: d.as_secs() as _,
        tv_nsec: d.subsec_nanos() as _,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    loop {
        // SAFETY: valid set; tsp null or a valid timespec.
        let r = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), tsp) };
        if r >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("linkem: {e}");
            return ExitCode::from(2);
        }
    };
    // SAFETY: building and installing a signal mask on this (the only) thread.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let open = |(ns, dev): &(Option<String>, String)| {
        tun::open_in(dev, ns.as_deref()).map_err(|e| format!("{dev}: {e}"))
    };
    let (fa, fb) = match (open(&args.a), open(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("linkem: cannot open TUN device {e}");
            return ExitCode::from(2);
        }
    };
    let mut link = match Link::start(fa, fb, args.cfg) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("linkem: {e}");
            return ExitCode::from(1);
        }
    };
    wait_for_signal(args.duration, &set);
    let result = link.stop();
    let [ab, ba] = link.counters();
    println!(
        "{{\"a_to_b\":{},\"b_to_a\":{}}}",
        json(&ab.snapshot()),
        json(&ba.snapshot())
    );
    match result {
        Ok(notes) => {
            for n in notes {
                eprintln!("linkem: note: {n}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("linkem: the link failed: {e}");
            ExitCode::from(1)
        }
    }
}
