//! SPEC R1, O8: `snug` with no command runs the caller's shell, whose prompt says it is in a
//! sandbox and names the run; `@shell` shows the caller's rc files read-only.

use crate::common::{code, snug_for, workdir, Who};
use crate::everyday::{chown_to, each, fresh_dir, run, snug_with};
use crate::pty::{Term, PROMPT};

/// R1: the default shell (bash, through a real pty) prompts `(snug NAME) DIR#`. Control: the
/// same bash as an explicit command keeps bash's own prompt.
/// Fails without the fix: the prompt is `bash-5.2#` (no sign of the sandbox).
#[test]
fn r1_default_shell_prompt_names_the_run() {
    each(&|who: Who| {
        let dir = workdir(who);
        let mut t = Term::start(who, dir.path(), "prompt");
        let snug = snug_for(who);
        t.line(&format!("SHELL=/bin/bash {} --name promptrun", snug.display()));
        t.expect("(snug promptrun) ");
        t.line("echo inside-$((6*7))");
        t.expect("inside-42");
        t.line("exit");
        t.expect(PROMPT);
        t.line(&format!("{} -- /bin/bash -i", snug.display()));
        t.expect("bash-");
        t.reject("(snug ");
        t.line("exit");
        t.expect(PROMPT);
    });
}

/// `@shell`: the caller's ~/.bashrc and ~/.vimrc are readable, read-only; one that does not
/// exist (~/.zshrc) is simply not there; `EDITOR` passes. Control: without `@shell`, ~/.bashrc is not there.
/// Fails without the fix: `unknown profile @shell`, exit 77.
#[test]
fn o8_shell_profile_shows_rc_files_read_only() {
    each(&|who: Who| {
        let dir = workdir(who);
        let home = fresh_dir(who, "home");
        for (f, text) in [(".bashrc", "PS1=mine\n"), (".vimrc", "set nu\n")] {
            std::fs::write(home.join(f), text).expect("rc");
            chown_to(who, &home.join(f));
        }
        let read =
            "cat ~/.bashrc ~/.vimrc && ! test -e ~/.zshrc && ! (echo x >> ~/.bashrc) 2>/dev/null && echo $EDITOR";
        let env = [("EDITOR", "vi")];
        let out = run(&mut snug_with(who, dir.path(), &home, &env, &["-p", "@shell", "--", "sh", "-c", read]));
        assert_eq!((code(out.status), out.out.as_str()), (0, "PS1=mine\nset nu\nvi\n"), "{who:?}: {}", out.err);
        let without = run(&mut snug_with(who, dir.path(), &home, &[], &["--", "sh", "-c", "cat ~/.bashrc"]));
        assert_ne!(code(without.status), 0, "{who:?}: control");
        let _ = std::fs::remove_dir_all(&home);
    });
}
