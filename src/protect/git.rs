//! git's part of the protected paths (SPEC P8): a repository's `.git` directory, or the
//! `.git` file of a worktree or submodule and the git directory it names, and `commondir`,
//! which sends git to another directory's config and hooks (gitrepository-layout(5)).

use std::path::Path;

use snug_core::protect::{COMMONDIR, CONFIG, GIT, HOOKS, MODULES};

use super::probe::{self, Kind};
use super::{normalise, refused, Found, Missing, Planner};

/// How many git directories deep `commondir` and `.git` files are followed.
const MAX_DEPTH: usize = 3;

impl Planner<'_> {
    /// `.git` at the root `root`: a directory, a file naming a git directory, a symlink, or
    /// nothing yet (then what the payload makes there is moved aside after the run).
    pub(super) fn dot_git(&mut self, root: &Path) -> anyhow::Result<()> {
        let dot = root.join(GIT);
        let Some((i, rel)) = self.locate(&dot) else { return Ok(()) };
        match probe::probe(&self.roots[i].fd, &rel).map_err(|e| refused(&dot, e))? {
            Kind::Dir(..) => self.gitdir(&dot, root, true, 0),
            Kind::File(..) => {
                if let Found::File(_) = self.candidate(&dot, Missing::Nothing)? {
                    let text = probe::read_small(&self.roots[i].fd, &rel).unwrap_or_default();
                    if let Some(named) = text.lines().next().and_then(|l| l.strip_prefix("gitdir:")) {
                        let named = normalise(&root.join(named.trim()));
                        self.named(&named, root, 1)?;
                    }
                }
                Ok(())
            }
            Kind::Symlink(..) | Kind::Missing => {
                if let Found::Symlink(target) = self.candidate(&dot, Missing::Aside)? {
                    self.named(&target, root, 1)?;
                }
                Ok(())
            }
            Kind::NoParent => Ok(()),
        }
    }

    /// The git directory `g` of the work tree `work`: its hooks and config, the hooks
    /// directory its config names (`core.hooksPath`, git-config(1): husky's `.husky/_`), its
    /// `commondir` and the directory that names, and with `modules` the hooks and config of
    /// each `modules/*`.
    fn gitdir(&mut self, g: &Path, work: &Path, modules: bool, depth: usize) -> anyhow::Result<()> {
        self.candidate(&g.join(HOOKS), Missing::Dir)?;
        if let Found::File(config) = self.candidate(&g.join(CONFIG), Missing::File)? {
            if let Some(hooks) = self.locate(&config).and_then(|(i, rel)| probe::read_small(&self.roots[i].fd, &rel)) {
                if let Some(path) = hooks_path(&hooks) {
                    let path = match path.strip_prefix("~/") {
                        Some(rest) => self.policy.home.join(rest),
                        None => work.join(path),
                    };
                    self.candidate(&normalise(&path), Missing::Nothing)?;
                }
            }
        }
        if depth >= MAX_DEPTH {
            return Ok(());
        }
        if let Found::File(file) = self.candidate(&g.join(COMMONDIR), Missing::Aside)? {
            if let Some((i, rel)) = self.locate(&file) {
                let text = probe::read_small(&self.roots[i].fd, &rel).unwrap_or_default();
                let common = text.lines().next().unwrap_or_default().trim();
                if !common.is_empty() {
                    self.named(&normalise(&g.join(common)), work, depth + 1)?;
                }
            }
        }
        if !modules {
            return Ok(());
        }
        let Some((i, rel)) = self.locate(&g.join(MODULES)) else { return Ok(()) };
        let names = probe::subdirs(&self.roots[i].fd, &rel).map_err(|e| refused(&g.join(MODULES), e))?;
        for name in names {
            let m = g.join(MODULES).join(name);
            self.candidate(&m.join(HOOKS), Missing::Dir)?;
            self.candidate(&m.join(CONFIG), Missing::File)?;
        }
        Ok(())
    }

    /// A git directory another one names (a `.git` file, a `.git` symlink, `commondir`): its
    /// hooks and config when it lies in a writable root; watched when it does not exist yet.
    fn named(&mut self, g: &Path, work: &Path, depth: usize) -> anyhow::Result<()> {
        let Some((i, rel)) = self.locate(g) else {
            self.outside(g)?;
            return Ok(());
        };
        match probe::probe(&self.roots[i].fd, &rel).map_err(|e| refused(g, e))? {
            Kind::Dir(..) => self.gitdir(g, work, false, depth),
            Kind::Missing | Kind::Symlink(..) => self.candidate(g, Missing::Aside).map(|_| ()),
            Kind::File(..) | Kind::NoParent => Ok(()),
        }
    }
}

/// `core.hooksPath` in the text of a git config file (git-config(1): sections in brackets,
/// names case-insensitive, a value optionally quoted); the last one wins, as in git.
pub(super) fn hooks_path(text: &str) -> Option<String> {
    let mut core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.split([']', ' ', '"', '.']).next().unwrap_or_default();
            core = name.eq_ignore_ascii_case("core");
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if core && key.trim().eq_ignore_ascii_case("hookspath") {
            let value = value.split(['#', ';']).next().unwrap_or_default().trim();
            let value = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value);
            found = (!value.is_empty()).then(|| value.to_string());
        }
    }
    found
}
