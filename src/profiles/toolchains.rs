//! The opt-in builtin profiles for toolchains installed under `$HOME` (SPEC O7): `@rust`,
//! `@python`, `@node`, `@go`, `@git`. `$HOME` is an empty tmpfs in the sandbox (`@home`), so
//! rustup's cargo, pyenv's python or nvm's node vanish there without one of these.
//!
//! Each shows its tool read-only and only its caches read-write. Every path is optional
//! (written `?PATH`, see [`crate::policy`]): a read-only one that does not exist on this host
//! is skipped, never a missing-path error, and `snug profile show` says so; a missing cache
//! is created at the run (SPEC O8), so what the payload caches persists from the first run.
//! PATH entries are prepended (`PATH+`), so toolchain profiles combine (`-p @rust -p @python`).
//!
//! `@shell` is here too for the same mechanism: the caller's shell and editor rc files,
//! read-only, those that exist.

use crate::profiles::Profile;

/// Names of the toolchain builtins ([`crate::profiles::BUILTINS`] lists them too).
#[cfg(test)]
const NAMES: [&str; 6] = ["@rust", "@python", "@node", "@go", "@git", "@shell"];

/// The toolchain builtins with writable caches, for the discarded-files summary's advice.
pub const WITH_CACHES: [&str; 4] = ["@rust", "@python", "@node", "@go"];

/// What a toolchain profile's writable caches risk (SPEC P8): said by `snug profile show`
/// and the README; no protection covers it.
pub const CACHES_RISK: &str = "these writable caches are a route to what the host's next build runs: \
     a payload can change @rust's extracted registry sources (their build.rs), @go's module and \
     build caches, @python's pip wheel cache or @node's package caches, and your next build on \
     the host runs what it changed";

/// What a toolchain profile shows: read-only and read-write paths (all optional), env
/// entries, and directories prepended to PATH (first one first).
struct Spec {
    description: &'static str,
    ro: &'static [&'static str],
    rw: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    path: &'static [&'static str],
}

fn spec(name: &str) -> Option<Spec> {
    let s = match name {
        // rustup(1) keeps toolchains in RUSTUP_HOME, cargo(1) its proxies in CARGO_HOME/bin and
        // downloaded crates in CARGO_HOME/registry and /git (cargo book, "Cargo Home").
        "@rust" => Spec {
            description: "rustup and cargo from ~/.rustup and ~/.cargo (read-only; crate caches writable)",
            ro: &["{home}/.rustup", "{home}/.cargo/bin", "{home}/.cargo/config.toml", "{home}/.cargo/config"],
            rw: &["{home}/.cargo/registry", "{home}/.cargo/git"],
            env: &[("CARGO_HOME", "{home}/.cargo"), ("RUSTUP_HOME", "{home}/.rustup")],
            path: &["{home}/.cargo/bin"],
        },
        // pyenv(1) keeps versions and shims in PYENV_ROOT; `pip install --user` writes the
        // user site (~/.local/lib/pythonX.Y) and scripts (~/.local/bin); pip caches in ~/.cache/pip.
        "@python" => Spec {
            description: "pyenv (~/.pyenv), the user site (~/.local), read-only; pip's cache writable",
            ro: &["{home}/.pyenv", "{home}/.local/lib", "{home}/.local/bin", "{home}/.config/pip"],
            rw: &["{home}/.cache/pip"],
            env: &[("PYENV_ROOT", "{home}/.pyenv")],
            path: &["{home}/.pyenv/shims", "{home}/.pyenv/bin", "{home}/.local/bin"],
        },
        // nvm(1) installs node under NVM_DIR/versions/node/vX/bin: the profile shows NVM_DIR,
        // and the PATH entries come from the caller's PATH (see [`caller_path_under`]).
        "@node" => Spec {
            description: "nvm (~/.nvm) and ~/.npmrc, read-only; npm, pnpm and yarn caches writable",
            ro: &["{home}/.nvm", "{home}/.npmrc", "{home}/.yarnrc", "{home}/.local/share/pnpm"],
            rw: &["{home}/.npm", "{home}/.cache/yarn", "{home}/.cache/pnpm", "{home}/.local/share/pnpm/store"],
            env: &[("NVM_DIR", "{home}/.nvm")],
            path: &["{home}/.local/share/pnpm"],
        },
        // go(1): GOPATH defaults to ~/go, GOMODCACHE to GOPATH/pkg/mod, GOCACHE to
        // ~/.cache/go-build (`go help environment`); `go install` toolchains live in ~/sdk.
        "@go" => Spec {
            description: "GOPATH (~/go) and ~/sdk read-only; the module and build caches writable",
            ro: &["{home}/go", "{home}/sdk"],
            rw: &["{home}/go/pkg/mod", "{home}/.cache/go-build"],
            env: &[("GOPATH", "{home}/go"), ("GOMODCACHE", "{home}/go/pkg/mod"), ("GOCACHE", "{home}/.cache/go-build")],
            path: &["{home}/go/bin", "/usr/local/go/bin"],
        },
        // git-config(1): the global file is ~/.gitconfig or $XDG_CONFIG_HOME/git/config.
        "@git" => Spec {
            description: "git's user configuration (~/.gitconfig, ~/.config/git), read-only",
            ro: &["{home}/.gitconfig", "{home}/.config/git"],
            rw: &[],
            env: &[],
            path: &[],
        },
        // bash(1) INVOCATION, readline's inputrc (readline(3)), zsh(1) STARTUP/SHUTDOWN FILES,
        // vim's and neovim's user config, nano's nanorc, tmux's and git-free editor settings.
        "@shell" => Spec {
            description: "your shell and editor rc files (~/.bashrc, ~/.inputrc, ~/.zshrc, ~/.vimrc…), read-only",
            ro: &[
                "{home}/.bashrc",
                "{home}/.profile",
                "{home}/.bash_profile",
                "{home}/.bash_login",
                "{home}/.bash_logout",
                "{home}/.bash_aliases",
                "{home}/.inputrc",
                "{home}/.zshrc",
                "{home}/.zshenv",
                "{home}/.zprofile",
                "{home}/.config/fish",
                "{home}/.vimrc",
                "{home}/.vim",
                "{home}/.config/nvim",
                "{home}/.nanorc",
                "{home}/.editorconfig",
                "{home}/.tmux.conf",
            ],
            rw: &[],
            env: &[],
            path: &[],
        },
        _ => return None,
    };
    Some(s)
}

