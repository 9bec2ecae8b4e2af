//! Shell completions and the man pages, generated from the clap definition at run time
//! (SPEC O7), so they can never disagree with the binary that prints them. `make install`
//! writes them with `snug completions SHELL` and `snug manpage --dir DIR`.

use std::path::Path;

/// The completion script for `shell` (clap_complete), with, for bash and fish, the names
/// clap cannot know: profile names after `-p` and live run names after `stop`, `signal`,
/// `exec`, asked of snug itself at completion time (`snug profile list --names`, `snug ps
/// --names`).
pub fn completions(shell: clap_complete::Shell) -> String {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut crate::cli::definition(), "snug", &mut buf);
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    match shell {
        clap_complete::Shell::Bash => text.push_str(BASH_DYNAMIC),
        clap_complete::Shell::Fish => text.push_str(FISH_DYNAMIC),
        _ => {}
    }
    text
}

/// Wraps clap's `_snug`: its own answers for the words that name profiles and runs, with
/// bash's fallback to file and host names turned off there (`compopt`, bash(1)). bash splits
/// `@python` at the `@` (it is in `COMP_WORDBREAKS`, for host names), so the word after `-p`
/// is taken from the line itself, split at blanks only, and the candidates lose the part
/// before the word bash will replace (as bash-completion's `__ltrim_colon_completions` does).
const BASH_DYNAMIC: &str = r#"
# Profile names after -p, live run names after stop/signal/exec, kept runs after diff/apply/discard.
_snug_dynamic() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" snug="${COMP_WORDS[0]}"
    local line="${COMP_LINE:0:COMP_POINT}" w
    read -ra w <<<"$line"
    [[ $line == *[[:blank:]] ]] && w+=("")
    if (( ${#w[@]} >= 2 )) && [[ ${w[-2]} == -p || ${w[-2]} == --profile ]]; then
        local whole="${w[-1]}"
        compopt +o default +o bashdefault 2>/dev/null
        COMPREPLY=($(compgen -W "$("$snug" profile list --names 2>/dev/null)" -- "$whole"))
        local head="${whole%"$cur"}"
        COMPREPLY=("${COMPREPLY[@]#"$head"}")
        return 0
    fi
    case "${COMP_WORDS[1]}" in
        stop|signal|exec|diff|apply|discard)
            local i operands=0 list=ps
            [[ ${COMP_WORDS[1]} == @(diff|apply|discard) ]] && list=diff
            for ((i = 2; i < COMP_CWORD; i++)); do
                [[ ${COMP_WORDS[i]} == -* ]] || operands=$((operands + 1))
            done
            if [[ $operands == 0 && $cur != -* ]]; then
                compopt +o default +o bashdefault 2>/dev/null
                COMPREPLY=($(compgen -W "$("$snug" $list --names 2>/dev/null)" -- "$cur"))
                return 0
            fi
            ;;
    esac
    _snug "$@"
}
complete -F _snug_dynamic -o bashdefault -o default snug
"#;

const FISH_DYNAMIC: &str = r#"
# Profile names after -p, live run names after stop/signal/exec, kept runs after diff/apply/discard.
complete -c snug -s p -l profile -x -a '(snug profile list --names 2>/dev/null)'
complete -c snug -n '__fish_seen_subcommand_from stop signal exec; and test (count (commandline -opc)) -eq 2' -x -a '(snug ps --names 2>/dev/null)'
complete -c snug -n '__fish_seen_subcommand_from diff apply discard; and test (count (commandline -opc)) -eq 2' -x -a '(snug diff --names 2>/dev/null)'
"#;

/// Every man page: snug(1), then one per subcommand (snug-ps(1), snug-profile-list(1), …),
/// as (file name, roff text). The pages a page names are exactly these.
///
/// # Errors
/// Only if writing into memory fails, which it does not.
pub fn pages() -> anyhow::Result<Vec<(String, String)>> {
    let mut cmd = crate::cli::definition().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, true, &mut out)?;
    Ok(out)
}

fn walk(cmd: &clap::Command, top: bool, out: &mut Vec<(String, String)>) -> anyhow::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut buf = Vec::new();
    man.render_title(&mut buf)?;
    man.render_name_section(&mut buf)?;
    man.render_synopsis_section(&mut buf)?;
    man.render_description_section(&mut buf)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut buf)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut buf)?;
    }
    buf.extend_from_slice(EXIT_STATUS.as_bytes());
    if top {
        buf.extend_from_slice(TOP_EXTRA.as_bytes());
    } else {
        buf.extend_from_slice(b".SH \"SEE ALSO\"\nsnug(1)\n");
    }
    if cmd.get_version().is_some() {
        man.render_version_section(&mut buf)?;
    }
    out.push((man.get_filename(), String::from_utf8_lossy(&buf).into_owned()));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        walk(sub, false, out)?;
    }
    Ok(())
}

