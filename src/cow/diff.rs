//! `snug diff` (SPEC W3): the kept runs, or every change of one, as a list (`--stat`) or
//! as unified diffs (diff(1) for text files; binary files, symlinks, types and modes as
//! one line each). Nothing is left out without a word.

use super::changes::{self, Change, Kind, Node};
use super::store::{self, Kept};
use crate::error::{failure, USAGE};
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

/// `snug diff`: one line per kept run (name, DIR, start, counts).
pub fn list() -> String {
    let kept = store::list();
    if kept.is_empty() {
        return "no kept changes\n".to_string();
    }
    let mut out = String::new();
    for k in kept {
        let Some(meta) = &k.meta else {
            let _ = writeln!(out, "{}\t(no record: snug discard {})", k.name, crate::quote::quote(&k.name));
            continue;
        };
        let read = super::freeze::before_read(&k, meta).and_then(|()| changes::collect(&k.upper(), &meta.dir));
        let counts = match read {
            Ok(c) => {
                let (a, m, d) = changes::counts(&c);
                format!("{a} added, {m} modified, {d} deleted")
            }
            Err(e) => crate::error::one_line(&e),
        };
        let state = match (store::running(&k), meta.dir.is_dir()) {
            (true, _) => " (running)",
            (false, true) => "",
            (false, false) => " (DIR is gone)",
        };
        let _ = writeln!(out, "{}\t{}{state}\t{}\t{counts}", k.name, meta.dir.display(), meta.started);
    }
    out
}

/// `snug diff --names`: the kept runs' names, for completion.
pub fn names() -> String {
    store::list().into_iter().map(|k| k.name + "\n").collect()
}

/// A kept run, its DIR and its changes, those under `paths` only when any are given.
///
/// # Errors
/// 64 for an unknown name or a PATH outside DIR; the walk's errors.
pub fn load(name: &str, paths: &[PathBuf]) -> anyhow::Result<(Kept, PathBuf, Vec<Change>)> {
    let kept = store::find(name)?;
    let Some(meta) = kept.meta.clone() else {
        return Err(failure(USAGE, format!("{name}: its record is missing; snug discard {name}")));
    };
    let wanted: Vec<PathBuf> = paths.iter().map(|p| relative(p, &meta.dir)).collect::<anyhow::Result<_>>()?;
    // A run killed before its end left its renames as the overlay made them.
    super::freeze::before_read(&kept, &meta)?;
    let mut all = changes::collect(&kept.upper(), &meta.dir)?;
    if !wanted.is_empty() {
        // A directory the run made above a PATH, where DIR has nothing, comes with it: `apply
        // NAME new/deep/f` needs `new` and `new/deep` first. One that replaces something of
        // DIR's (a symlink) does not: that needs its own PATH.
        let made = |c: &Change| c.kind == Kind::Added && c.new == Some(Node::Dir);
        all.retain(|c| wanted.iter().any(|w| c.path.starts_with(w) || (w.starts_with(&c.path) && made(c))));
        // A PATH neither changed nor in DIR is most likely mistyped: say so, not nothing.
        let unknown = wanted.iter().zip(paths).find(|(w, _)| {
            !all.iter().any(|c| c.path.starts_with(w)) && std::fs::symlink_metadata(meta.dir.join(w)).is_err()
        });
        if let Some((_, p)) = unknown {
            return Err(failure(
                USAGE,
                format!("{}: neither in {} nor among {name}'s changes", p.display(), meta.dir.display()),
            ));
        }
    }
    Ok((kept, meta.dir, all))
}

/// A PATH argument relative to DIR: relative as given, or absolute below DIR.
fn relative(p: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    let rel = if p.is_absolute() { p.strip_prefix(dir).map(Path::to_path_buf).ok() } else { Some(p.to_path_buf()) };
    let rel = rel.filter(|r| r.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)));
    let Some(rel) = rel else {
        return Err(failure(USAGE, format!("{}: not a path inside {}", p.display(), dir.display())));
    };
    Ok(rel.components().filter(|c| matches!(c, Component::Normal(_))).collect())
}

