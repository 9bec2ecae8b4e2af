//! The default shell's prompt (SPEC R1, O8): `snug` with no command runs `$SHELL`, and its
//! prompt says it is in a sandbox and which run it is, as `(snug NAME) ~/proj$ `.
//!
//! Set through the environment, which every POSIX shell reads its prompt from when no rc file
//! sets one (bash(1), dash(1), ksh(1) `PS1`; zsh(1) `PS1` with its own escapes). An rc file
//! made visible with `@shell` may set its own: Debian's default ~/.bashrc puts
//! `$debian_chroot` in front of it (the convention for "this shell is in a chroot"), so that is
//! set too.

use std::path::Path;

/// The environment entries that make `shell`'s prompt name the run `name`; `root`: the
/// payload runs as uid 0 (`#` instead of `$` where the shell has no escape for it). Names
/// are letters, digits, `_`, `.`, `-` (`crate::live::check_name`), so nothing in them is a
/// prompt escape; anything else is dropped all the same.
pub fn env_for(shell: &Path, name: &str, root: bool) -> Vec<(String, String)> {
    let name: String = name.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')).collect();
    let base = shell.file_name().and_then(|b| b.to_str()).unwrap_or_default();
    let sign = if root { '#' } else { '$' };
    let ps1 = match base {
        // bash(1) PROMPTING: \w the working directory with ~, \$ `#` for uid 0.
        "bash" => format!("(snug {name}) \\w\\$ "),
        // zsh(1) EXPANSION OF PROMPT SEQUENCES: %~ the directory, %# `#` when privileged.
        "zsh" => format!("(snug {name}) %~%# "),
        // dash, ash, ksh, mksh and sh expand parameters in PS1 but have no `\w`.
        "sh" | "dash" | "ash" | "ksh" | "mksh" | "ksh93" | "busybox" => format!("(snug {name}) {sign} "),
        _ => return Vec::new(),
    };
    vec![("PS1".to_string(), ps1), ("debian_chroot".to_string(), format!("snug {name}"))]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r1_prompt_names_the_run_per_shell() {
        let get = |sh: &str, root| env_for(Path::new(sh), "bash-1a2b", root);
        assert_eq!(get("/bin/bash", true)[0].1, "(snug bash-1a2b) \\w\\$ ");
        assert_eq!(get("/usr/bin/zsh", false)[0].1, "(snug bash-1a2b) %~%# ");
        assert_eq!(get("/bin/sh", false)[0].1, "(snug bash-1a2b) $ ");
        assert_eq!(get("/bin/dash", true)[0].1, "(snug bash-1a2b) # ");
        assert_eq!(get("/usr/bin/bash", false)[1], ("debian_chroot".to_string(), "snug bash-1a2b".to_string()));
        assert!(get("/usr/bin/fish", false).is_empty());
        assert_eq!(env_for(Path::new("/bin/bash"), "a$(x)", false)[0].1, "(snug ax) \\w\\$ ");
    }
}
