//! Crowdsourced live streaming (seed 000, Zhou et al. 2016): publishers push live FLV over TCP to
//! a front-end server, which relays each channel to its subscribers.
//!
//! - [`frames`]: a publisher's I/P/voice frame source with rate adaptation (seed §1.1);
//! - [`flv_wire`]: the bytes on the wire (HTTP-FLV: FLV tags in HTTP/1.1 chunks);
//! - [`front_end`]: publishers, subscribers and the front-end's relay, keep-alive and 20 s idle
//!   close (seed §1.2);
//! - [`truth`]: the ground truth of every stall and timeout retransmission at the front-end,
//!   from the simulator's own state, written as tables for `tcpvideo score`.

pub mod flv_wire;
pub mod frames;
pub mod front_end;
pub mod truth;
