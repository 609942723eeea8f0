//! The ETHLE paper's Tables I and III as data, and the cell-by-cell comparison with the model.
//!
//! Table I gives segment sizes in MB; they are decimal megabytes (15 Mbit/s × 2 s = 3.75·10⁶ B,
//! printed 3.7 MB; binary MiB would be 3.58). Table III gives, per stream and source location,
//! the modeled and measured x and backhaul throughput (Mbit/s); the 50 Mbit/s-10 s row has no
//! modeled values (the paper's model does not cover segments that outlast STARTUP). The backhaul
//! RTTs (US West, Japan, Australia, India) are §V-A's 137, 224, 302 and 334 ms.
//!
//! [`compare_table3`] recomputes each modeled cell with [`super::startup_model`] and
//! [`super::hold`], and says for each cell whether the table agrees with its own Eq. 2 (x from
//! the table's th_bh), within the rounding of the printed th_bh (± 0.05 Mbit/s).

use std::time::Duration;

use super::hold::{decide, HoldInputs};
use super::startup_model::{BackhaulModel, StartupReading};
use crate::units::Bandwidth;

/// Source locations of §V-A, with their backhaul RTT to the UK edge.
pub const LOCATIONS: [(&str, Duration); 4] = [
    ("US West", Duration::from_millis(137)),
    ("Japan", Duration::from_millis(224)),
    ("Australia", Duration::from_millis(302)),
    ("India", Duration::from_millis(334)),
];

/// One stream of Table I: bitrate (Mbit/s), segment length (s), segment size (decimal MB).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stream {
    pub bitrate_mbps: u64,
    pub segment_secs: u64,
    pub segment_mb: f64,
}

/// One row of Table III: per location, (modeled x, actual x) and (modeled, actual) th_bh Mbit/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Table3Row {
    pub stream: Stream,
    pub modeled_x: Option<[u32; 4]>,
    pub actual_x: [u32; 4],
    pub modeled_th_mbps: Option<[f64; 4]>,
    pub actual_th_mbps: [f64; 4],
}

const fn stream(bitrate_mbps: u64, segment_secs: u64, segment_mb: f64) -> Stream {
    Stream { bitrate_mbps, segment_secs, segment_mb }
}

/// Table III, row by row (Table I's sizes inlined).
pub const TABLE3: [Table3Row; 6] = [
    Table3Row {
        stream: stream(15, 2, 3.7),
        modeled_x: Some([1, 2, 2, 3]),
        actual_x: [1, 2, 2, 4],
        modeled_th_mbps: Some([20.0, 11.7, 9.6, 7.4]),
        actual_th_mbps: [19.6, 11.9, 9.9, 7.6],
    },
    Table3Row {
        stream: stream(15, 4, 7.2),
        modeled_x: Some([0, 0, 1, 1]),
        actual_x: [0, 0, 1, 1],
        modeled_th_mbps: Some([34.4, 21.0, 17.2, 13.3]),
        actual_th_mbps: [35.2, 21.6, 17.8, 13.9],
    },
    Table3Row {
        stream: stream(15, 10, 18.3),
        modeled_x: Some([0, 0, 0, 0]),
        actual_x: [0, 0, 0, 0],
        modeled_th_mbps: Some([78.7, 48.1, 39.3, 30.5]),
        actual_th_mbps: [75.4, 47.6, 35.6, 30.5],
    },
    Table3Row {
        stream: stream(50, 2, 12.2),
        modeled_x: Some([1, 2, 2, 3]),
        actual_x: [1, 2, 2, 3],
        modeled_th_mbps: Some([54.8, 33.5, 27.4, 21.2]),
        actual_th_mbps: [53.7, 33.0, 27.6, 21.0],
    },
    Table3Row {
        stream: stream(50, 4, 24.4),
        modeled_x: Some([1, 1, 1, 2]),
        actual_x: [1, 1, 1, 2],
        modeled_th_mbps: Some([101.8, 62.3, 50.9, 39.4]),
        actual_th_mbps: [95.0, 58.3, 47.0, 38.5],
    },
    Table3Row {
        stream: stream(50, 10, 61.1),
        modeled_x: None,
        actual_x: [0, 0, 1, 1],
        modeled_th_mbps: None,
        actual_th_mbps: [181.0, 111.0, 81.6, 71.4],
    },
];

/// One modeled cell of Table III recomputed.
#[derive(Clone, Debug, PartialEq)]
pub struct CellComparison {
    pub stream: Stream,
    pub location: &'static str,
    pub paper_th_mbps: f64,
    pub ours_th_mbps: f64,
    /// (ours − paper) / paper.
    pub th_relative_error: f64,
    pub paper_x: u32,
    pub ours_x: u32,
    /// x values Eq. 1/2 give from the table's own th_bh (± its rounding): the table is
    /// self-consistent in this cell when `paper_x` is among them.
    pub x_from_paper_th: Vec<u32>,
}

