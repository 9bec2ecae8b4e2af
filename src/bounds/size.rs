//! Memory sizes as `--memory` and a profile's `memory` take them (SPEC K5).

use crate::error::{failure, USAGE};

/// Parse a memory size: bytes, or a number with `K`, `M`, `G`, `T` (powers of 1024; an
/// optional `iB`/`B` after it, any case).
///
/// # Errors
/// A one-line reason.
pub fn parse_size(text: &str) -> anyhow::Result<u64> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower.strip_suffix("ib").or_else(|| lower.strip_suffix('b')).unwrap_or(&lower);
    let (num, shift) = match body.chars().last() {
        Some('k') => (&body[..body.len() - 1], 10),
        Some('m') => (&body[..body.len() - 1], 20),
        Some('g') => (&body[..body.len() - 1], 30),
        Some('t') => (&body[..body.len() - 1], 40),
        _ => (body, 0),
    };
    let n: u64 = num.trim().parse().map_err(|_| anyhow::anyhow!("{text:?} is not a size (examples: 512M, 2G)"))?;
    let bytes = n.checked_mul(1u64 << shift).ok_or_else(|| anyhow::anyhow!("{text:?} is too large"))?;
    if bytes < 1 << 20 {
        anyhow::bail!("{text:?} is below 1M, too little to start anything");
    }
    Ok(bytes)
}

/// [`parse_size`] for the command line: a usage error (64).
///
/// # Errors
/// As [`parse_size`].
pub fn parse_size_arg(text: &str) -> anyhow::Result<u64> {
    parse_size(text).map_err(|e| failure(USAGE, format!("--memory: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k5_sizes() {
        assert_eq!(parse_size("64M").ok(), Some(64 << 20));
        assert_eq!(parse_size("64MiB").ok(), Some(64 << 20));
        assert_eq!(parse_size("2g").ok(), Some(2 << 30));
        assert_eq!(parse_size("1048576").ok(), Some(1 << 20));
        assert!(parse_size("12").is_err());
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