/// snug(1) alone, in roff.
///
/// # Errors
/// As [`pages`].
pub fn manpage() -> anyhow::Result<String> {
    Ok(pages()?.into_iter().next().map(|(_, t)| t).unwrap_or_default())
}

/// `snug manpage --dir DIR`: write every page of [`pages`] into DIR; the lines to print.
///
/// # Errors
/// A [`crate::error::OS_ERROR`] failure naming the file that cannot be written.
pub fn install(dir: &Path) -> anyhow::Result<String> {
    let mut said = String::new();
    for (name, text) in pages()? {
        let path = dir.join(&name);
        std::fs::write(&path, text).map_err(|e| {
            crate::error::failure(crate::error::OS_ERROR, format!("{}: {}", path.display(), crate::error::io_text(&e)))
        })?;
        said.push_str(&format!("{}\n", path.display()));
    }
    Ok(said)
}

/// Every exit status snug can end with (SPEC R3, R4, O5, O6), on every page.
const EXIT_STATUS: &str = r#".SH "EXIT STATUS"
A run ends with the payload's own exit status; when the payload died of a signal, snug
dies of the same signal (a shell shows 128+N). snug's own outcomes:
.TP
\fB0\fR
Success (subcommands).
.TP
\fB64\fR
Usage error.
.TP
\fB69\fR
A host capability is missing (bwrap, user namespaces, pasta for @net, a cgroup for \-\-memory).
.TP
\fB70\fR
Internal error.
.TP
\fB71\fR
Operating-system error at run time (fork or descriptors refused, a directory that cannot be entered).
.TP
\fB74\fR
The \-\-report could not be written at the end of a run that would otherwise have exited 0.
.TP
\fB77\fR
Policy error: unknown profile, bad profile file, conflict, a .snug.toml not allowed, a
grant through a symlink a sandbox could have planted (in DIR or a writable grant), a path
swapped while the sandbox was set up.
.TP
\fB124\fR
\-\-timeout ended the run.
.TP
\fB126\fR
CMD found but not executable.
.TP
\fB127\fR
CMD not found.
"#;

/// What clap does not know: files, examples (roff).
const TOP_EXTRA: &str = r#".SH FILES
.TP
\fI$XDG_CONFIG_HOME/snug/profiles.d/NAME.toml\fR, \fI/etc/snug/profiles.d/NAME.toml\fR
User profiles (\fB\-p NAME\fR; keys description, include, ro, rw, tmpfs, env, max_procs,
memory); \fBsnug profile list\fR shows them, \fBsnug profile show NAME\fR one of them.
.TP
\fIDIR/.snug.toml\fR
The project's own policy: the keys of a profile plus \fBprofiles = [...]\fR, applied once
\fBsnug allow\fR recorded its content; \fB\-\-no\-project\fR skips it.
.TP
\fI$XDG_STATE_HOME/snug/allowed/\fR (default \fI~/.local/state/snug/allowed/\fR)
The SHA-256 and a copy of each allowed .snug.toml.
.TP
\fI$XDG_RUNTIME_DIR/snug/NAME.sock\fR (root: \fI/run/snug/\fR)
The control socket of each live run (\fBsnug ps\fR, \fBstop\fR, \fBsignal\fR, \fBexec\fR).
.TP
\fI$XDG_STATE_HOME/snug/cow/NAME/\fR (default \fI~/.local/state/snug/cow/\fR)
What a \fB\-\-cow\fR run kept aside (\fBsnug diff\fR, \fBapply\fR, \fBdiscard\fR).
.SH "THE HOME DIRECTORY"
DIR may not be $HOME, a directory above it, or /: DIR is writable, so that would make
\fI~/.ssh\fR and \fI~/.bashrc\fR writable (exit 64). Run in a project directory and show
what the payload needs from the home on purpose: \fB\-\-ro ~/.gitconfig\fR, a toolchain
profile (\fB\-p @rust\fR), or \fB\-\-rw\fR of one directory it must write.
.SH EXAMPLES
.TP
\fBsnug \-\- make test\fR
Run make test in a sandbox of the current directory.
.TP
\fBsnug \-p @rust \-\- cargo build\fR
Show rustup's cargo from $HOME, read-only, with its crate caches writable.
.TP
\fBexec snug \-\-report report.json \-\-timeout 30m \-\- make test\fR
In a CI job script: the job's TERM reaches snug itself, and the report is complete.
.TP
\fBsnug \-\-dry\-run \-\- make\fR
Print the mode, the policy and the bwrap command line; start nothing.
.SH "SEE ALSO"
bwrap(1)
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