impl CellComparison {
    pub fn paper_self_consistent(&self) -> bool {
        self.x_from_paper_th.contains(&self.paper_x)
    }
}

fn hold_of(stream: Stream, th: Bandwidth, ran: Bandwidth) -> u32 {
    decide(&HoldInputs {
        segment_bytes: (stream.segment_mb * 1e6).round() as u64,
        segment_length: Duration::from_secs(stream.segment_secs),
        bitrate: Bandwidth::from_mbps(stream.bitrate_mbps),
        backhaul_throughput: th,
        ran_throughput: ran,
        max_hold: None,
    })
    .held_segments()
}

/// Every modeled cell of Table III recomputed with `reading`, `mss_bytes` and a receiver RAN
/// throughput `ran` (the paper does not print th_ran; it matters only for hold-0 vs hold-1).
pub fn compare_table3(reading: StartupReading, mss_bytes: u64, ran: Bandwidth) -> Vec<CellComparison> {
    let mut cells = Vec::new();
    for row in TABLE3.iter() {
        let (Some(paper_x), Some(paper_th)) = (row.modeled_x, row.modeled_th_mbps) else {
            continue;
        };
        for (i, (location, rtt)) in LOCATIONS.iter().enumerate() {
            let model = BackhaulModel { mss_bytes, rtt: *rtt, bottleneck: None, reading };
            let bytes = (row.stream.segment_mb * 1e6).round() as u64;
            let ours = model.predict(bytes).throughput;
            let mut x_from_paper_th: Vec<u32> = [-0.05, 0.0, 0.05]
                .iter()
                .map(|d| hold_of(row.stream, Bandwidth::from_bps(((paper_th[i] + d) * 1e6) as u64), ran))
                .collect();
            x_from_paper_th.sort_unstable();
            x_from_paper_th.dedup();
            cells.push(CellComparison {
                stream: row.stream,
                location,
                paper_th_mbps: paper_th[i],
                ours_th_mbps: ours.as_mbps_f64(),
                th_relative_error: ours.as_mbps_f64() / paper_th[i] - 1.0,
                paper_x: paper_x[i],
                ours_x: hold_of(row.stream, ours, ran),
                x_from_paper_th,
            });
        }
    }
    cells
}

