//! zsh's completion of the names clap cannot know (SPEC O7): profile names after `-p` and
//! `profile show`, live run names after `stop`, `signal`, `exec`, kept runs after `diff`,
//! `apply`, `discard`, asked of snug itself at completion time. clap's script completes them
//! with `_default` (files); each such action becomes a function below, which offers the
//! names alone and lets zsh match the word typed so far (`@py` → `@python`), so a name that
//! is not a profile (a host, a file) is never offered (`zshcompsys(1)`, `compadd`).

/// The functions, defined before clap's script registers `_snug`.
const FUNCTIONS: &str = r#"
# Profile names after -p, live run names after stop/signal/exec, kept runs after diff/apply/discard.
(( $+functions[_snug_names] )) ||
_snug_names() {
    local -a names
    names=(${(f)"$(${words[1]} "$@" 2>/dev/null)"})
    compadd -a names
}
_snug_profiles() { _snug_names profile list --names }
_snug_runs() { _snug_names ps --names }
_snug_kept() { _snug_names diff --names }
"#;

/// clap's zsh script with the actions of profile and run names replaced by [`FUNCTIONS`]'.
pub fn with_names(clap: &str) -> String {
    let mut out = String::with_capacity(clap.len() + FUNCTIONS.len());
    for line in clap.lines() {
        let kind = if line.starts_with("'*-p+[")
            || line.starts_with("'*--profile=[")
            || line.contains(":name -- Profile name")
        {
            Some("_snug_profiles")
        } else if line.contains(":name -- The sandbox") {
            Some("_snug_runs")
        } else if line.contains(":name -- The kept run") {
            Some("_snug_kept")
        } else {
            None
        };
        match kind.filter(|_| line.contains(":_default'")) {
            Some(f) => out.push_str(&line.replacen(":_default'", &format!(":{f}'"), 1)),
            None => {
                if line.starts_with("if [ \"$funcstack[1]\" = \"_snug\" ]") {
                    out.push_str(FUNCTIONS.trim_start());
                    out.push('\n');
                }
                out.push_str(line);
            }
        }
        out.push('\n');
    }
    out
}
