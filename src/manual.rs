//! Shell completions and the man page, generated from the clap definition at run time
//! (SPEC O7), so they can never disagree with the binary that prints them. `make install`
//! writes them with `snug completions SHELL` and `snug manpage`.

/// The completion script for `shell` (clap_complete).
pub fn completions(shell: clap_complete::Shell) -> String {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut crate::cli::definition(), "snug", &mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// snug(1) in roff (clap_mangen), with an EXIT STATUS section from SPEC R4.
///
/// # Errors
/// Only if writing into memory fails, which it does not.
pub fn manpage() -> anyhow::Result<String> {
    let man = clap_mangen::Man::new(crate::cli::definition());
    let mut buf = Vec::new();
    man.render_title(&mut buf)?;
    man.render_name_section(&mut buf)?;
    man.render_synopsis_section(&mut buf)?;
    man.render_description_section(&mut buf)?;
    man.render_options_section(&mut buf)?;
    man.render_subcommands_section(&mut buf)?;
    buf.extend_from_slice(EXTRA.as_bytes());
    man.render_version_section(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// What clap does not know: exit statuses, files, examples (roff).
const EXTRA: &str = r#".SH "EXIT STATUS"
The payload's own status (or death by its signal), else:
64 usage error; 69 a host capability is missing (bwrap, user namespaces, pasta);
70 internal error; 71 operating-system error at run time; 77 policy error
(unknown profile, bad profile file, conflict); 126 CMD found but not executable;
127 CMD not found.
.SH FILES
.TP
\fI$XDG_CONFIG_HOME/snug/profiles.d/NAME.toml\fR, \fI/etc/snug/profiles.d/NAME.toml\fR
User profiles (\fB\-p NAME\fR); see README.md.
.SH EXAMPLES
.TP
\fBsnug \-\- make test\fR
Run make test in a sandbox of the current directory.
.TP
\fBsnug \-p @rust \-\- cargo build\fR
Show rustup's cargo from $HOME, read-only, with its crate caches writable.
.TP
\fBsnug \-\-dry\-run \-\- make\fR
Print the mode, the policy and the bwrap command line; start nothing.
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o7_completions_and_manpage_come_from_the_definition() {
        for shell in [clap_complete::Shell::Bash, clap_complete::Shell::Zsh, clap_complete::Shell::Fish] {
            let text = completions(shell);
            assert!(text.contains("dry-run") && text.contains("profile"), "{shell}: {text}");
        }
        let man = manpage().expect("manpage");
        assert!(man.starts_with(".ie \\n(.g") || man.contains(".TH snug 1"), "{man}");
        assert!(man.contains("EXIT STATUS") && man.contains("dry\\-run"), "{man}");
    }
}