/// The RAN throughputs (Mbit/s) for which the table's hold-0 / hold-x split follows inequality (1)
/// in every cell, given the table's own th_bh: `(lowest, highest)`, empty when low ≥ high.
/// A hold-0 cell needs th_ran ≥ s/(l − s/th_bh); a hold-x cell needs th_ran below that and, by
/// constraint (3), above the stream's bitrate (so the band is open at a bitrate bound).
pub fn ran_interval_consistent_with_table3() -> (f64, f64) {
    let (mut low, mut high) = (0.0_f64, f64::INFINITY);
    for row in TABLE3.iter() {
        let (Some(xs), Some(ths)) = (row.modeled_x, row.modeled_th_mbps) else {
            continue;
        };
        let mbit = row.stream.segment_mb * 8.0;
        for (x, th) in xs.iter().zip(ths) {
            let slack = row.stream.segment_secs as f64 - mbit / th;
            let needed = if slack > 0.0 { mbit / slack } else { f64::INFINITY };
            if *x == 0 {
                low = low.max(needed);
            } else {
                high = high.min(needed);
                low = low.max(row.stream.bitrate_mbps as f64);
            }
        }
    }
    (low, high)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux's MSS on a 1500-byte path with TCP timestamps.
    const MSS: u64 = 1448;

    /// A RAN rate inside [`ran_interval_consistent_with_table3`] (50–56.9 Mbit/s); the LTE-A
    /// cell of §V-A peaks at 112 Mbit/s.
    fn ran() -> Bandwidth {
        Bandwidth::from_mbps(55)
    }

    fn print(cells: &[CellComparison], title: &str) {
        println!("{title}");
        println!(
            "{:>10} {:>10} {:>8} {:>8} {:>7} {:>6} {:>5} {:>9}",
            "stream", "location", "paper", "ours", "err", "x_pap", "x_us", "x(Eq.2)"
        );
        for c in cells {
            println!(
                "{:>4}M-{:>2}s {:>10} {:>8.1} {:>8.1} {:>+6.1}% {:>6} {:>5} {:>9?}",
                c.stream.bitrate_mbps,
                c.stream.segment_secs,
                c.location,
                c.paper_th_mbps,
                c.ours_th_mbps,
                c.th_relative_error * 100.0,
                c.paper_x,
                c.ours_x,
                c.x_from_paper_th
            );
        }
    }

    #[test]
    fn doubling_reading_matches_every_modeled_th_bh_of_table3_within_10_percent() {
        let cells = compare_table3(StartupReading::DoublingPerRound, MSS, ran());
        print(&cells, "Table III, doubling per round (cargo test -p tcpvideo-model ethle -- --nocapture)");
        assert_eq!(cells.len(), 20);
        for c in &cells {
            assert!(c.th_relative_error.abs() <= 0.10, "{c:?}");
        }
    }

    #[test]
    fn eq8_as_printed_overestimates_every_cell_by_more_than_a_quarter() {
        let cells = compare_table3(StartupReading::Eq8AsPrinted, MSS, ran());
        print(&cells, "Table III, Eq. 8 as printed (g = 2/ln 2)");
        let (lo, hi) = cells.iter().fold((f64::MAX, f64::MIN), |(lo, hi), c| (lo.min(c.th_relative_error), hi.max(c.th_relative_error)));
        println!("Eq. 8 as printed: {:+.1}% .. {:+.1}%", lo * 100.0, hi * 100.0);
        assert!(lo > 0.25, "lowest error {lo}");
    }

    #[test]
    fn table3_contradicts_its_own_eq2_only_for_india_15m_4s() {
        // India, 15 Mbit/s, 4 s: 7.2 MB at 13.3 Mbit/s is 4.33 s > 4 s, so Eq. 2 needs x = 2; the
        // table says 1. Every other cell agrees with Eq. 1/2 from its own th_bh at th_ran = 55.
        let cells = compare_table3(StartupReading::DoublingPerRound, MSS, ran());
        let inconsistent: Vec<_> = cells
            .iter()
            .filter(|c| !c.paper_self_consistent())
            .map(|c| (c.stream.bitrate_mbps, c.stream.segment_secs, c.location))
            .collect();
        assert_eq!(inconsistent, vec![(15, 4, "India")]);
    }

    #[test]
    fn our_x_differs_from_a_self_consistent_table_cell_only_where_the_download_time_is_near_a_segment_multiple() {
        // Where the table agrees with itself but our x does not, the whole difference must come
        // from th_bh: the paper's and our download times lie on two sides of a multiple of l_seg.
        // Today that is India 15M-2s (paper 4.00 s, ours 3.78 s, l = 2) and Australia 50M-4s
        // (paper 3.83 s, ours 4.24 s, l = 4), both from the per-location RTT offset below.
        let cells = compare_table3(StartupReading::DoublingPerRound, MSS, ran());
        // (India's paper time is exactly 2·l, so its printed x = 3 rests on th_bh being a hair
        // under the printed 7.4.)
        let differing: Vec<_> = cells
            .iter()
            .filter(|c| c.paper_self_consistent() && c.ours_x != c.paper_x)
            .map(|c| (c.stream.bitrate_mbps, c.stream.segment_secs, c.location))
            .collect();
        assert_eq!(differing, vec![(15, 2, "India"), (50, 4, "Australia")]);
    }

    #[test]
    fn table3_model_errors_are_one_constant_per_location_so_the_table_used_other_rtts() {
        // Within a location the modeled cells are off by the same factor (19 of 20 cells within
        // 0.5 points of their location's median; the exception is US West 15M-2s at −4.6 %, where
        // the table's 20.0 looks like a rounding or typo of 19.1): the model's shape is exact and
        // only the RTT differs. US West and Japan match §V-A's 137 and 224 ms; Australia's cells
        // imply ~273 ms (not 302) and India's ~353 ms (not 334). th_bh ∝ 1/rtt, so the implied
        // rtt = stated rtt × (1 + error).
        let cells = compare_table3(StartupReading::DoublingPerRound, MSS, ran());
        let mut outliers = Vec::new();
        for (location, rtt) in LOCATIONS {
            let here: Vec<&CellComparison> = cells.iter().filter(|c| c.location == location).collect();
            let mut errs: Vec<f64> = here.iter().map(|c| c.th_relative_error).collect();
            errs.sort_by(f64::total_cmp);
            let median = errs[errs.len() / 2];
            let implied_ms = rtt.as_secs_f64() * 1e3 * (1.0 + median);
            println!("{location}: median error {:+.2}%, implied rtt {implied_ms:.0} ms (stated {} ms)", median * 100.0, rtt.as_millis());
            for c in here.iter().filter(|c| (c.th_relative_error - median).abs() > 0.005) {
                outliers.push((c.stream.bitrate_mbps, c.stream.segment_secs, c.location));
            }
            if location == "US West" || location == "Japan" {
                assert!(median.abs() < 0.01, "{location}: {median}");
            }
        }
        assert_eq!(outliers, vec![(15, 2, "US West")]);
    }

    #[test]
    fn one_ran_rate_band_explains_every_hold0_versus_hold_x_split() {
        let (low, high) = ran_interval_consistent_with_table3();
        println!("th_ran consistent with Table III: {low:.1} .. {high:.1} Mbit/s");
        // Constraint (3) for the 50 Mbit/s hold-x streams bounds it below (Japan 15M-4s, hold-0,
        // needs 57.6 Mbit in 4 − 2.74 s = 45.8 Mbit/s, less); US West 15M-2s (hold-1: 29.6 Mbit
        // would need 2 − 1.48 s) bounds it above.
        assert!((low - 50.0).abs() < 1e-9 && (high - 56.9).abs() < 0.1, "{low} {high}");
    }
}
