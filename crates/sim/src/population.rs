//! `[population]`: N users, each behind their own last mile, with bandwidth, RTT, bottleneck
//! buffer and (for progressive downloads) video encoding rate drawn per user from distributions
//! with the run's seed; presets for the two data centres of seed 003 (Ghobadi et al., "Trickle",
//! USENIX ATC 2012, §4.2, Tables 1–2, §5.1, §5.3).
//!
//! Topology: `server` —(`server` link, `server_rate`, no delay)— router `r1` —(`u<i>` link:
//! user i's bandwidth both ways, one-way delay RTT/2, drop-tail buffer of B packets both ways)—
//! host `u<i>`. The users share nothing but the server's link (10 Gbit/s by default, never the
//! bottleneck): each user's last mile is their bottleneck, as the paper assumes (§4.2, §5.2
//! "bottlenecks, which are likely to reside at the last mile"). One flow per user from `flow`.
//!
//! Where each preset number comes from:
//!
//! | quantity | DC1 | DC2 | source |
//! |---|---|---|---|
//! | bandwidth buckets (Mbit/s) | <0.5, 0.5–1, 1–2, 2–4, 4–8, ≥8 | same | Table 2 |
//! | share of users per bucket (%) | 1, 3, 10, 28, 35, 23 | 39, 26, 17, 9, 6, 3 | Table 2 "% flows" |
//! | within a bucket | log-uniform; ends 0.25 and 20 Mbit/s | same | **our choice** (the seed gives only the buckets) |
//! | encoding rate R | log-normal, mean 677 kbit/s, σ 0.35, in [150, 3000] | mean 604 kbit/s | mean: §5.1; spread and limits **our choice** |
//! | base RTT (propagation) | log-normal, median 60 ms, σ 0.5 | median 200 ms, σ 0.5 | **our choice**, aimed at Table 1's RTT_startup (srtt after the startup burst, queueing included: 99 ms / 556 ms), which the study reports as a check, not a target |
//! | bottleneck buffer (time at the user's bandwidth) | log-normal, median 150 ms, σ 0.6 | median 1 s, σ 0.8 | **our choice**; DC2 "alarmingly over-buffered: 20 % of the srtt samples were over 1 second while 2 % were over 4 seconds" (§5.3) |
//!
//! The buffer in packets is bandwidth × buffer time / 1500 B, at least 8 and at most 4000.
//! Medians implied by the bucket shares: DC1 ≈ 4.7 Mbit/s (Table 1 says 6: the buckets and the
//! median are measured at different points, see the study), DC2 ≈ 0.67 Mbit/s (Table 1: 0.7).
//!
//! Every preset number can be overridden by a key of the same meaning. Draws per user, in user
//! order, from the run's `population` stream: bucket, bandwidth within it, RTT, buffer, rate.

use std::time::Duration;

use rand::Rng;
use rand_distr::{Distribution, LogNormal};
use serde::Deserialize;
use tcpvideo_model::Bandwidth;

use crate::scenario::{FlowTemplate, Qty, ScenarioError};

/// Table 2's bandwidth buckets, Mbit/s: [edges[i], edges[i+1]).
pub const BUCKET_EDGES_MBPS: [f64; 7] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 20.0];

/// `[population]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PopulationSpec {
    pub users: u32,
    /// "dc1" (default) or "dc2".
    pub preset: Option<String>,
    /// Percent of users per Table 2 bucket (6 numbers).
    pub bandwidth_shares: Option<Vec<f64>>,
    pub rtt_median: Option<Qty>,
    pub rtt_sigma: Option<f64>,
    pub buffer_median: Option<Qty>,
    pub buffer_sigma: Option<f64>,
    pub rate_mean: Option<Qty>,
    pub rate_sigma: Option<f64>,
    pub server_rate: Option<Qty>,
    /// Flow template, one flow per user (server → user).
    pub flow: Option<FlowTemplate>,
}

/// The distributions, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct PopulationModel {
    pub shares: [f64; 6],
    pub rtt_median: Duration,
    pub rtt_sigma: f64,
    pub buffer_median: Duration,
    pub buffer_sigma: f64,
    pub rate_mean: Bandwidth,
    pub rate_sigma: f64,
}

impl PopulationModel {
    pub fn preset(name: &str) -> Option<PopulationModel> {
        let ms = Duration::from_millis;
        match name {
            "dc1" => Some(PopulationModel {
                shares: [1.0, 3.0, 10.0, 28.0, 35.0, 23.0],
                rtt_median: ms(60),
                rtt_sigma: 0.5,
                buffer_median: ms(150),
                buffer_sigma: 0.6,
                rate_mean: Bandwidth::from_bps(677_000),
                rate_sigma: 0.35,
            }),
            "dc2" => Some(PopulationModel {
                shares: [39.0, 26.0, 17.0, 9.0, 6.0, 3.0],
                rtt_median: ms(200),
                rtt_sigma: 0.5,
                buffer_median: ms(1000),
                buffer_sigma: 0.8,
                rate_mean: Bandwidth::from_bps(604_000),
                rate_sigma: 0.35,
            }),
            _ => None,
        }
    }
}