/// The toolchain builtin `name`, or `None` when it is not one. `@node` also prepends the
/// caller's PATH entries that lie under `~/.nvm` (the node version nvm selected there).
pub fn builtin(name: &str) -> Option<Profile> {
    let caller_path = std::env::var("PATH").unwrap_or_default();
    let home = std::env::var("HOME").unwrap_or_default();
    builtin_for(name, &caller_path, &home)
}

/// [`builtin`] for a caller whose PATH is `caller_path` and HOME `home` (tests use their own).
pub fn builtin_for(name: &str, caller_path: &str, home: &str) -> Option<Profile> {
    let s = spec(name)?;
    let owned = |v: &[&str]| v.iter().map(|p| format!("?{p}")).collect::<Vec<_>>();
    let mut p = Profile {
        ro: owned(s.ro),
        rw: owned(s.rw),
        create_rw: !s.rw.is_empty(),
        ..Profile::builtin(name, s.description)
    };
    if name == "@shell" {
        // The editor a shell's `fc`, git or crontab starts (environ(7)); its program is under /usr.
        p.pass = vec!["EDITOR".to_string(), "VISUAL".to_string()];
    }
    for (k, v) in s.env {
        p.env.insert(k.to_string(), v.to_string());
    }
    let mut path: Vec<String> = Vec::new();
    if name == "@node" {
        path.extend(caller_path_under(caller_path, home, ".nvm"));
    }
    path.extend(s.path.iter().map(|d| d.to_string()));
    if !path.is_empty() {
        p.env.insert("PATH+".to_string(), path.join(":"));
    }
    Some(p)
}

/// Entries of `caller_path` below `home/sub`, written with `{home}` so `profile show` and
/// the policy expand them like the rest.
fn caller_path_under(caller_path: &str, home: &str, sub: &str) -> Vec<String> {
    let root = format!("{}/{sub}/", home.trim_end_matches('/'));
    if home.is_empty() {
        return Vec::new();
    }
    caller_path
        .split(':')
        .filter(|d| d.starts_with(&root))
        .map(|d| format!("{{home}}{}", &d[home.trim_end_matches('/').len()..]))
        .collect()
}

/// The toolchain profile that shows `path` (a file under `home`), for the 127 hint.
pub fn profile_showing(path: &str, home: &str) -> Option<&'static str> {
    let rel = path.strip_prefix(home.trim_end_matches('/'))?.strip_prefix('/')?;
    let table: [(&str, &str); 7] = [
        (".cargo/", "@rust"),
        (".rustup/", "@rust"),
        (".pyenv/", "@python"),
        (".local/bin/", "@python"),
        (".nvm/", "@node"),
        (".local/share/pnpm/", "@node"),
        ("go/bin/", "@go"),
    ];
    table.iter().find(|(prefix, _)| rel.starts_with(prefix)).map(|(_, p)| *p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o7_every_toolchain_is_read_only_but_its_caches_and_all_optional() {
        for name in NAMES {
            let p = builtin_for(name, "/usr/bin", "/h").expect(name);
            assert!(p.ro.iter().chain(&p.rw).all(|e| e.starts_with("?{home}/")), "{name}: {p:?}");
            assert!(
                p.rw.iter().all(|e| e.contains("cache")
                    || e.ends_with("/registry")
                    || e.ends_with("/git")
                    || e.ends_with("/mod")
                    || e.ends_with("/store")
                    || e.ends_with("/.npm")),
                "{name}: {:?}",
                p.rw
            );
            assert!(p.tmpfs.is_empty() && !p.net && !p.host_view);
        }
        assert!(builtin_for("@nosuch", "", "/h").is_none());
    }

    #[test]
    fn o7_node_takes_the_callers_nvm_bin() {
        let p = builtin_for("@node", "/h/.nvm/versions/node/v20.1.0/bin:/usr/bin:/h2/.nvm/x", "/h").expect("@node");
        assert_eq!(p.env["PATH+"], "{home}/.nvm/versions/node/v20.1.0/bin:{home}/.local/share/pnpm");
    }

    #[test]
    fn o7_profile_showing_a_home_tool() {
        assert_eq!(profile_showing("/root/.cargo/bin/cargo", "/root"), Some("@rust"));
        assert_eq!(profile_showing("/root/.pyenv/shims/python3", "/root/"), Some("@python"));
        assert_eq!(profile_showing("/home/u/.nvm/versions/node/v20/bin/node", "/home/u"), Some("@node"));
        assert_eq!(profile_showing("/home/u/go/bin/gopls", "/home/u"), Some("@go"));
        assert_eq!(profile_showing("/home/u/bin/tool", "/home/u"), None);
        assert_eq!(profile_showing("/home/uv/.cargo/bin/cargo", "/home/u"), None);
    }
}
