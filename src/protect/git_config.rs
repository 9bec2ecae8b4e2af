//! What the protected paths need from a git config file's text (git-config(1), "CONFIGURATION
//! FILE"): the settings that send git to other files it runs code from or reads config from.
//! A reading, not a validation: a line git would reject is skipped, never an error.

/// The settings of one git config file that name other protected paths.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Settings {
    /// `core.hooksPath`, the last one (git-config(1): the last value wins).
    pub hooks_path: Option<String>,
    /// `include.path` and `includeIf.<condition>.path`: more config, which git reads in place.
    pub includes: Vec<String>,
    /// `extensions.worktreeConfig`: git then reads `config.worktree` beside `config`.
    pub worktree_config: bool,
    /// The names of `[submodule "NAME"]` sections (`.gitmodules` and `.git/config`), whose
    /// git directories are `modules/NAME` (gitsubmodules(7)); only names git itself accepts
    /// as a path below `modules` (no `..`, not absolute).
    pub submodules: Vec<String>,
}

/// The [`Settings`] in `text`.
pub(super) fn read(text: &str) -> Settings {
    let mut out = Settings::default();
    let mut section = String::new();
    for raw in text.lines() {
        let mut line = raw.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let Some(((name, sub), after)) = header(rest) else {
                section.clear();
                continue;
            };
            section = name;
            if section == "submodule" {
                if let Some(name) = sub.as_deref().filter(|n| valid_name(n)) {
                    if !out.submodules.iter().any(|s| s == name) {
                        out.submodules.push(name.to_string());
                    }
                }
            }
            // git takes a key on the same line as its section header.
            line = after.trim();
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(value_of(v))),
            None => (line.split([' ', '\t', '#', ';']).next().unwrap_or_default(), None),
        };
        if key.is_empty() || key.starts_with(['#', ';']) {
            continue;
        }
        let key = key.to_ascii_lowercase();
        match (section.as_str(), key.as_str(), value) {
            ("core", "hookspath", Some(v)) => out.hooks_path = (!v.is_empty()).then_some(v),
            ("include" | "includeif", "path", Some(v)) if !v.is_empty() => out.includes.push(v),
            ("extensions", "worktreeconfig", v) => out.worktree_config = v.is_none_or(|v| truthy(&v)),
            _ => {}
        }
    }
    out
}

/// A section header after its `[`: (lower-case section name, subsection), and what follows
/// the `]`. `[name "sub"]` keeps the subsection's case and backslash escapes; the older
/// `[name.sub]` form lower-cases it, as git does.
type Header<'a> = ((String, Option<String>), &'a str);

fn header(rest: &str) -> Option<Header<'_>> {
    let name_end = rest.find([']', ' ', '\t', '"'])?;
    let name = rest[..name_end].to_ascii_lowercase();
    let tail = rest[name_end..].trim_start();
    if let Some(after) = tail.strip_prefix(']') {
        return Some(match name.split_once('.') {
            Some((n, s)) => ((n.to_string(), Some(s.to_string())), after),
            None => ((name, None), after),
        });
    }
    let quoted = tail.strip_prefix('"')?;
    let mut sub = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => sub.push(chars.next()?.1),
            '"' => {
                let after = quoted[i + 1..].trim_start().strip_prefix(']')?;
                return Some(((name, Some(sub)), after));
            }
            _ => sub.push(c),
        }
    }
    None
}

/// A value: up to a comment outside quotes, trimmed, its quotes and escapes resolved.
fn value_of(v: &str) -> String {
    let mut out = String::new();
    let (mut quoted, mut chars) = (false, v.trim().chars());
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(e) => out.push(e),
                None => break,
            },
            '#' | ';' if !quoted => break,
            _ => out.push(c),
        }
    }
    out.trim_end().to_string()
}

/// git-config(1)'s boolean true.
fn truthy(v: &str) -> bool {
    matches!(v.to_ascii_lowercase().as_str(), "true" | "yes" | "on" | "1")
}

/// A submodule name git would use as a directory below `modules` (its
/// `check_submodule_name`: not empty, not absolute, no `..` component).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && name.split(['/', '\\']).all(|c| !c.is_empty() && c != "." && c != "..")
}
