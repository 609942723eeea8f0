//! Request/response on one persistent connection (HTTP/1.1 keep-alive segment downloads).
//!
//! The client writes request k (`request_bytes`) at max(scheduled time, end of response k−1); the
//! server reads requests as bytes arrive and, once request k is complete, writes response k
//! (`response_bytes`). The client counts response bytes its reader consumed to know when response k
//! is complete. Payloads are not simulated, so both sides know the schedule (as an HTTP client
//! knows the Content-Length of a segment) and count bytes.

use tcpvideo_model::Time;

use crate::scenario::Request;
use crate::tcp::TcpEndpoint;

/// One finished (or unfinished) request, for the `requests` table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestRecord {
    pub index: u32,
    pub scheduled_at: Time,
    pub sent_at: Option<Time>,
    pub completed_at: Option<Time>,
    pub response_bytes: u64,
}

#[derive(Clone, Debug)]
pub struct ReqResp {
    pub requests: Vec<Request>,
    pub records: Vec<RequestRecord>,
    /// Next request the client will issue.
    next: usize,
    /// A request is outstanding (sent, response not complete).
    outstanding: bool,
    /// Request bytes the client still has to push into its send buffer.
    client_pending: u64,
    /// Bytes of request data the server has read, and the next request it has to answer.
    server_read: u64,
    server_next: usize,
    server_req_end: u64,
    /// Response bytes the server still has to push into its send buffer.
    server_pending: u64,
    /// Response bytes the client has read, and where the current response ends.
    client_read: u64,
    client_resp_end: u64,
}

impl ReqResp {
    pub fn new(requests: Vec<Request>, start: Time) -> ReqResp {
        let records = requests
            .iter()
            .enumerate()
            .map(|(i, r)| RequestRecord { index: i as u32, scheduled_at: start + r.at, sent_at: None, completed_at: None, response_bytes: r.response_bytes })
            .collect();
        let first_end = requests.first().map(|r| r.request_bytes).unwrap_or(0);
        ReqResp {
            requests, records, next: 0, outstanding: false, client_pending: 0, server_read: 0, server_next: 0,
            server_req_end: first_end, server_pending: 0, client_read: 0, client_resp_end: 0,
        }
    }

    /// When the client should issue its next request (None = no more requests or one outstanding).
    pub fn next_request_time(&self) -> Option<Time> {
        if self.outstanding {
            return None;
        }
        self.records.get(self.next).map(|r| r.scheduled_at)
    }

    /// The client issues the next request now (called at or after `next_request_time`).
    pub fn issue(&mut self, now: Time, client: &mut TcpEndpoint) -> bool {
        if self.outstanding || self.next >= self.requests.len() {
            return false;
        }
        let r = self.requests[self.next];
        self.records[self.next].sent_at = Some(now);
        self.client_resp_end += r.response_bytes;
        self.outstanding = true;
        self.client_pending += r.request_bytes;
        self.next += 1;
        self.push_client(client);
        true
    }

    /// Push pending request bytes into the client's send buffer (also on Writable).
    pub fn push_client(&mut self, client: &mut TcpEndpoint) -> bool {
        if self.client_pending == 0 {
            return false;
        }
        let n = client.send(self.client_pending);
        self.client_pending -= n;
        n > 0
    }

    /// Push pending response bytes into the server's send buffer (also on Writable).
    pub fn push_server(&mut self, server: &mut TcpEndpoint) -> bool {
        if self.server_pending == 0 {
            return false;
        }
        let n = server.send(self.server_pending);
        self.server_pending -= n;
        n > 0
    }

    /// The server read everything readable; answer every request now complete.
    pub fn server_readable(&mut self, server: &mut TcpEndpoint) -> bool {
        let n = server.recv(u64::MAX);
        self.server_read += n;
        let mut touched = n > 0;
        while self.server_next < self.requests.len() && self.server_read >= self.server_req_end {
            self.server_pending += self.requests[self.server_next].response_bytes;
            self.server_next += 1;
            if let Some(r) = self.requests.get(self.server_next) {
                self.server_req_end += r.request_bytes;
            }
            touched = true;
        }
        self.push_server(server) || touched
    }

    /// The client's reader consumed `n` response bytes at `now`. Returns true if a response
    /// completed (so the next request may be scheduled).
    pub fn client_read(&mut self, now: Time, n: u64) -> bool {
        self.client_read += n;
        if self.outstanding && self.client_read >= self.client_resp_end {
            self.outstanding = false;
            self.records[self.next - 1].completed_at = Some(now);
            return true;
        }
        false
    }
}
