//! What a hint must never offer to grant (SPEC O11): a place in `$HOME` the host runs or
//! reads at login or at its next build. A payload allowed to write there would run its code
//! outside any sandbox: a shell's rc files, `~/.local/bin` and `~/bin` (on PATH), the toolchains
//! under `~/.cargo` and `~/.rustup`, ssh's and git's configuration, the desktop's autostart, and
//! the caches a toolchain builds from (cargo's registry sources with their `build.rs`, Go's
//! module cache, npm's and pnpm's package stores).

use std::path::Path;

/// Paths below `$HOME` (exact or as a parent) never offered as a grant, nor any directory
/// above them (granting `~/.config` grants `~/.config/autostart`). Each is a place a program
/// the host runs reads as commands, settings or credentials. A place not named here is
/// still only offered as a line for the user to read and paste (snug grants nothing by
/// itself); the places a payload usually leaves behind are caches, which are not here.
const NEVER: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".inputrc",
    ".pam_environment",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".xsessionrc",
    ".envrc",
    ".ssh",
    ".gnupg",
    ".gitconfig",
    ".local/bin",
    ".local/share/applications",
    "bin",
    ".pyenv",
    ".nvm",
    ".cargo",
    ".rustup",
    "go",
    ".npm",
    ".npmrc",
    ".local/share/pnpm",
    ".cache/yarn",
    ".cache/pnpm",
    ".config/autostart",
    ".config/environment.d",
    ".config/systemd",
    ".config/fish",
    ".config/git",
    ".config/nvim",
    ".vimrc",
    ".emacs",
    ".emacs.d",
    // Read and acted on by programs the host runs: aliases and per-directory environments
    // sourced by the shell, debugger, database, R, Python, Ruby and terminal-multiplexer start
    // files (each may run commands), build tools' settings and repositories (Gradle's init
    // scripts, Maven's settings), the editor's extensions.
    ".bash_aliases",
    ".config/direnv",
    ".gradle",
    ".m2",
    ".ipython",
    ".gdbinit",
    ".psqlrc",
    ".Rprofile",
    ".tmux.conf",
    ".screenrc",
    ".irbrc",
    ".pythonrc.py",
    ".config/Code",
    // Credentials and the settings that say where they go: a payload writing these could
    // redirect the host's next upload, download or cluster command to itself.
    ".kube",
    ".aws",
    ".docker",
    ".netrc",
    ".curlrc",
    ".wgetrc",
    ".config/pip",
    ".pypirc",
    ".config/gh",
    ".config/hub",
    ".password-store",
    ".local/share/keyrings",
    ".mozilla",
    ".thunderbird",
    ".config/google-chrome",
    ".config/chromium",
    // Editors' and tools' plugins and start files, which run as code: vim's and neovim's
    // plugin trees, VS Code's and its server's extensions, Mercurial's hooks, tmux's
    // `run-shell`, a terminal's or prompt's configured commands, debuggers' and
    // interpreters' start files, package managers' settings that name programs to run.
    ".vim",
    ".config/vim",
    ".local/share/nvim",
    ".vscode",
    ".vscode-server",
    ".cursor",
    ".hgrc",
    ".config/hg",
    ".config/tmux",
    ".config/kitty",
    ".config/alacritty",
    ".config/wezterm",
    ".config/starship.toml",
    ".config/emacs",
    ".doom.d",
    ".spacemacs",
    ".lldbinit",
    ".perldb",
    ".tclshrc",
    ".wishrc",
    ".sqliterc",
    ".my.cnf",
    ".mailcap",
    ".julia",
    ".yarnrc",
    ".yarnrc.yml",
    ".condarc",
    ".gemrc",
    ".terraformrc",
    ".terraform.d",
    ".ansible.cfg",
    ".local/share/jupyter",
    // Sourced by a shell's rc files, or on the host's PATH or import path: a framework's
    // scripts, version managers' shims and installed tools, Python's user site-packages.
    ".oh-my-zsh",
    ".zsh",
    ".config/zsh",
    ".bashrc.d",
    ".local/lib",
    ".local/share/uv",
    ".local/share/mise",
    ".config/mise",
    ".asdf",
    ".sdkman",
    ".volta",
    ".deno",
    ".bun",
    ".conda",
    ".virtualenvs",
    // A window manager's or session's autostart commands.
    ".config/i3",
    ".config/sway",
    ".config/hypr",
    ".config/openbox",
];

