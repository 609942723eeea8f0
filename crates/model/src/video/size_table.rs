//! A user's segment size table: CSV with the columns `segment,quality,bytes`, one row per
//! segment and quality, as SABRE (UMass-LIDS/sabre) takes a manifest of segment sizes, so a study
//! can run on the sizes of a real encode.
//!
//! Format: UTF-8 text; an optional header line `segment,quality,bytes`; blank lines and lines
//! starting with `#` are ignored; `segment` counts from 0, `quality` is an index into the ladder
//! (0 = lowest), `bytes` a positive integer. Rows may come in any order. Every segment from 0 to
//! the highest one listed must have a row for every quality of the ladder.
//!
//! Errors are one line naming the key, the line and the column (see [`VideoError`]).

use super::error::VideoError;

/// Parse a size table for a ladder of `qualities` rungs; `key` names the input in errors (e.g.
/// `"video.size_table (sizes.csv)"`). Returns `sizes[segment][quality]` in bytes.
pub fn parse_size_table(
    key: &str,
    text: &str,
    qualities: usize,
) -> Result<Vec<Vec<u64>>, VideoError> {
    let mut rows: Vec<Vec<Option<u64>>> = Vec::new();
    let row_err = |line: usize, column: &'static str, reason: String| VideoError::SizeTableRow {
        key: key.to_string(),
        line,
        column,
        reason,
    };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = l.split(',').map(str::trim).collect();
        if line_is_header(&fields) {
            continue;
        }
        if fields.len() != 3 {
            return Err(row_err(
                line,
                "row",
                format!(
                    "expected 3 columns segment,quality,bytes, found {}",
                    fields.len()
                ),
            ));
        }
        let segment: u64 = fields[0].parse().map_err(|_| {
            row_err(
                line,
                "segment",
                format!("{:?} is not a segment index ≥ 0", fields[0]),
            )
        })?;
        let quality: usize = fields[1].parse().map_err(|_| {
            row_err(
                line,
                "quality",
                format!("{:?} is not a quality index ≥ 0", fields[1]),
            )
        })?;
        if quality >= qualities {
            return Err(row_err(
                line,
                "quality",
                format!(
                    "quality {quality} is not in the ladder (0..{})",
                    qualities.saturating_sub(1)
                ),
            ));
        }
        let bytes = parse_bytes(fields[2]).map_err(|reason| row_err(line, "bytes", reason))?;
        if segment > 10_000_000 {
            return Err(row_err(
                line,
                "segment",
                format!("segment {segment} is beyond 10 million segments"),
            ));
        }
        let s = segment as usize;
        if rows.len() <= s {
            rows.resize(s + 1, vec![None; qualities]);
        }
        if rows[s][quality].is_some() {
            return Err(row_err(
                line,
                "segment",
                format!("segment {segment} quality {quality} is listed twice"),
            ));
        }
        rows[s][quality] = Some(bytes);
    }
    if rows.is_empty() {
        return Err(VideoError::invalid(key, "size table has no rows"));
    }
    rows.into_iter()
        .enumerate()
        .map(|(s, row)| {
            row.into_iter()
                .enumerate()
                .map(|(q, b)| {
                    b.ok_or(VideoError::SizeTableMissing {
                        key: key.to_string(),
                        segment: s as u64,
                        quality: q,
                    })
                })
                .collect()
        })
        .collect()
}

fn line_is_header(fields: &[&str]) -> bool {
    fields
        .first()
        .is_some_and(|f| f.eq_ignore_ascii_case("segment"))
}

fn parse_bytes(field: &str) -> Result<u64, String> {
    if let Ok(v) = field.parse::<i128>() {
        return match v {
            v if v < 0 => Err(format!("negative size {v}")),
            0 => Err("size 0: a segment has at least one byte".to_string()),
            v if v > u64::MAX as i128 => Err(format!("size {v} is too large")),
            v => Ok(v as u64),
        };
    }
    Err(format!("{field:?} is not a whole number of bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_in_any_order_fill_the_table() {
        let t = "segment,quality,bytes\n1,0,30\n0,1,20\n0,0,10\n# comment\n\n1,1,40\n";
        assert_eq!(
            parse_size_table("sizes.csv", t, 2).unwrap(),
            vec![vec![10, 20], vec![30, 40]]
        );
    }

    #[test]
    fn a_missing_quality_is_named_by_segment_and_quality() {
        let e = parse_size_table("video.size_table", "0,0,10\n0,1,20\n1,0,30\n", 2).unwrap_err();
        assert_eq!(
            e.to_string(),
            "video.size_table: size table has no row for segment 1 quality 1"
        );
    }

    #[test]
    fn a_negative_size_is_named_by_line_and_column() {
        let e =
            parse_size_table("video.size_table", "segment,quality,bytes\n0,0,-5\n", 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "video.size_table line 2: bytes: negative size -5"
        );
    }

    #[test]
    fn a_quality_outside_the_ladder_is_rejected() {
        let e = parse_size_table("t", "0,6,100\n", 6).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t line 1: quality: quality 6 is not in the ladder"),
            "{e}"
        );
    }

    #[test]
    fn duplicates_and_garbage_are_rejected_with_one_line() {
        for (text, column) in [
            ("0,0,1\n0,0,2\n", "segment"),
            ("x,0,1\n", "segment"),
            ("0,0,1.5\n", "bytes"),
            ("0,0\n", "row"),
        ] {
            let e = parse_size_table("t", text, 1).unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.contains(column) && !msg.contains('\n'),
                "{text:?} -> {msg}"
            );
        }
    }
}