/// A name the payload chose, as a reviewer's terminal may show it (SPEC W3, O11): as it is
/// when it holds no control character; else, and when it is not UTF-8, in ANSI-C quotes with
/// each byte outside printable ASCII as `\xHH` ([`crate::quote::ansi_c`]), so an ESC or a
/// newline in it can neither drive the terminal nor fake or hide a line, and no two names
/// are shown alike.
fn shown(p: &std::ffi::OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    match p.to_str() {
        Some(text) if !text.chars().any(char::is_control) => text.to_string(),
        // In ANSI-C quotes, a name with a newline is never shown as one that holds the four
        // characters `\x0a`, and pasted back (`snug apply NAME $'p\x0aq'`) it names that file.
        _ => crate::quote::ansi_c(p.as_bytes()),
    }
}

/// One `--stat` line: letter, path (a `/` after a directory), what it became.
pub fn stat_line(c: &Change) -> String {
    let mut line = format!("{} {}", c.kind.letter(), shown(c.path.as_os_str()));
    let node = c.new.as_ref().or(c.old.as_ref());
    if node == Some(&Node::Dir) {
        line.push('/');
    }
    if let Some(Node::Symlink(t)) = &c.new {
        let _ = write!(line, " -> {}", shown(t.as_os_str()));
    }
    match c.kind {
        Kind::Type => {
            let (o, n) = (c.old.as_ref().map_or("?", Node::word), c.new.as_ref().map_or("?", Node::word));
            let _ = write!(line, " ({o} -> {n})");
        }
        Kind::Mode | Kind::Modified if c.old_mode != c.mode && c.old.is_some() => {
            let _ = write!(line, " (mode {:o} -> {:o})", c.old_mode, c.mode);
        }
        _ => {}
    }
    if let Some(Node::Special(w)) = &c.new {
        let _ = write!(line, " ({w})");
    }
    if c.mode & 0o6000 != 0 {
        line.push_str(" (set-id)");
    }
    if snug_core::protect::protected(&c.path, matches!(c.kind, Kind::Deleted | Kind::Type)) {
        line.push_str(" [protected]");
    }
    line
}

/// `snug diff NAME [--stat] [PATH...]`.
///
/// # Errors
/// As [`load`].
pub fn show(name: &str, stat: bool, paths: &[PathBuf]) -> anyhow::Result<String> {
    let (_, dir, all) = load(name, paths)?;
    let mut out = String::new();
    for c in &all {
        if stat {
            out.push_str(&stat_line(c));
            out.push('\n');
            continue;
        }
        unified(c, &dir, &mut out);
    }
    if stat {
        let (a, m, d) = changes::counts(&all);
        let _ = writeln!(out, "{} changes: {a} added, {m} modified, {d} deleted", all.len());
    }
    Ok(out)
}

/// Largest file `snug diff` shows as text, in bytes: a bigger one is named with its size
/// instead, so a payload's huge (or sparse) file costs neither memory nor minutes (SPEC W3).
pub const MAX_TEXT: u64 = 4 << 20;

/// Bytes read from a file's start to tell text from binary (a NUL among them: binary, as
/// git's and diff(1)'s own guess).
const SNIFF: usize = 8 << 10;

/// How a changed file is shown.
#[derive(Debug, PartialEq, Eq)]
enum Shown {
    /// Through diff(1).
    Text,
    /// One line: binary, or unreadable.
    Binary,
    /// One line with its size in bytes (above [`MAX_TEXT`]).
    TooLarge(u64),
}

/// How the file at `p` is shown, from its size and its first [`SNIFF`] bytes only.
fn shown_as(p: &Path) -> Shown {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(p) else { return Shown::Binary };
    let size = file.metadata().map_or(0, |m| m.len());
    if size > MAX_TEXT {
        return Shown::TooLarge(size);
    }
    let mut head = Vec::with_capacity(SNIFF);
    match file.take(SNIFF as u64).read_to_end(&mut head) {
        Ok(_) if !head.contains(&0) => Shown::Text,
        _ => Shown::Binary,
    }
}

