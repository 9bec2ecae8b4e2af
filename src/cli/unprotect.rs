//! `--unprotect PATH` (SPEC P8): kept beside the other grants in `--help`, declared apart.

/// The protected paths the caller lets the payload write.
#[derive(clap::Args, Debug)]
pub(super) struct Unprotect {
    /// Let the payload write protected PATH (.git/hooks, .git/config, .envrc, .vscode/, ...;
    /// repeatable); see snug profile show @cwd-rw
    #[arg(long = "unprotect", value_name = "PATH", help_heading = "Grants")]
    pub(super) paths: Vec<String>,
}
