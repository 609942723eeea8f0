//! ETHLE: edge-based transient holding of live segments (Ge, Wang, Chai, Hellwagner, "QoE-Assured
//! 4K HTTP Live Streaming via Transient Segment Holding at Mobile Edge", IEEE JSAC 36(8), 2018).
//!
//! In a nutshell: a live receiver far from the source gets poor TCP throughput over the long
//! backhaul (each segment restarts from slow start), so a segment can take longer to download than
//! it lasts, and the player stalls. An edge proxy near the receiver splits the path, and *holds
//! back* the newest x segments from the playlists it serves. The receiver then asks for segments
//! produced x·l_seg ago, which gives the edge x segment times to fetch the held ones over up to x
//! parallel backhaul connections; once it is x segments ahead it keeps the lead with one. The cost
//! is x·l_seg of extra live latency, so x is chosen as small as the backhaul allows.
//!
//! Where to look:
//! - [`hold`]: the decision for one receiver of one stream: hold-0 (inequality 1), the minimal x
//!   (2) under the RAN constraint (3) and an operator cap, and the 301-redirect fallback.
//! - [`startup_model`]: th_bh, the backhaul throughput of one segment download, from the paper's
//!   BBR STARTUP model (Eqs. 8–12), in two readings (as printed, and per-round doubling).
//! - [`policy_groups`]: per-stream receiver groups (hold-0 / hold-x / redirected) with the paper's
//!   one-way move from hold-0 to hold-x.
//! - [`paper_tables`]: Tables I and III of the paper, for tests and the study's "paper vs ours".
//!
//! Calling sequence for an edge (real or simulated): measure the backhaul RTT on the first
//! playlist fetch; read the stream's bitrate and segment length from the playlist; build a
//! [`startup_model::BackhaulModel`] and predict th_bh for the stream's segment size; for each
//! receiver request, get its th_ran (the operator's radio information) and call
//! [`policy_groups::StreamPolicy::on_request`], which applies [`hold::decide`] and the group rules.

pub mod hold;
pub mod paper_tables;
pub mod policy_groups;
pub mod startup_model;

pub use hold::{decide, HoldDecision, HoldInputs};
pub use policy_groups::{Group, StreamPolicy};
pub use startup_model::{BackhaulModel, BackhaulPrediction, StartupReading};
