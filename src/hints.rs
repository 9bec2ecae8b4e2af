//! Hints where people stumble (SPEC O7): a command typed without `--` (`snug make test`,
//! as one types `sudo make test`), and a command the sandbox hides because it lives under
//! `$HOME` (`cargo: command not found`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::Command;

use crate::quote::quote;

mod dropped;
pub use dropped::dropped_env;

/// For a command line without `--` whose first operand is a command on the caller's PATH
/// rather than a directory, the one-line error: `missing -- before the command; did you
/// mean: snug -- make test`. `cli` tells which options take a value, so `-p NAME` stays
/// before the `--`. `None` when the line has `--`, no such operand, or a subcommand.
pub fn missing_dashes(cli: &Command, args: &[OsString]) -> Option<String> {
    let words: Vec<&str> = args.iter().skip(1).map(|a| a.to_str()).collect::<Option<_>>()?;
    if words.contains(&"--") {
        return None;
    }
    let first = operand_index(cli, &words)?;
    if cli.get_subcommands().any(|s| s.get_name() == words[first]) {
        return None;
    }
    // An existing directory is DIR: the command starts at the next word (`snug ~/p make`).
    let (dir, cmd_at) = if Path::new(words[first]).is_dir() { (Some(first), first + 1) } else { (None, first) };
    let cmd = words.get(cmd_at)?;
    on_path(cmd, &caller_path())?;
    let mut line: Vec<&str> = vec!["snug"];
    line.extend(&words[..first]);
    line.extend(dir.map(|d| words[d]));
    line.push("--");
    line.extend(&words[cmd_at..]);
    let line: Vec<String> = line.iter().map(|w| quote(w).into_owned()).collect();
    Some(format!("missing -- before the command; did you mean: {}", line.join(" ")))
}

/// Index of the first word that is not one of snug's options or an option's value.
fn operand_index(cli: &Command, words: &[&str]) -> Option<usize> {
    let takes_value = |a: &clap::Arg| a.get_action().takes_values() && !a.is_positional();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if let Some(long) = w.strip_prefix("--") {
            let wants = cli.get_arguments().any(|a| a.get_long() == Some(long) && takes_value(a));
            i += if wants { 2 } else { 1 };
        } else if let Some(shorts) = w.strip_prefix('-').filter(|s| !s.is_empty()) {
            // A cluster like `-nv` or `-pNAME`: a value-taking short ends it, its value is the
            // rest or the next word.
            let mut next = 1;
            for (at, c) in shorts.char_indices() {
                if cli.get_arguments().any(|a| a.get_short() == Some(c) && takes_value(a)) {
                    next = if at + c.len_utf8() == shorts.len() { 2 } else { 1 };
                    break;
                }
            }
            i += next;
        } else {
            return Some(i);
        }
    }
    None
}

/// The caller's PATH, or the execvp(3) default when unset.
pub(crate) fn caller_path() -> OsString {
    std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into())
}

/// Where execvp(3) would find `name` on `path`: the first executable regular file.
pub(crate) fn on_path(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if name.is_empty() || name.contains('/') {
        return None;
    }
    std::env::split_paths(path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// After a DIR that cannot be used: when it names a program (an executable file, or a bare
/// word on the caller's PATH), how to run it as the command instead (`; to run it as the
/// command: snug -- /usr/bin/make`). Empty otherwise.
pub fn dir_hint(dir: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let text = dir.to_string_lossy();
    let program = dir.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        || on_path(&text, &caller_path()).is_some();
    if program {
        format!("; to run it as the command: snug -- {}", quote(&text))
    } else {
        String::new()
    }
}

/// A DIR that is a git worktree (`.git` a file, `gitdir: …`, gitrepository-layout(5))
/// whose repository, the common directory, the sandbox does not show: git inside says "not a
/// git repository". The hint names the `--ro` that shows it. `visible` tells whether a
/// host path is shown in the sandbox.
pub fn git_worktree(target: &Path, visible: &dyn Fn(&Path) -> bool) -> Option<String> {
    let text = std::fs::read_to_string(target.join(".git")).ok()?;
    let gitdir = Path::new(text.strip_prefix("gitdir:")?.trim());
    let gitdir = if gitdir.is_absolute() { gitdir.to_path_buf() } else { target.join(gitdir) };
    let common = match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(c) if Path::new(c.trim()).is_absolute() => PathBuf::from(c.trim()),
        Ok(c) => gitdir.join(c.trim()),
        Err(_) => gitdir,
    };
    let common = std::fs::canonicalize(&common).ok()?;
    if common.starts_with(target) || visible(&common) {
        return None;
    }
    let shown = quote(&common.to_string_lossy()).into_owned();
    Some(format!(
        "DIR is a git worktree whose repository {shown} is outside it: git in the sandbox will say \
         \"not a git repository\"; add --ro {shown} to show it"
    ))
}

/// The 127 message after `cmd: ` (SPEC O7): `command not found`, and when the caller's
/// PATH has it under `$HOME` (hidden by `@home`), where it is and the profile that shows it.
pub fn not_found(cmd: &str) -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    not_found_for(cmd, &caller_path(), &home)
}

