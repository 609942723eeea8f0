//! What the wire said about each server's loss-recovery settings: TLP (`tlp_inference.rs`) and
//! RACK (`rack_inference.rs`) are per-host settings, decided from the votes of every flow of the
//! server, and the analysis re-types its ambiguous re-sends with them. The summary reports the
//! votes and the decision per server, so that a user can see why a re-send became an RTO or a
//! probe, and can check the decision against a server whose configuration they know.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::decode::addr_to_string;
use crate::flow::FlowOut;

/// One server's inferred settings.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ServerSettings {
    pub server_ip: String,
    /// Flows of this server in the capture.
    pub flows: u64,
    /// Unambiguous tail-loss probes (votes for TLP on).
    pub tlp_probes: u32,
    /// RTOs with no probe in a silence longer than the PTO (votes for TLP off).
    pub tlp_rtos_without_probe: u32,
    /// "on", "off" or "unknown" (no vote).
    pub tlp: &'static str,
    /// Re-sends only RACK sends at an ACK (votes for RACK on).
    pub rack_resends: u32,
    /// RTOs of segments RACK would have re-sent at an earlier ACK (votes for RACK off).
    pub rack_rtos_prevented: u32,
    /// Recoveries DupThresh started for a segment RACK would have re-sent at an earlier ACK
    /// (votes for RACK off).
    pub rack_dupthresh_late: u32,
    /// "on", "off" or "unknown" (no vote).
    pub rack: &'static str,
}

fn verdict(on: Option<bool>) -> &'static str {
    match on {
        Some(true) => "on",
        Some(false) => "off",
        None => "unknown",
    }
}

/// The settings of every server of `flows`, ordered by address.
pub fn collect(flows: &[FlowOut]) -> Vec<ServerSettings> {
    let mut by_server: BTreeMap<u128, (bool, u64, crate::tlp_inference::TlpEvidence, crate::rack_inference::RackEvidence)> =
        BTreeMap::new();
    for f in flows {
        let e = by_server.entry(f.server.0).or_insert((f.v6, 0, Default::default(), Default::default()));
        e.1 += 1;
        e.2.absorb(&crate::tlp_inference::flow_votes(f));
        e.3.absorb(&f.rack_evidence);
    }
    by_server
        .into_iter()
        .map(|(ip, (v6, n, tlp, rack))| ServerSettings {
            server_ip: addr_to_string(ip, v6),
            flows: n,
            tlp_probes: tlp.probes,
            tlp_rtos_without_probe: tlp.rtos_without_probe,
            tlp: verdict(tlp.tlp_on()),
            rack_resends: rack.rack_resends,
            rack_rtos_prevented: rack.rtos_rack_would_have_prevented,
            rack_dupthresh_late: rack.dupthresh_resends_rack_would_have_sent_sooner,
            rack: verdict(rack.rack_on()),
        })
        .collect()
}
