//! `-e 'AWS_*'` and `--env-file FILE` (SPEC P5): more of the caller's environment, or values
//! from a file, passed on deliberately. Both become plain `-e` entries before the policy is
//! resolved, so they follow `-e`'s rules and conflicts; `--dry-run` shows their names with the
//! values hidden (they are often secrets).
//!
//! The file's format is docker's `--env-file` (docs.docker.com, "docker run"): one `NAME=VALUE`
//! a line, taken literally (no quotes removed, no `$` expanded); a line holding only `NAME`
//! passes the caller's value when it has one; blank lines and lines starting with `#` are
//! skipped.

use std::path::{Path, PathBuf};

use crate::error::{failure, USAGE};

/// The most snug reads of one env file: 1 MiB, the bound on a profile file (SPEC P4), so
/// that `/dev/zero` or a FIFO that never ends costs neither memory nor time.
pub const MAX_BYTES: u64 = 1 << 20;

/// The (name, `-e` entry) pairs of `files`, in order.
///
/// Called before [`crate::launch::begin`] blocks INT, TERM and HUP for its signalfd: a FIFO,
/// a pipe or a terminal (`<(vault read …)`, `/dev/stdin`) may keep this read waiting, and
/// with those signals still at their default action one ends snug as it would end `cat`.
/// Nothing has started yet, so there is nothing to relay to or tear down, and dying of the
/// signal is R3's end (a `--report` keeps its first record, as after a kill, O10); polling
/// the signalfd instead would need that end built a second time.
///
/// # Errors
/// 64 naming the file (and line) that cannot be read, is larger than [`MAX_BYTES`] or holds
/// a bad name.
pub fn read_all(files: &[PathBuf]) -> anyhow::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for f in files {
        out.extend(read(f)?);
    }
    Ok(out)
}

/// The `-e` entries for `entries` (the command line's `-e`, patterns expanded against the
/// caller's environment `host`) after `from_files` (of [`read_all`]), and the names whose
/// values `--dry-run` hides.
pub fn expand(
    entries: &[String],
    from_files: Vec<(String, String)>,
    host: &[(String, String)],
) -> (Vec<String>, Vec<String>) {
    let (mut hidden, mut out): (Vec<String>, Vec<String>) = from_files.into_iter().unzip();
    for e in entries {
        if e.contains('=') || !e.contains(['*', '?']) {
            out.push(e.clone());
            continue;
        }
        let mut names: Vec<&str> = host.iter().map(|(k, _)| k.as_str()).filter(|k| glob(e, k)).collect();
        names.sort_unstable();
        for n in names {
            hidden.push(n.to_string());
            out.push(n.to_string());
        }
    }
    (out, hidden)
}

/// Whether `name` matches `pattern`, where `*` is any run of characters and `?` one.
pub fn glob(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// The (name, `-e` entry) pairs of env file `path`.
fn read(path: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let shown = crate::quote::quote(&path.to_string_lossy()).into_owned();
    let text = bounded(path).map_err(|why| failure(USAGE, format!("--env-file {shown}: {why}")))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name = line.split_once('=').map_or(line, |(k, _)| k);
        if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            let why = format!("--env-file {shown}: line {}: not NAME=VALUE or NAME", i + 1);
            return Err(failure(USAGE, why));
        }
        out.push((name.to_string(), line.to_string()));
    }
    Ok(out)
}

/// The text of `path`, at most [`MAX_BYTES`]; or why not, for the error line. Any kind of
/// file: a FIFO or a pipe is waited for (no `O_NONBLOCK`), the bound is what keeps it finite.
fn bounded(path: &Path) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let os = |e: std::io::Error| crate::error::strerror(e.raw_os_error().unwrap_or(libc::EIO));
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOCTTY).open(path).map_err(os)?;
    let too_big = || format!("larger than {} MiB, the most snug reads of an env file", MAX_BYTES >> 20);
    // A regular file says its size: one too large is refused before a byte is read.
    let meta = file.metadata().map_err(os)?;
    if meta.is_file() && meta.len() > MAX_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes).map_err(os)?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|_| "not valid UTF-8".to_string())
}

/// `policy` as `--dry-run` shows it: the values of `hidden` variables replaced by `(hidden)`
/// (the plan's env list and its by-hand command line are both made from it).
pub fn hidden_in(policy: &crate::policy::Policy, hidden: &[String]) -> crate::policy::Policy {
    let mut shown = policy.clone();
    for (k, v) in shown.env.iter_mut() {
        if hidden.contains(k) {
            *v = "(hidden)".to_string();
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p5_glob_and_env_file() {
        assert!(glob("AWS_*", "AWS_REGION") && glob("A?S_*", "AWS_") && glob("*", "X"));
        assert!(!glob("AWS_*", "XAWS_A") && !glob("AWS_?", "AWS_AB"));
        let host = vec![
            ("AWS_B".to_string(), "2".to_string()),
            ("AWS_A".to_string(), "1".to_string()),
            ("HOME".into(), "/h".into()),
        ];
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("e");
        std::fs::write(&f, "# c\n\nTOKEN=a b=c\nPASS\n").unwrap();
        let from_files = read_all(std::slice::from_ref(&f)).unwrap();
        let (out, hidden) = expand(&["AWS_*".into(), "X=1".into()], from_files, &host);
        assert_eq!(out, ["TOKEN=a b=c", "PASS", "AWS_A", "AWS_B", "X=1"]);
        assert_eq!(hidden, ["TOKEN", "PASS", "AWS_A", "AWS_B"]);
        std::fs::write(&f, "BAD NAME=1\n").unwrap();
        assert!(read_all(std::slice::from_ref(&f)).is_err());
    }

    /// P5, R4: the read stops one byte past [`MAX_BYTES`], whatever the file is; a regular
    /// file that large is refused by its size.
    #[test]
    fn p5_env_file_read_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("e");
        std::fs::write(&f, vec![b'#'; MAX_BYTES as usize]).unwrap();
        assert_eq!(bounded(&f).map(|t| t.len()), Ok(MAX_BYTES as usize));
        std::fs::write(&f, vec![b'#'; MAX_BYTES as usize + 1]).unwrap();
        assert!(bounded(&f).is_err_and(|why| why.starts_with("larger than 1 MiB")));
        let zero = bounded(Path::new("/dev/zero"));
        assert!(zero.is_err_and(|why| why.starts_with("larger than 1 MiB")));
        std::fs::write(&f, b"A=\xff\n").unwrap();
        assert_eq!(bounded(&f), Err("not valid UTF-8".to_string()));
    }
}
