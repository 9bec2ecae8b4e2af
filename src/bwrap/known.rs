//! What the installed bwrap knows, read from its file: `--disable-userns` (SPEC X2) and
//! `--bind-fd` / `--ro-bind-fd` (SPEC P7).

use std::path::Path;

/// Whether the bwrap binary at `path` knows `--disable-userns` (bubblewrap 0.8.0): its
/// option table names it. Read from the file rather than asked with `--help`, which would
/// cost a fork and exec on every start; a bwrap that cannot be read counts as lacking it.
pub fn has_disable_userns(path: &Path) -> bool {
    known(path).0
}

/// Whether the bwrap binary at `path` knows `--bind-fd` and `--ro-bind-fd` (bubblewrap
/// 0.11, and Debian 12's 0.8.0-2+deb12u1 security update), read as [`has_disable_userns`].
pub fn has_bind_fd(path: &Path) -> bool {
    known(path).1
}

/// What snug says when bwrap cannot bind a descriptor (exit 69, SPEC P7).
pub const NO_BIND_FD: &str = "this bwrap lacks --bind-fd and --ro-bind-fd, without which snug cannot bind \
    what it checked: install Debian 12's security update bubblewrap 0.8.0-2+deb12u1 (or bubblewrap 0.11 or later)";

/// What snug says when bwrap cannot turn user namespaces off (exit 69, SPEC X2): a bwrap
/// that binds descriptors but lacks `--disable-userns` was built from neither release.
pub const NO_DISABLE_USERNS: &str = "this bwrap lacks --disable-userns, without which snug cannot keep the payload \
    from making user namespaces: install bubblewrap 0.8.0 or later";

/// Whether the bwrap binary at `path` names `--disable-userns` and `--ro-bind-fd` in its
/// option table, read once for both.
pub fn known(path: &Path) -> (bool, bool) {
    use std::io::Read;
    const NEEDLES: [&[u8]; 2] = [b"--disable-userns", b"--ro-bind-fd"];
    let mut found = [false; 2];
    let Ok(mut file) = std::fs::File::open(path) else { return (false, false) };
    // In chunks through one buffer (the file is ~70 KiB): no growing heap copy of it, whose
    // reallocations, page faults and trim on free cost about 0.1 ms of every start (SPEC B1).
    // The last bytes of a chunk (one needle's length less one) are kept in front of the next.
    let mut buf = [0u8; 16 << 10];
    let (mut kept, mut total) = (0, 0usize);
    let keep = NEEDLES.iter().map(|n| n.len()).max().unwrap_or(1) - 1;
    while total < 16 << 20 {
        let n = match file.read(&mut buf[kept..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let end = kept + n;
        // Both needles start with `--`: that inline before the slice comparisons, since a
        // memcmp call at each offset would cost more than the read.
        for at in (0..end.saturating_sub(1)).filter(|&i| buf[i] == b'-' && buf[i + 1] == b'-') {
            for (k, needle) in NEEDLES.iter().enumerate() {
                found[k] |= buf[at..end].starts_with(needle);
            }
        }
        if found.iter().all(|f| *f) {
            break;
        }
        total += n;
        kept = keep.min(end);
        buf.copy_within(end - kept..end, 0);
    }
    (found[0], found[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// B1: the chunked scan finds the option wherever it lies, also across the boundary of
    /// two reads, and nothing in a file without it. Fails without the bytes kept between
    /// chunks: the straddling copy is not found.
    #[test]
    fn x2_disable_userns_found_across_read_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, at: usize| {
            let mut bytes = vec![b'-'; 40 << 10];
            if at > 0 {
                bytes[at..at + 16].copy_from_slice(b"--disable-userns");
            }
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        };
        for at in [1, (16 << 10) - 8, (32 << 10) - 20, (40 << 10) - 16] {
            assert!(has_disable_userns(&file("with", at)), "at {at}");
        }
        assert!(!has_disable_userns(&file("without", 0)));
        assert!(!has_disable_userns(&dir.path().join("missing")));
        // P7: both options in one read, each found alone.
        let p = dir.path().join("both");
        let mut bytes = vec![b'-'; 40 << 10];
        bytes[(16 << 10) - 5..(16 << 10) + 7].copy_from_slice(b"--ro-bind-fd");
        std::fs::write(&p, &bytes).unwrap();
        assert_eq!(known(&p), (false, true));
        bytes[100..116].copy_from_slice(b"--disable-userns");
        std::fs::write(&p, &bytes).unwrap();
        assert_eq!(known(&p), (true, true));
    }
}