/// The toolchain profiles whose writable caches hold nothing the host's next build runs
/// as source (pip's cache holds downloads and built wheels, which pip checks by hash).
const SAFE_PROFILES: &[&str] = &["@python"];

/// Why granting `rel` (relative to `$HOME`) would let the payload write what the host runs
/// or reads, or `None` when it would not.
pub fn unsafe_to_grant(rel: &Path) -> Option<String> {
    if rel.as_os_str().is_empty() {
        return Some("that is the whole of $HOME, where the host's login files are".into());
    }
    let hit = NEVER.iter().map(Path::new).find(|n| rel.starts_with(n) || n.starts_with(rel))?;
    Some(format!("the host runs or reads ~/{} (its shell, PATH, build or login)", hit.display()))
}

/// Whether suggesting toolchain profile `name` for its cache is safe (O11).
pub fn profile_is_safe(name: &str) -> bool {
    SAFE_PROFILES.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// O11: `~`, rc files, `~/.local/bin` and every directory above it, `~/.cargo` and
    /// what is below it are never offered; `~/.cache/foo` and `~/.hist` are. Positive control:
    /// before the editors', tools' and shells' entries were listed, a payload that left
    /// `~/.vim/plugin/x.vim` got the hint `mkdir -p ~/.vim and --rw ~/.vim`, and each of the
    /// paths from `.vim/plugin/x.vim` on was offered.
    #[test]
    fn o11_login_and_build_paths_are_never_offered() {
        for p in ["", ".bashrc", ".local", ".local/bin", ".local/bin/x", ".cargo/registry/src", ".config", "go/pkg/mod"]
        {
            assert!(unsafe_to_grant(Path::new(p)).is_some(), "{p:?} offered");
        }
        // Start files of other programs, build tools' settings, credentials and where they go.
        for p in [
            ".bash_aliases",
            ".config/direnv/direnvrc",
            ".gradle/init.d/x.gradle",
            ".ipython/profile_default/startup/x.py",
            ".gdbinit",
            ".psqlrc",
            ".Rprofile",
            ".tmux.conf",
            ".screenrc",
            ".irbrc",
            ".pythonrc.py",
            ".kube/config",
            ".aws/credentials",
            ".config/Code/User/settings.json",
            ".m2/settings.xml",
            ".curlrc",
            ".wgetrc",
            ".netrc",
            ".config/pip/pip.conf",
            ".docker/config.json",
            ".npmrc",
            ".pypirc",
            ".gitconfig",
            ".config/git/config",
            ".ssh/authorized_keys",
            ".gnupg/gpg.conf",
            ".vim/plugin/x.vim",
            ".local/share/nvim/site/plugin/x.lua",
            ".hgrc",
            ".config/tmux/tmux.conf",
            ".vscode/extensions/x/package.json",
            ".vscode-server/extensions/x",
            ".julia/config/startup.jl",
            ".yarnrc",
            ".mozilla/firefox/x",
            ".lldbinit",
            ".perldb",
            ".tclshrc",
            ".condarc",
            ".gemrc",
            ".mailcap",
            ".config/kitty/kitty.conf",
            ".local/lib/python3.12/site-packages/x.pth",
            ".oh-my-zsh/custom/x.zsh",
        ] {
            assert!(unsafe_to_grant(Path::new(p)).is_some(), "{p:?} offered");
        }
        for p in [".cache/foo", ".hist", ".local/share/x", ".config/foo", ".bashrc.d.bak/x"] {
            assert_eq!(unsafe_to_grant(Path::new(p)), None, "{p:?} refused");
        }
        assert!(profile_is_safe("@python") && !profile_is_safe("@rust") && !profile_is_safe("@go"));
    }
}
