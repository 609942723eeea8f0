//! Each receiver's RAN throughput th_ran (ETHLE §III-A "RAN condition"): in the paper it comes
//! from the mobile operator's RNIS; here from, in this order,
//! 1. the request header `X-Ran-Throughput-Kbps: <kbit/s>`,
//! 2. the query parameter `ran_kbps=<kbit/s>`,
//! 3. the context API, the RNIS stand-in: `PUT /ethle/context/receivers/<id>` with
//!    `{"ran_throughput_kbps": <kbit/s>}` (GET returns it, DELETE forgets it),
//! 4. the edge's `--default-ran-kbps`, if set.
//!
//! With none of these the receiver's th_ran is unknown, and the edge treats it as unlimited: the
//! receiver is held only if the backhaul alone cannot deliver a segment in time (inequality 1 with
//! the RAN term zero), and never redirected. A receiver is named by the header `X-Receiver-Id`,
//! the query parameter `receiver`, or else its IP address.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tcpvideo_model::units::Bandwidth;

pub const RAN_HEADER: &str = "x-ran-throughput-kbps";
pub const RECEIVER_HEADER: &str = "x-receiver-id";
pub const CONTEXT_PREFIX: &str = "/ethle/context/receivers/";

/// Body of the context API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiverContext {
    pub ran_throughput_kbps: u64,
}

/// Parse a kbit/s value from a header or query parameter; the error names the field.
pub fn parse_kbps(field: &str, value: &str) -> Result<Bandwidth, String> {
    value
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|k| k.checked_mul(1000))
        .map(Bandwidth::from_bps)
        .ok_or_else(|| format!("{field}: expected a whole number of kbit/s, got {value:?}"))
}

/// Parse a context API body; the error names the field.
pub fn parse_context(body: &[u8]) -> Result<ReceiverContext, String> {
    serde_json::from_slice(body)
        .map_err(|e| format!("context body: {e} (expected {{\"ran_throughput_kbps\": <kbit/s>}})"))
}

/// The RNIS stand-in: th_ran by receiver id.
#[derive(Default)]
pub struct ContextStore {
    by_receiver: Mutex<HashMap<String, Bandwidth>>,
}

impl ContextStore {
    pub fn set(&self, receiver: &str, ran: Bandwidth) {
        self.by_receiver
            .lock()
            .unwrap()
            .insert(receiver.to_string(), ran);
    }
    pub fn get(&self, receiver: &str) -> Option<Bandwidth> {
        self.by_receiver.lock().unwrap().get(receiver).copied()
    }
    pub fn forget(&self, receiver: &str) -> bool {
        self.by_receiver.lock().unwrap().remove(receiver).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kbps_values_become_bandwidths_and_bad_ones_name_the_field() {
        assert_eq!(
            parse_kbps("ran_kbps", "40000"),
            Ok(Bandwidth::from_mbps(40))
        );
        let e = parse_kbps("X-Ran-Throughput-Kbps", "fast").unwrap_err();
        assert!(e.starts_with("X-Ran-Throughput-Kbps:"), "{e}");
        assert!(parse_kbps("ran_kbps", "-5").is_err());
        assert!(parse_kbps("ran_kbps", "99999999999999999999").is_err());
    }

    #[test]
    fn context_api_body_is_strict_about_its_one_field() {
        assert_eq!(
            parse_context(br#"{"ran_throughput_kbps": 25000}"#)
                .unwrap()
                .ran_throughput_kbps,
            25000
        );
        assert!(parse_context(br#"{"ran_kbps": 25000}"#)
            .unwrap_err()
            .contains("ran_kbps"));
        assert!(parse_context(b"garbage").is_err());
    }

    #[test]
    fn store_remembers_and_forgets_per_receiver() {
        let s = ContextStore::default();
        s.set("phone-1", Bandwidth::from_mbps(30));
        assert_eq!(s.get("phone-1"), Some(Bandwidth::from_mbps(30)));
        assert_eq!(s.get("phone-2"), None);
        assert!(s.forget("phone-1"));
        assert_eq!(s.get("phone-1"), None);
    }
}
