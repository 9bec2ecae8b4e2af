//! Shell completions and the man pages: options and subcommands from the clap definition at
//! run time, the reference from the README the binary was built with (SPEC O7), so neither
//! can disagree with the binary that prints them. `make install` writes them with `snug
//! completions SHELL` and `snug manpage --dir DIR`.

use std::path::Path;

mod reference;
mod zsh;

/// The completion script for `shell` (clap_complete), with, for bash, zsh and fish, the names
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
        clap_complete::Shell::Zsh => text = zsh::with_names(&text),
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
complete -c snug -n '__fish_seen_subcommand_from profile; and __fish_seen_subcommand_from show' -x -a '(snug profile list --names 2>/dev/null)'
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
    if top {
        // The README's reference, EXIT STATUS, ENVIRONMENT and FILES among it (SPEC O7).
        buf.extend_from_slice(reference::roff().as_bytes());
        buf.extend_from_slice(TOP_EXTRA.as_bytes());
    } else {
        buf.extend_from_slice(reference::exit_status().as_bytes());
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

/// What neither clap nor the README's reference says: the home directory rule (roff).
const TOP_EXTRA: &str = r#".SH "THE HOME DIRECTORY"
DIR may not be $HOME, a directory above it, or /: DIR is writable, so that would make
\fI~/.ssh\fR and \fI~/.bashrc\fR writable (exit 64). Run in a project directory and show
what the payload needs from the home on purpose: \fB\-\-ro ~/.gitconfig\fR, a toolchain
profile (\fB\-p @rust\fR), or \fB\-\-rw\fR of one directory it must write.
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
