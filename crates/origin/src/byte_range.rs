//! The `Range` request header for one byte range (RFC 9110 §14.1.2, §14.2, §15.5.17).
//!
//! - `bytes=a-b`, `bytes=a-` and `bytes=-n` (the last n bytes) are served with 206 and
//!   `Content-Range: bytes first-last/length`; `b` past the end is cut to the end.
//! - A range that starts at or after the end (or a suffix of 0 bytes), or a `bytes=` value that
//!   does not parse, gets 416 with `Content-Range: bytes */length` ("the set of ranges requested
//!   has been rejected due to invalid ranges", §14.2).
//! - Deviations: a header naming another unit is ignored (200, as §14.2 allows); several ranges
//!   are served as the whole representation (200) rather than multipart/byteranges — a server
//!   MAY ignore Range, and players ask for one range at a time.

/// What to send for a `Range` header against a representation of `length` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeAnswer {
    /// No range (or one we ignore): 200 with the whole body.
    Whole,
    /// 206 with bytes `first..=last`.
    Partial { first: u64, last: u64 },
    /// 416.
    Unsatisfiable,
}

/// Interpret `header` (the `Range` value, if any) for a representation of `length` bytes.
pub fn answer_range(header: Option<&str>, length: u64) -> RangeAnswer {
    let Some(h) = header else { return RangeAnswer::Whole };
    let h = h.trim();
    let Some((unit, spec)) = h.split_once('=') else { return RangeAnswer::Unsatisfiable };
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return RangeAnswer::Whole;
    }
    if spec.contains(',') {
        return RangeAnswer::Whole;
    }
    let Some((a, b)) = spec.trim().split_once('-') else { return RangeAnswer::Unsatisfiable };
    let (a, b) = (a.trim(), b.trim());
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    match (a.is_empty(), b.is_empty()) {
        (true, false) if digits(b) => {
            let Ok(n) = b.parse::<u64>() else { return RangeAnswer::Unsatisfiable };
            if n == 0 || length == 0 {
                return RangeAnswer::Unsatisfiable;
            }
            RangeAnswer::Partial { first: length.saturating_sub(n), last: length - 1 }
        }
        (false, _) if digits(a) && (b.is_empty() || digits(b)) => {
            let Ok(first) = a.parse::<u64>() else { return RangeAnswer::Unsatisfiable };
            let last = if b.is_empty() { u64::MAX } else { b.parse::<u64>().unwrap_or(u64::MAX) };
            if last < first || first >= length {
                return RangeAnswer::Unsatisfiable;
            }
            RangeAnswer::Partial { first, last: last.min(length - 1) }
        }
        _ => RangeAnswer::Unsatisfiable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_single_range_forms_select_the_right_bytes() {
        assert_eq!(answer_range(Some("bytes=0-99"), 1000), RangeAnswer::Partial { first: 0, last: 99 });
        assert_eq!(answer_range(Some("bytes=900-"), 1000), RangeAnswer::Partial { first: 900, last: 999 });
        assert_eq!(answer_range(Some("bytes=-100"), 1000), RangeAnswer::Partial { first: 900, last: 999 });
        assert_eq!(answer_range(Some("bytes=-5000"), 1000), RangeAnswer::Partial { first: 0, last: 999 });
        assert_eq!(answer_range(Some("bytes=990-2000"), 1000), RangeAnswer::Partial { first: 990, last: 999 });
    }

    #[test]
    fn ranges_past_the_end_reversed_or_malformed_are_unsatisfiable() {
        for h in ["bytes=1000-", "bytes=5-2", "bytes=-0", "bytes=abc", "bytes=1-x", "bytes=--5", "bytes", "bytes=-", "bytes=+1-2"] {
            assert_eq!(answer_range(Some(h), 1000), RangeAnswer::Unsatisfiable, "{h}");
        }
        assert_eq!(answer_range(Some("bytes=0-"), 0), RangeAnswer::Unsatisfiable);
    }

    #[test]
    fn other_units_and_multiple_ranges_get_the_whole_body() {
        assert_eq!(answer_range(Some("items=0-5"), 1000), RangeAnswer::Whole);
        assert_eq!(answer_range(Some("bytes=0-1,5-6"), 1000), RangeAnswer::Whole);
        assert_eq!(answer_range(None, 1000), RangeAnswer::Whole);
    }
}
