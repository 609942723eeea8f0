//! Typed units shared by every crate of tcpvideo.
//!
//! Time is an integer count of nanoseconds (the simulator's clock, a capture's timestamps);
//! durations are `std::time::Duration`; rates are [`Bandwidth`] in bits per second. Byte counts
//! are plain `u64` fields whose names end in `_bytes`. No bare `f64` seconds cross a module
//! boundary (STYLE.md rule 3).

use std::fmt;
use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// A point in time: nanoseconds since the start of a simulation or an arbitrary capture epoch.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Time {
        Time(ns)
    }
    pub const fn from_micros(us: u64) -> Time {
        Time(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Time {
        Time(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Time {
        Time(s * 1_000_000_000)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds as a float, for reports only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Time) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(d.as_nanos() as u64))
    }
}

impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Time> for Time {
    type Output = Duration;
    /// Panics in debug builds if `rhs` is later; use [`Time::saturating_since`] when unsure.
    fn sub(self, rhs: Time) -> Duration {
        debug_assert!(self.0 >= rhs.0, "time went backwards: {} - {}", self.0, rhs.0);
        Duration::from_nanos(self.0.saturating_sub(rhs.0))
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}

/// A data rate in bits per second.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bandwidth {
    pub bits_per_sec: u64,
}

impl Bandwidth {
    pub const ZERO: Bandwidth = Bandwidth { bits_per_sec: 0 };

    pub const fn from_bps(bits_per_sec: u64) -> Bandwidth {
        Bandwidth { bits_per_sec }
    }
    pub const fn from_mbps(mbit: u64) -> Bandwidth {
        Bandwidth { bits_per_sec: mbit * 1_000_000 }
    }
    /// Rate at which `bytes` are delivered in `interval`; zero for an empty interval.
    pub fn from_bytes_per(bytes: u64, interval: Duration) -> Bandwidth {
        let ns = interval.as_nanos();
        if ns == 0 {
            return Bandwidth::ZERO;
        }
        Bandwidth { bits_per_sec: ((bytes as u128 * 8 * 1_000_000_000) / ns) as u64 }
    }
    /// Time to serialize `bytes` at this rate (rounded up to the next nanosecond).
    pub fn transmit_time(self, bytes: u64) -> Duration {
        if self.bits_per_sec == 0 {
            return Duration::MAX;
        }
        let ns = (bytes as u128 * 8 * 1_000_000_000).div_ceil(self.bits_per_sec as u128);
        Duration::from_nanos(ns as u64)
    }
    /// Bytes sent at this rate during `d` (bandwidth-delay product when `d` is an RTT).
    pub fn bytes_in(self, d: Duration) -> u64 {
        ((self.bits_per_sec as u128 * d.as_nanos()) / (8 * 1_000_000_000)) as u64
    }
    /// Scale by a gain (pacing and cwnd gains of BBR, for example).
    pub fn scale(self, gain: f64) -> Bandwidth {
        Bandwidth { bits_per_sec: (self.bits_per_sec as f64 * gain) as u64 }
    }
    pub fn as_mbps_f64(self) -> f64 {
        self.bits_per_sec as f64 / 1e6
    }
}

impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} Mbit/s", self.as_mbps_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmit_time_of_a_full_frame_at_100_mbit() {
        // 1514 bytes at 100 Mbit/s = 121.12 us
        let d = Bandwidth::from_mbps(100).transmit_time(1514);
        assert_eq!(d, Duration::from_nanos(121_120));
    }

    #[test]
    fn bdp_of_100_mbit_and_50_ms_is_625_kb() {
        assert_eq!(Bandwidth::from_mbps(100).bytes_in(Duration::from_millis(50)), 625_000);
    }

    #[test]
    fn rate_from_bytes_inverts_bytes_in() {
        let bw = Bandwidth::from_bytes_per(625_000, Duration::from_millis(50));
        assert_eq!(bw, Bandwidth::from_mbps(100));
    }

    #[test]
    fn time_arithmetic_saturates_instead_of_wrapping() {
        assert_eq!(Time(5).saturating_since(Time(9)), Duration::ZERO);
        assert_eq!(Time::MAX + Duration::from_secs(1), Time::MAX);
    }
}
