//! git's part of the protected paths (SPEC P8): a repository's `.git` directory, or the
//! `.git` file of a worktree or submodule and the git directory it names, and `commondir`,
//! which sends git to another directory's config and hooks (gitrepository-layout(5)).

use std::path::Path;

use snug_core::protect::{COMMONDIR, CONFIG, CONFIG_WORKTREE, GIT, HOOKS, MODULES};

use super::git_config;
use super::probe::{self, Kind};
use super::{normalise, refused, Found, Missing, Planner};

/// How many git directories deep `commondir` and `.git` files are followed.
const MAX_DEPTH: usize = 3;
/// How many config files one git directory's config and its includes may add up to (git
/// itself stops at 10 levels of includes).
const MAX_INCLUDES: usize = 10;

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
                    let text = self.read(&dot).unwrap_or_default();
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

    /// The git directory `g` of the work tree `work`: its hooks and config, and what its
    /// config sends git to ([`Self::config_names`]), its `commondir` and the directory that
    /// names, and with `modules` the hooks and config of each submodule's git directory.
    fn gitdir(&mut self, g: &Path, work: &Path, modules: bool, depth: usize) -> anyhow::Result<()> {
        self.candidate(&g.join(HOOKS), Missing::Dir)?;
        let submodules = self.config_names(g, work)?;
        if depth >= MAX_DEPTH {
            return Ok(());
        }
        if let Found::File(file) = self.candidate(&g.join(COMMONDIR), Missing::Aside)? {
            let text = self.read(&file).unwrap_or_default();
            let common = text.lines().next().unwrap_or_default().trim();
            if !common.is_empty() {
                self.named(&normalise(&g.join(common)), work, depth + 1)?;
            }
        }
        if modules {
            self.modules(g, work, submodules)?;
        }
        Ok(())
    }

    /// The config of the git directory `g` and what it sends git to: the hooks directory it
    /// names (`core.hooksPath`, git-config(1): husky's `.husky/_`), the files it includes
    /// (`include.path`, `includeIf.*.path`, read in place as more config) and
    /// `config.worktree`. Each of those that does not exist is watched, and moved aside if the
    /// payload makes it; `config.worktree` gets a placeholder instead where
    /// `extensions.worktreeConfig` is on, since git reads it during the run. Returns the
    /// submodule names the config knows.
    fn config_names(&mut self, g: &Path, work: &Path) -> anyhow::Result<Vec<String>> {
        let mut names = Vec::new();
        let mut files = vec![(g.join(CONFIG), Missing::File)];
        let mut k = 0;
        while k < files.len() && k < MAX_INCLUDES {
            let (file, missing) = files[k].clone();
            k += 1;
            let Found::File(file) = self.candidate(&file, missing)? else { continue };
            let Some(text) = self.read(&file) else { continue };
            let set = git_config::read(&text);
            if let Some(path) = set.hooks_path {
                let path = self.expand(&path, work);
                self.candidate(&path, Missing::Aside)?;
            }
            let dir = file.parent().unwrap_or(g).to_path_buf();
            files.extend(set.includes.iter().map(|p| (self.expand(p, &dir), Missing::Aside)));
            if set.worktree_config {
                files.push((g.join(CONFIG_WORKTREE), Missing::File));
            }
            names.extend(set.submodules);
        }
        // Inert while the extension is off, but turning it on later would read it.
        self.candidate(&g.join(CONFIG_WORKTREE), Missing::Aside)?;
        Ok(names)
    }

    /// The submodules' git directories in `g/modules`: those there now, and those that
    /// `.gitmodules` or the config name (gitsubmodules(7)), which the host's next `git
    /// submodule update --init` would take as they are: each missing one is watched, and
    /// moved aside if the payload makes it.
    fn modules(&mut self, g: &Path, work: &Path, mut names: Vec<String>) -> anyhow::Result<()> {
        let gitmodules = work.join(snug_core::protect::AT_ROOT[0].0);
        if let Some(text) = self.read(&gitmodules) {
            names.extend(git_config::read(&text).submodules);
        }
        let Some((i, rel)) = self.locate(&g.join(MODULES)) else { return Ok(()) };
        let present = probe::subdirs(&self.roots[i].fd, &rel).map_err(|e| refused(&g.join(MODULES), e))?;
        let mut dirs: Vec<std::path::PathBuf> = present.iter().map(|n| g.join(MODULES).join(n)).collect();
        dirs.extend(names.iter().map(|n| g.join(MODULES).join(n)));
        dirs.sort();
        dirs.dedup();
        for m in dirs {
            let Some((i, rel)) = self.locate(&m) else { continue };
            match probe::probe(&self.roots[i].fd, &rel).map_err(|e| refused(&m, e))? {
                Kind::Dir(..) => {
                    self.candidate(&m.join(HOOKS), Missing::Dir)?;
                    self.candidate(&m.join(CONFIG), Missing::File)?;
                }
                _ => {
                    self.candidate(&m, Missing::Aside)?;
                }
            }
        }
        Ok(())
    }

    /// The text of the regular file `abs` in a writable root, read through no symlink
    /// ([`probe::read_small`]); `None` outside every root or when it is no such file.
    fn read(&self, abs: &Path) -> Option<String> {
        self.locate(abs).and_then(|(i, rel)| probe::read_small(&self.roots[i].fd, &rel))
    }

    /// A path from a git config: `~/` is the home, a relative one lies below `base`.
    fn expand(&self, path: &str, base: &Path) -> std::path::PathBuf {
        normalise(&match path.strip_prefix("~/") {
            Some(rest) => self.policy.home.join(rest),
            None => base.join(path),
        })
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
