//! Run options kept apart from `cli.rs`'s own definition (clap's `flatten`): where DIR comes
//! from (SPEC P10) and the event stream (SPEC O9).

/// `snug --version`: the version and how this binary was linked, so that the installed binary
/// can be told from another build (`make build` links with musl when its target is there).
#[cfg(target_env = "musl")]
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (static, musl)");
/// `snug --version` (see the musl build's).
#[cfg(all(not(target_env = "musl"), target_feature = "crt-static"))]
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (static, glibc)");
/// `snug --version` (see the musl build's).
#[cfg(all(not(target_env = "musl"), not(target_feature = "crt-static")))]
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (dynamic, glibc)");

/// Options of a run flattened into snug's command line.
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct More {
    /// DIR is the current directory even inside a project (no walk up to its .snug.toml or .git)
    #[arg(long)]
    pub here: bool,
    /// Write one JSON line per event as it happens to PATH, or to descriptor N with fd:N
    #[arg(long, value_name = "PATH|fd:N", help_heading = "Runs under a harness")]
    pub events: Option<String>,
    /// Pass the variables in FILE (docker's format: NAME=VALUE or NAME a line; repeatable)
    #[arg(long = "env-file", value_name = "FILE", help_heading = "Grants")]
    pub env_files: Vec<std::path::PathBuf>,
    /// No notes, hints or summaries on stderr (the report keeps them); errors still show
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// As root: run the payload as UID (and GID, default: UID's primary group) instead of root
    /// with the capabilities a foreign-owned DIR needs
    #[arg(long, value_name = "UID[:GID]")]
    pub user: Option<String>,
}

impl More {
    /// `--events`' destination, checked as `--report`'s is.
    ///
    /// # Errors
    /// 64 for `fd:` without a descriptor number or an empty value.
    pub fn events_to(&self) -> anyhow::Result<Option<super::ReportTo>> {
        self.events.as_deref().map(super::values::events_to).transpose()
    }
}