/// One user's draw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct User {
    pub bandwidth: Bandwidth,
    pub rtt: Duration,
    pub buffer_packets: u64,
    pub rate: Bandwidth,
}

/// Packet size the buffer is counted in.
const PACKET_BYTES: f64 = 1500.0;

impl PopulationModel {
    /// Draw one user.
    pub fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> User {
        let total: f64 = self.shares.iter().sum();
        let mut u = rng.gen::<f64>() * total;
        let mut bucket = self.shares.len() - 1;
        for (i, s) in self.shares.iter().enumerate() {
            if u < *s {
                bucket = i;
                break;
            }
            u -= s;
        }
        let (lo, hi) = (BUCKET_EDGES_MBPS[bucket].ln(), BUCKET_EDGES_MBPS[bucket + 1].ln());
        let mbps = (lo + rng.gen::<f64>() * (hi - lo)).exp();
        let bandwidth = Bandwidth::from_bps((mbps * 1e6).round() as u64);
        let lognormal = |median: f64, sigma: f64, rng: &mut R| LogNormal::new(median.ln(), sigma).expect("validated sigma").sample(rng);
        let rtt = Duration::from_secs_f64(lognormal(self.rtt_median.as_secs_f64(), self.rtt_sigma, rng).clamp(0.002, 10.0));
        let buffer_s = lognormal(self.buffer_median.as_secs_f64(), self.buffer_sigma, rng);
        let buffer_packets = ((mbps * 1e6 / 8.0 * buffer_s / PACKET_BYTES).round() as u64).clamp(8, 4000);
        // A log-normal with this mean: median = mean · exp(−σ²/2).
        let median = self.rate_mean.bits_per_sec as f64 * (-self.rate_sigma * self.rate_sigma / 2.0).exp();
        let rate = lognormal(median, self.rate_sigma, rng).clamp(150e3, 3e6);
        User { bandwidth, rtt, buffer_packets, rate: Bandwidth::from_bps(rate.round() as u64) }
    }
}

/// Validate `[population]` into its model (preset, then overrides).
pub fn model_of(p: &PopulationSpec) -> Result<PopulationModel, ScenarioError> {
    let e = |k: &str, m: String| ScenarioError(format!("population.{k}: {m}"));
    let preset = p.preset.as_deref().unwrap_or("dc1");
    let mut m = PopulationModel::preset(preset).ok_or_else(|| e("preset", format!("unknown preset {preset:?} (dc1, dc2)")))?;
    if p.users == 0 || p.users > 100_000 {
        return Err(e("users", "must be between 1 and 100000".into()));
    }
    if let Some(s) = &p.bandwidth_shares {
        if s.len() != 6 || s.iter().any(|x| !x.is_finite() || *x < 0.0) || s.iter().sum::<f64>() <= 0.0 {
            return Err(e("bandwidth_shares", "six non-negative numbers, not all zero (Table 2's buckets)".into()));
        }
        m.shares.copy_from_slice(s);
    }
    let sigma = |v: Option<f64>, k: &str, cur: f64| -> Result<f64, ScenarioError> {
        match v {
            None => Ok(cur),
            Some(x) if x.is_finite() && (0.0..=3.0).contains(&x) => Ok(x),
            Some(x) => Err(e(k, format!("{x} is not in [0, 3]"))),
        }
    };
    m.rtt_sigma = sigma(p.rtt_sigma, "rtt_sigma", m.rtt_sigma)?;
    m.buffer_sigma = sigma(p.buffer_sigma, "buffer_sigma", m.buffer_sigma)?;
    m.rate_sigma = sigma(p.rate_sigma, "rate_sigma", m.rate_sigma)?;
    if let Some(q) = &p.rtt_median {
        m.rtt_median = q.duration("population.rtt_median")?;
    }
    if let Some(q) = &p.buffer_median {
        m.buffer_median = q.duration("population.buffer_median")?;
    }
    if m.rtt_median.is_zero() || m.buffer_median.is_zero() {
        return Err(e("rtt_median", "medians must be positive".into()));
    }
    if let Some(q) = &p.rate_mean {
        m.rate_mean = q.rate("population.rate_mean")?;
    }
    Ok(m)
}