/// The change as `diff -u` would show it, with git's header lines for the rest.
fn unified(c: &Change, dir: &Path, out: &mut String) {
    let p = shown(c.path.as_os_str());
    let _ = writeln!(out, "diff --snug a/{p} b/{p}");
    let old_file = (c.old == Some(Node::File)).then(|| dir.join(&c.path));
    let new_file = (c.new == Some(Node::File)).then(|| c.source.clone()).flatten();
    match c.kind {
        Kind::Added => {
            let _ = writeln!(out, "new {} mode {:o}", c.new.as_ref().map_or("?", Node::word), c.mode);
        }
        Kind::Deleted => {
            let _ = writeln!(out, "deleted {}", c.old.as_ref().map_or("?", Node::word));
        }
        Kind::Type => {
            let (o, n) = (c.old.as_ref().map_or("?", Node::word), c.new.as_ref().map_or("?", Node::word));
            let _ = writeln!(out, "type {o} -> {n}");
        }
        Kind::Mode | Kind::Modified if c.old_mode != c.mode => {
            let _ = writeln!(out, "old mode {:o}\nnew mode {:o}", c.old_mode, c.mode);
        }
        _ => {}
    }
    if let Some(Node::Symlink(t)) = &c.old {
        if !matches!(c.kind, Kind::Mode) {
            let _ = writeln!(out, "-symlink -> {}", shown(t.as_os_str()));
        }
    }
    if let Some(Node::Symlink(t)) = &c.new {
        let _ = writeln!(out, "+symlink -> {}", shown(t.as_os_str()));
    }
    if let Some(Node::Special(w)) = &c.new {
        let _ = writeln!(out, "+{w} (snug apply does not write it)");
    }
    if c.kind == Kind::Mode || (old_file.is_none() && new_file.is_none()) {
        return;
    }
    let none = PathBuf::from("/dev/null");
    let (a, b) = (old_file.clone().unwrap_or(none.clone()), new_file.clone().unwrap_or(none));
    let how: Vec<Shown> = [&old_file, &new_file].iter().filter_map(|f| f.as_ref().map(|f| shown_as(f))).collect();
    if let Some(size) = how.iter().find_map(|h| if let Shown::TooLarge(n) = h { Some(*n) } else { None }) {
        let most = MAX_TEXT >> 20;
        let _ = writeln!(out, "Files a/{p} and b/{p} differ ({size} bytes: too large to show, at most {most} MiB)");
        return;
    }
    if how.contains(&Shown::Binary) {
        let _ = writeln!(out, "Binary files a/{p} and b/{p} differ");
        return;
    }
    let (la, lb) = (format!("a/{p}"), format!("b/{p}"));
    let run = std::process::Command::new("diff")
        .args(["-u", "--label", &la, "--label", &lb])
        .arg(&a)
        .arg(&b)
        .stdin(std::process::Stdio::null())
        .output();
    match run {
        Ok(o) if o.status.code().is_some_and(|c| c <= 1) => out.push_str(&visible(&String::from_utf8_lossy(&o.stdout))),
        Ok(o) => {
            let _ = writeln!(out, "(diff failed: {})", String::from_utf8_lossy(&o.stderr).trim());
        }
        Err(e) => {
            let _ = writeln!(out, "(diff(1) could not run: {e})");
        }
    }
}

/// A file's text as a reviewer's terminal may show it (SPEC W3, O11): a control character
/// other than tab and newline (ESC starting a clipboard write or a title, a carriage return
/// that hides a line, C1's CSI) in `cat -v`'s caret notation (`^[`, `^M`, `^?`) or as
/// `\u{9b}`, so the payload's files can neither drive the terminal nor hide what they hold.
fn visible(text: &str) -> String {
    if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{7f}' => out.push_str("^?"),
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// W3, O11: control characters of a file's text reach the terminal only as text. Positive
    /// control: the build before passed diff(1)'s output on as it came (a tester's OSC 52
    /// clipboard write reached the terminal).
    #[test]
    fn w3_diff_text_shows_control_characters_as_text() {
        assert_eq!(super::visible("+a\tb\n"), "+a\tb\n");
        assert_eq!(super::visible("+\x1b]52;c;ZXZpbA==\x07x\r\n"), "+^[]52;c;ZXZpbA==^Gx^M\n");
        assert_eq!(super::visible("+\u{9b}2J\u{7f}\n"), "+\\u{9b}2J^?\n");
    }
}
