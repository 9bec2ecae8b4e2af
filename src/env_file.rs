//! `-e 'AWS_*'` and `--env-file FILE` (SPEC P5): more of the caller's environment, or values
//! from a file, passed on deliberately. Both become plain `-e` entries before the policy is
//! resolved, so they follow `-e`'s rules and conflicts; `--dry-run` shows their names with the
//! values hidden (they are often secrets).
//!
//! The file's format is docker's `--env-file` (docs.docker.com, "docker run"): one `NAME=VALUE`
//! a line, taken literally (no quotes removed, no `$` expanded); a line holding only `NAME`
//! passes the caller's value when it has one; blank lines and lines starting with `#` are
//! skipped.

use std::path::Path;

use crate::error::{failure, USAGE};

/// The `-e` entries for `entries` (the command line's `-e`, patterns expanded against the
/// caller's environment `host`) after those of `files`, and the names whose values
/// `--dry-run` hides.
///
/// # Errors
/// 64 naming the file (and line) that cannot be read or holds a bad name.
pub fn expand(
    entries: &[String],
    files: &[std::path::PathBuf],
    host: &[(String, String)],
) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let (mut out, mut hidden) = (Vec::new(), Vec::new());
    for f in files {
        for (name, entry) in read(f)? {
            hidden.push(name);
            out.push(entry);
        }
    }
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
    Ok((out, hidden))
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
    let text = std::fs::read_to_string(path).map_err(|e| {
        failure(USAGE, format!("--env-file {shown}: {}", crate::error::strerror(e.raw_os_error().unwrap_or(libc::EIO))))
    })?;
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
        let (out, hidden) = expand(&["AWS_*".into(), "X=1".into()], std::slice::from_ref(&f), &host).unwrap();
        assert_eq!(out, ["TOKEN=a b=c", "PASS", "AWS_A", "AWS_B", "X=1"]);
        assert_eq!(hidden, ["TOKEN", "PASS", "AWS_A", "AWS_B"]);
        std::fs::write(&f, "BAD NAME=1\n").unwrap();
        assert!(expand(&[], &[f], &host).is_err());
    }
}