/// Add the population's nodes, links and flows to the scenario being built.
pub(crate) fn expand(
    p: &PopulationSpec,
    seed: u64,
    b: &mut crate::scenario::Builder,
    flows: &mut Vec<crate::scenario::FlowDef>,
    default_tcp: &crate::scenario::TcpSpec,
    jitter_rng: &mut rand_pcg::Pcg64,
) -> Result<(), ScenarioError> {
    use crate::loss::LossSpec;
    use crate::network::{NodeKind, QueueLimit};
    use crate::scenario::{AppDef, DirDef, LinkDef};
    let model = model_of(p)?;
    let server_rate = match &p.server_rate {
        Some(q) => q.rate("population.server_rate")?,
        None => Bandwidth::from_mbps(10_000),
    };
    let srv = b.add_node("server".into(), NodeKind::Host, "population")?;
    let r1 = b.add_node("r1".into(), NodeKind::Router, "population")?;
    let dir = |rate, delay, packets| DirDef {
        rate,
        delay,
        limit: QueueLimit::Packets(packets),
        loss: LossSpec::None,
        reorder: None,
        spikes: None,
        jitter: None,
    };
    let big = dir(server_rate, Duration::ZERO, 10_000);
    b.links.push(LinkDef { name: "server".into(), a: srv, b: r1, ab: big, ba: big });
    let mut rng = crate::engine::sub_rng(seed, crate::engine::streams::POPULATION);
    let tmpl = p.flow.clone().unwrap_or_default();
    for i in 0..p.users {
        let u = model.draw(&mut rng);
        let c = b.add_node(format!("u{i}"), NodeKind::Host, "population")?;
        let half = u.rtt / 2;
        b.links.push(LinkDef {
            name: format!("u{i}"),
            a: r1,
            b: c,
            ab: dir(u.bandwidth, half, u.buffer_packets),
            ba: dir(u.bandwidth, u.rtt - half, u.buffer_packets),
        });
        let mut f = crate::scenario::flow_of(&tmpl, &format!("population.flow[{i}]"), format!("u{i}"), c, srv, default_tcp, jitter_rng)?;
        if let AppDef::Progressive(d) = &mut f.app {
            d.rate = u.rate;
        }
        flows.push(f);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sub_rng;

    fn users(preset: &str, n: usize) -> Vec<User> {
        let m = PopulationModel::preset(preset).unwrap();
        let mut rng = sub_rng(1, 99);
        (0..n).map(|_| m.draw(&mut rng)).collect()
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    #[test]
    fn dc2_users_follow_table_2s_shares_and_median() {
        let u = users("dc2", 4000);
        let below_half = u.iter().filter(|x| x.bandwidth.bits_per_sec < 500_000).count() as f64 / 4000.0;
        assert!((below_half - 0.39).abs() < 0.03, "{below_half}");
        let med = median(u.iter().map(|x| x.bandwidth.as_mbps_f64()).collect());
        assert!((0.6..0.75).contains(&med), "median {med} Mbit/s");
    }

    #[test]
    fn dc1_is_faster_and_less_buffered_than_dc2_and_rates_average_the_papers_means() {
        let (a, b) = (users("dc1", 4000), users("dc2", 4000));
        let mean_rate = |u: &[User]| u.iter().map(|x| x.rate.bits_per_sec as f64).sum::<f64>() / u.len() as f64 / 1e3;
        assert!((mean_rate(&a) - 677.0).abs() < 25.0, "{}", mean_rate(&a));
        assert!((mean_rate(&b) - 604.0).abs() < 25.0, "{}", mean_rate(&b));
        let med_bw = |u: &[User]| median(u.iter().map(|x| x.bandwidth.as_mbps_f64()).collect());
        assert!(med_bw(&a) > 4.0 && med_bw(&b) < 1.0);
        // DC2's buffers hold > 1 s of data for a large share of users.
        let over_1s = |u: &[User]| {
            u.iter().filter(|x| x.buffer_packets as f64 * 1500.0 * 8.0 / x.bandwidth.bits_per_sec as f64 > 1.0).count() as f64
                / u.len() as f64
        };
        assert!(over_1s(&b) > 0.3 && over_1s(&a) < 0.05, "{} {}", over_1s(&a), over_1s(&b));
    }

    #[test]
    fn a_population_scenario_gives_each_user_a_last_mile_and_a_progressive_flow_at_its_drawn_rate() {
        let text = "duration = \"5s\"\n[population]\nusers = 4\npreset = \"dc2\"\nflow = { app = \"progressive\" }\n";
        let sc = crate::scenario::load_toml(text, Some(3)).unwrap();
        assert_eq!(sc.flows.len(), 4);
        assert_eq!(sc.links.len(), 5);
        let mut rng = sub_rng(3, crate::engine::streams::POPULATION);
        let m = PopulationModel::preset("dc2").unwrap();
        for (i, f) in sc.flows.iter().enumerate() {
            let u = m.draw(&mut rng);
            let crate::scenario::AppDef::Progressive(d) = &f.app else { panic!("progressive") };
            assert_eq!(d.rate, u.rate);
            assert_eq!(sc.links[i + 1].ab.rate, u.bandwidth);
            assert_eq!(f.base_rtt, u.rtt);
        }
        assert_ne!(sc, crate::scenario::load_toml(text, Some(4)).unwrap());
    }

    #[test]
    fn a_bad_preset_or_share_list_names_the_key() {
        let p = PopulationSpec { users: 3, preset: Some("dc3".into()), ..Default::default() };
        assert!(model_of(&p).unwrap_err().0.starts_with("population.preset: unknown preset \"dc3\""));
        let p = PopulationSpec { users: 3, bandwidth_shares: Some(vec![1.0; 5]), ..Default::default() };
        assert!(model_of(&p).unwrap_err().0.starts_with("population.bandwidth_shares:"));
        let p = PopulationSpec { users: 0, ..Default::default() };
        assert!(model_of(&p).unwrap_err().0.starts_with("population.users:"));
    }
}