/// [`not_found`] for a caller with PATH `path` and HOME `home`.
pub fn not_found_for(cmd: &str, path: &std::ffi::OsStr, home: &str) -> String {
    let base = "command not found".to_string();
    if cmd.contains('/') {
        return hidden_link(cmd, home).unwrap_or(base);
    }
    let Some(found) = on_path(cmd, path) else { return base };
    let found = found.to_string_lossy().into_owned();
    let home = home.trim_end_matches('/');
    let under_home = !home.is_empty() && found.starts_with(&format!("{home}/"));
    if !under_home {
        return format!("{base} in the sandbox (it is {found} on your PATH, which the sandbox does not show)");
    }
    let fix = match crate::profiles::toolchains::profile_showing(&found, home) {
        Some(p) => format!("add -p {p}"),
        None => {
            let dir = Path::new(&found).parent().map(|d| d.to_string_lossy().into_owned()).unwrap_or_default();
            format!("add a profile with ro = [\"{dir}\"] and env = {{ \"PATH+\" = \"{dir}\" }}")
        }
    };
    format!("{base} in the sandbox: it is {found}, under $HOME, which the sandbox hides; {fix}")
}

/// For a CMD given as a path that exists on the host but leads, through symlinks, under
/// `$HOME` (a virtual environment's `bin/python3` made from pyenv's python, whose link points
/// into the hidden `~/.pyenv`): why it is not found inside, and the profile that shows it.
fn hidden_link(cmd: &str, home: &str) -> Option<String> {
    let home = home.trim_end_matches('/');
    let real = std::fs::canonicalize(cmd).ok()?;
    let real = real.to_string_lossy();
    if home.is_empty() || !real.starts_with(&format!("{home}/")) || !std::fs::symlink_metadata(cmd).ok()?.is_symlink() {
        return None;
    }
    let fix = match crate::profiles::toolchains::profile_showing(&real, home) {
        Some(p) => format!("add -p {p}"),
        None => format!("add --ro {}", quote(&real)),
    };
    Some(format!(
        "command not found in the sandbox: it is a symbolic link to {}, under $HOME, which the sandbox hides; {fix}",
        quote(&real)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// O7: a venv's python3 linking into the hidden ~/.pyenv is named with the profile.
    #[test]
    fn o7_venv_link_into_hidden_pyenv() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("h");
        let bin = home.join(".pyenv/versions/3.12.1/bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        std::fs::write(bin.join("python3.12"), "#!/bin/sh\n").expect("write");
        let venv = dir.path().join("p/.venv/bin");
        std::fs::create_dir_all(&venv).expect("mkdir");
        std::os::unix::fs::symlink(bin.join("python3.12"), venv.join("python3")).expect("link");
        let cmd = venv.join("python3");
        let h = home.to_str().expect("utf8");
        let got = not_found_for(cmd.to_str().expect("utf8"), std::ffi::OsStr::new("/usr/bin"), h);
        assert!(got.contains("symbolic link to") && got.ends_with("add -p @python"), "{got}");
        // Control: a path that is no link into $HOME is plain "command not found".
        assert_eq!(not_found_for("/no/such/prog", std::ffi::OsStr::new("/usr/bin"), h), "command not found");
    }

    #[test]
    fn o7_not_found_names_the_place_and_profile() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().to_str().expect("utf8");
        let bin = dir.path().join(".cargo/bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        let other = dir.path().join("bin");
        std::fs::create_dir_all(&other).expect("mkdir");
        for (d, name) in [(&bin, "cargo"), (&other, "mytool")] {
            std::fs::write(d.join(name), "#!/bin/sh\n").expect("write");
            std::fs::set_permissions(d.join(name), std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        }
        let path = std::env::join_paths([&bin, &other, &PathBuf::from("/usr/bin")]).expect("join");
        assert_eq!(
            not_found_for("cargo", &path, home),
            format!(
                "command not found in the sandbox: it is {home}/.cargo/bin/cargo, under $HOME, \
                 which the sandbox hides; add -p @rust"
            )
        );
        assert_eq!(
            not_found_for("mytool", &path, home),
            format!(
                "command not found in the sandbox: it is {home}/bin/mytool, under $HOME, which the \
                 sandbox hides; add a profile with ro = [\"{home}/bin\"] and env = {{ \"PATH+\" = \"{home}/bin\" }}"
            )
        );
        assert_eq!(not_found_for("no-such-cmd-snug", &path, home), "command not found");
        assert_eq!(not_found_for("./x", &path, home), "command not found");
    }
}
