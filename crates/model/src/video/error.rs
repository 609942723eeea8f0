//! Typed errors of the video model: every variant prints one line that names the offending key
//! (scenario key, CSV line and column, or parameter), so a user fixes their input without reading
//! code. Nothing in the video model panics on user input; it returns one of these.

/// A bad input to the video model.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum VideoError {
    /// A bitrate that is zero, negative or not a number.
    #[error("{key}: bitrate must be a positive number of kbit/s, got {value}")]
    NonPositiveBitrate { key: String, value: String },
    /// Ladder rungs must grow strictly so that "higher quality" means "more bits".
    #[error("{key}: ladder must be strictly increasing ({value} kbit/s after {previous} kbit/s)")]
    LadderNotIncreasing {
        key: String,
        value: f64,
        previous: f64,
    },
    /// A ladder with no rungs.
    #[error("{key}: the representation ladder is empty")]
    EmptyLadder { key: String },
    /// A size table has no row for a (segment, quality) pair the ladder and segment count need.
    #[error("{key}: size table has no row for segment {segment} quality {quality}")]
    SizeTableMissing {
        key: String,
        segment: u64,
        quality: usize,
    },
    /// A size table row that cannot be used (line number, column, reason).
    #[error("{key} line {line}: {column}: {reason}")]
    SizeTableRow {
        key: String,
        line: usize,
        column: &'static str,
        reason: String,
    },
    /// The ABR name is not registered.
    #[error("{key}: unknown ABR rule {name:?} (known: {known})")]
    UnknownAbr {
        key: String,
        name: String,
        known: String,
    },
    /// A parameter the ABR rule does not have.
    #[error("{key}: ABR rule {rule} has no parameter {param:?} (known: {known})")]
    UnknownAbrParam {
        key: String,
        rule: String,
        param: String,
        known: String,
    },
    /// A client buffer that cannot hold one whole segment (the player could never start).
    #[error("{key}: buffer of {buffer_s} s is smaller than one segment ({segment_s} s)")]
    BufferTooSmall {
        key: String,
        buffer_s: f64,
        segment_s: f64,
    },
    /// Any other value out of its documented range.
    #[error("{key}: {reason}")]
    InvalidValue { key: String, reason: String },
}

impl VideoError {
    /// Shorthand for [`VideoError::InvalidValue`].
    pub fn invalid(key: impl Into<String>, reason: impl Into<String>) -> VideoError {
        VideoError::InvalidValue {
            key: key.into(),
            reason: reason.into(),
        }
    }
}
