//! The report's context (SPEC O5): what was run, where, when (wall clock), under which
//! bounds, what it used; and the one-line reason in plain words.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::bounds::usage::Usage;

/// What the report says besides how the run ended.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// snug's own command line, byte for byte (O10).
    pub argv: Vec<std::ffi::OsString>,
    /// The payload's argv.
    pub command: Vec<std::ffi::OsString>,
    /// DIR, canonical, once resolved.
    pub dir: Option<PathBuf>,
    /// `(max_procs, memory bytes)` in force, once known.
    pub bounds: Option<(u64, Option<u64>)>,
    /// What the sandbox used, read at the end.
    pub usage: Option<Usage>,
}

/// `time` as RFC 3339 in UTC with milliseconds (`2026-12-02T00:04:00.123Z`), from the days
/// since the epoch by the civil-from-days algorithm (H. Hinnant, "chrono-Compatible
/// Low-Level Date Algorithms"), proleptic Gregorian.
pub fn rfc3339(time: SystemTime) -> String {
    let d = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// O5: known instants, leap days and century years included (checked against `date -u
    /// -d @N`).
    #[test]
    fn o5_rfc3339_known_instants() {
        let at = |s: u64, ms: u64| rfc3339(UNIX_EPOCH + Duration::from_millis(s * 1000 + ms));
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_709_251_199, 999), "2024-02-29T23:59:59.999Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
        assert_eq!(at(1_796_083_200 + 3_723, 0), "2026-12-01T01:02:03.000Z");
    }
}
