//! tcpvideo-trace: one streaming pass over packet captures to per-flow TCP state, stalls and their
//! causes, retransmission types and micro-bursts (seed 000, seed 003 metrics).
