//! L3, R1: `snug exec NAME`'s shell has the run's prompt, as the run's own shell would.

use crate::common::{code, kill_if_running, marker, run_bounded, snug_cmd, spawn_own_group, until, workdir, Who};
use crate::everyday::each;
use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

/// L3: the shell `snug exec NAME` starts (no CMD) gets `PS1` naming the run, for a run whose
/// payload is not a shell (no prompt of its own). Control: `snug exec NAME -- sh -c …` (a
/// command, not the shell) gets none. Without the fix the shell was exec'd with no `PS1` at all (the probe printed nothing).
#[test]
fn l3_exec_shell_gets_the_runs_prompt() {
    each(&|who: Who| {
        let dir = workdir(who);
        let name = format!("pr-{}", marker());
        let mut run = spawn_own_group(&mut snug_cmd(
            who,
            dir.path(),
            &["--name", &name, "--", "sh", "-c", "touch ready; sleep 30"],
        ));
        assert!(until(Duration::from_secs(20), || dir.path().join("ready").exists()), "{who:?}: not ready");
        let mut c = snug_cmd(who, dir.path(), &["exec", &name]);
        c.env("SHELL", "/bin/sh").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = c.spawn().expect("exec");
        // The shell's environment as it was exec'd: a shell that is not interactive drops PS1
        // from its own variables (dash, bash), so `echo $PS1` would not show it.
        let probe = b"tr '\\0' '\\n' </proc/$$/environ | sed -n 's/^PS1=/P=/p'\n";
        child.stdin.take().unwrap().write_all(probe).unwrap();
        let out = child.wait_with_output().expect("exec output");
        let text = String::from_utf8_lossy(&out.stdout);
        let sign = if who == Who::Root { '#' } else { '$' };
        assert_eq!(text, format!("P=(snug {name}) {sign} \n"), "{who:?}: {}", String::from_utf8_lossy(&out.stderr));
        let probe = "tr '\\0' '\\n' </proc/$$/environ | sed -n 's/^PS1=/P=/p'";
        let o = run_bounded(
            &mut snug_cmd(who, dir.path(), &["exec", &name, "--", "sh", "-c", probe]),
            crate::everyday::LIMIT,
        );
        assert_eq!((code(o.status), o.out.as_str()), (0, ""), "{who:?} control: {}", o.err);
        let _ = run_bounded(&mut snug_cmd(who, dir.path(), &["stop", "--now", &name]), crate::everyday::LIMIT);
        kill_if_running(&mut run);
    });
}
