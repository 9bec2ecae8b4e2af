//! Values that go into a policy: placeholder expansion and path checks for profile
//! entries, and the payload's clean environment (SPEC P1, P2).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use super::SANE_PATH;

/// A profile path written `?PATH` is optional: skipped when missing on the host, never an
/// error (the toolchain builtins, [`crate::profiles::toolchains`]). Returns whether it is, and PATH.
pub fn optional(raw: &str) -> (bool, &str) {
    match raw.strip_prefix('?') {
        Some(rest) => (true, rest),
        None => (false, raw),
    }
}

/// Placeholder values.
pub(super) struct Vars {
    pub home: PathBuf,
    pub target: PathBuf,
    pub target_parent: Option<PathBuf>,
}

/// Expand `{home}`, `{target}`, `{target_parent}` in a profile path and check the result:
/// absolute, no `..`, no NUL. `Ok(None)`: it uses `{target_parent}` and DIR's parent is `/`.
pub(super) fn expand(raw: &str, vars: &Vars) -> anyhow::Result<Option<PathBuf>> {
    let Some(out) = substitute(raw, vars, None)? else { return Ok(None) };
    let path = Path::new(&out);
    if !path.is_absolute() {
        anyhow::bail!("not an absolute path");
    }
    if out.contains('\0') || path.components().any(|c| c == Component::ParentDir) {
        anyhow::bail!("must not contain .. or NUL");
    }
    Ok(Some(normalise(path)))
}

/// Expand the placeholders in a profile's env value; `{target_parent}` of a DIR directly
/// below / is `/` here (text, not a mount).
pub(super) fn expand_value(raw: &str, vars: &Vars) -> anyhow::Result<String> {
    Ok(substitute(raw, vars, Some(Path::new("/")))?.unwrap_or_default())
}

/// Replace each `{name}`; `None` when `{target_parent}` has no value and no fallback.
fn substitute(raw: &str, vars: &Vars, no_parent: Option<&Path>) -> anyhow::Result<Option<String>> {
    let mut out = String::new();
    let mut rest = raw;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            anyhow::bail!("unclosed {{");
        };
        let value = match &rest[open + 1..open + close] {
            "home" => vars.home.as_path(),
            "target" => vars.target.as_path(),
            "target_parent" => match (&vars.target_parent, no_parent) {
                (Some(p), _) => p.as_path(),
                (None, Some(fallback)) => fallback,
                (None, None) => return Ok(None),
            },
            other => {
                anyhow::bail!("unknown placeholder {{{other}}} (known: {{home}} {{target}} {{target_parent}})")
            }
        };
        out.push_str(&value.to_string_lossy());
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(Some(out))
}

/// Drop `.`, repeated and trailing slashes (lexically; `..` is refused before this).
pub(super) fn normalise(path: &Path) -> PathBuf {
    path.components().filter(|c| *c != Component::CurDir).collect()
}

/// The payload's whole environment (SPEC P1): HOME, USER, LOGNAME, a fixed PATH, SHELL,
/// TERM, LANG, TZ (environ(7), tzset(3)) and LC_* when the caller has them, TMPDIR=/tmp, then the profiles' entries
/// (which may replace any of these), then `prepend`: directories put before a variable's
/// value with `:` (`PATH+` entries).
pub(super) fn environment(
    host_env: &[(String, String)],
    home: &Path,
    extra: BTreeMap<String, (String, String)>,
    prepend: BTreeMap<String, Vec<String>>,
) -> Vec<(String, String)> {
    let get = |k: &str| host_env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let mut env = vec![("HOME".to_string(), home.to_string_lossy().into_owned())];
    for key in ["USER", "LOGNAME", "PATH", "SHELL", "TERM", "LANG", "TZ"] {
        let value = if key == "PATH" { Some(SANE_PATH.to_string()) } else { get(key) };
        env.extend(value.map(|v| (key.to_string(), v)));
    }
    let mut lc: Vec<(String, String)> = host_env.iter().filter(|(k, _)| k.starts_with("LC_")).cloned().collect();
    lc.sort();
    lc.dedup_by(|a, b| a.0 == b.0);
    env.extend(lc);
    env.push(("TMPDIR".to_string(), "/tmp".to_string()));
    for (k, (v, _)) in extra {
        match env.iter_mut().find(|(n, _)| *n == k) {
            Some(slot) => slot.1 = v,
            None => env.push((k, v)),
        }
    }
    for (k, mut dirs) in prepend {
        match env.iter_mut().find(|(n, _)| *n == k) {
            Some(slot) => {
                dirs.push(std::mem::take(&mut slot.1));
                slot.1 = dirs.join(":");
            }
            None => env.push((k, dirs.join(":"))),
        }
    }
    env
}

/// An io::Error's text without the trailing ` (os error N)`: the message is for people.
pub(super) fn io_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}
