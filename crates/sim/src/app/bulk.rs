//! Bulk sender: write `bytes` (or without end) as fast as the send buffer accepts, like iperf or a
//! progressive download; close afterwards when asked (FIN after the data).

use crate::tcp::TcpEndpoint;

#[derive(Clone, Debug)]
pub struct Bulk {
    /// Bytes still to hand to the socket (`u64::MAX` = unlimited).
    pub remaining: u64,
    pub total: Option<u64>,
    pub close: bool,
    closed: bool,
}

impl Bulk {
    pub fn new(bytes: Option<u64>, close: bool) -> Bulk {
        Bulk { remaining: bytes.unwrap_or(u64::MAX), total: bytes, close, closed: false }
    }

    /// Fill the send buffer (on Connected and Writable). Returns true if the socket was touched.
    pub fn fill(&mut self, ep: &mut TcpEndpoint) -> bool {
        if self.closed {
            return false;
        }
        let mut touched = false;
        if self.remaining > 0 {
            let n = ep.send(self.remaining);
            if self.remaining != u64::MAX {
                self.remaining -= n;
            }
            touched = n > 0;
        }
        if self.remaining == 0 && self.close {
            ep.close();
            self.closed = true;
            touched = true;
        }
        touched
    }
}
