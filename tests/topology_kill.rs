//! snug's process tree under attack: SIGKILL of snug at any moment, or of a stopped tree,
//! leaves no sandbox process (K1, K2); signals never cross the sandbox's border, neither
//! snug's relay (K4) nor a payload's `kill(0)`/`kill(-1)` (X1). Every row runs as root and
//! as the unprivileged user, each with a positive control that runs every time: the same
//! scenario under plain bwrap or without snug, where the assertion is shown to fail.
//! Processes are found by a unique marker in their command line: snug's, nest's (a clone
//! of snug), bwrap's, init's and the payload's all carry it.

use crate::common;

use common::*;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(10);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// When K1 kills snug.
#[derive(Clone, Copy, Debug)]
enum Moment {
    /// This long after the spawn.
    After(Duration),
    /// This long after `-v` reported the payload started.
    Steady(Duration),
    /// 300 ms into the grace of a payload that ignores TERM.
    Grace,
}

/// One K1 run: `snug -v -- sleep M`, SIGKILL at `at`; Ok(how far the start had got) when
/// nothing carrying M is alive 100 ms after the kill, else Err(the survivors).
fn kill_at(who: Who, dir: &Path, at: Moment) -> Result<&'static str, String> {
    let m = marker();
    let ignores_term = format!("trap '' TERM; sleep {m}");
    let payload: &[&str] = match at {
        Moment::Grace => &["--", "sh", "-c", &ignores_term],
        _ => &["--", "sleep", &m],
    };
    let (mut cmd, log) = snug_verbose(who, dir, payload);
    let mut child = spawn_own_group(&mut cmd);
    // Kept, each of the three: the moment of the SIGKILL is what K1 varies, counted from a
    // readiness marker where there is one (the log's "payload started", "grace started").
    match at {
        Moment::After(d) => std::thread::sleep(d),
        Moment::Steady(d) => {
            until(LIMIT, || read_text(&log).contains("payload started"));
            std::thread::sleep(d);
        }
        Moment::Grace => {
            until(LIMIT, || read_text(&log).contains("payload started"));
            kill(child.id(), libc::SIGTERM);
            until(LIMIT, || read_text(&log).contains("grace started"));
            std::thread::sleep(ms(300));
        }
    }
    kill(child.id(), libc::SIGKILL);
    let killed = Instant::now();
    let _ = child.wait();
    let left = survivors(&m, killed);
    let text = read_text(&log);
    let _ = std::fs::remove_file(&log);
    if !left.is_empty() {
        return Err(format!("{at:?}: alive 100 ms after SIGKILL: {left:?}; log: {text}"));
    }
    Ok(if text.contains("grace started") {
        "in the grace"
    } else if text.contains("payload started") {
        "payload running"
    } else if text.contains("tree:") {
        "init up, payload not yet"
    } else {
        "before init was up"
    })
}

/// K1: SIGKILL of snug at 40 moments 0–500 ms after the spawn (12.5 ms apart, the
/// unprivileged run offset by 6 ms), 20 more over the start (0–40 ms, 2 ms apart), three in
/// steady state and one in the grace: 100 ms later no process of that run (nest, bwrap,
/// init, payload) is alive. Runs in 4 parallel batches. Positive control, each run: SIGKILL
/// of plain bwrap (no `--die-with-parent`) leaves its sandbox running. Note: init also ends
/// when snug's end of the channel closes, so even with both parent-death signals removed
/// (nest's prctl and bwrap's `--die-with-parent`) only the odd moment fails here; K2 is the
/// row that catches that mutation every time.
#[test]
fn k1_sigkill_at_any_moment_leaves_nothing() {
    let mut failures = Vec::new();
    for (k, who) in everyone().into_iter().enumerate() {
        let dir = workdir(who);
        let m = marker();
        let mut c = plain_bwrap(who, dir.path(), true, &["sleep", &m]);
        let mut child = spawn_own_group(&mut c);
        until(LIMIT, || running(&format!("sleep {m}")));
        kill(child.id(), libc::SIGKILL);
        let killed = Instant::now();
        let _ = child.wait();
        assert!(
            !survivors(&m, killed).is_empty(),
            "{who:?}: control: plain bwrap's sandbox should outlive its SIGKILL"
        );

        let offset = 6 * k as u64;
        let mut moments: Vec<Moment> =
            (0..40).map(|i| Moment::After(Duration::from_micros(i * 12_500) + ms(offset))).collect();
        // The start itself (clone, nest, bwrap, init) takes the first ~30 ms: sweep it densely.
        moments.extend((0..20).map(|i| Moment::After(ms(2 * i + k as u64))));
        moments.extend([Moment::Steady(ms(20)), Moment::Steady(ms(300)), Moment::Steady(ms(700)), Moment::Grace]);
        let t = Instant::now();
        let results: Vec<Result<&str, String>> = std::thread::scope(|s| {
            let batches: Vec<_> = (0..4)
                .map(|b| {
                    let (moments, dir) = (&moments, dir.path());
                    s.spawn(move || {
                        moments.iter().skip(b).step_by(4).map(|&at| kill_at(who, dir, at)).collect::<Vec<_>>()
                    })
                })
                .collect();
            batches.into_iter().flat_map(|h| h.join().expect("batch")).collect()
        });
        let mut phases = std::collections::BTreeMap::new();
        for r in results {
            match r {
                Ok(phase) => *phases.entry(phase).or_insert(0) += 1,
                Err(e) => failures.push(format!("{who:?} {e}")),
            }
        }
        eprintln!("K1 {who:?}: {} kills in {:?}, by phase reached: {phases:?}", moments.len(), t.elapsed());
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// SIGSTOP every pid in `pids` and wait until all show state T.
fn stop_all(pids: &[i32]) -> bool {
    for &p in pids {
        kill(p as u32, libc::SIGSTOP);
    }
    until(LIMIT, || pids.iter().all(|&p| proc_state(p) == Some('T')))
}

/// K2: SIGSTOP every process of the run (snug, bwrap, init, payload), then SIGKILL snug:
/// nothing survives 100 ms later; the same with only the sandbox (init and payload) stopped,
/// as a ^Z leaves it. Positive controls: each run, the whole-tree case against plain bwrap
/// (no `--die-with-parent`) leaves the stopped sandbox behind; once, by mutation: without
/// nest's `PR_SET_PDEATHSIG` the sandbox-only case fails with "survived: [bwrap …, init …,
/// sleep …]" (the whole-tree case still passes then: the kernel hangs up bwrap's orphaned,
/// stopped process group).
#[test]
fn k2_sigkill_of_a_stopped_tree_leaves_nothing() {
    for who in everyone() {
        let dir = workdir(who);
        let m = marker();
        // `--new-session`: otherwise the stopped group that bwrap's death orphans gets SIGHUP
        // and SIGCONT from the kernel (POSIX orphaned process groups), which ends it anyway.
        let flags = [
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-pid",
            "--new-session",
            "--",
            "sleep",
            &m,
        ];
        let mut c = cmd_as(who, dir.path(), "bwrap", &flags);
        let mut child = spawn_own_group(&mut c);
        until(LIMIT, || running(&format!("sleep {m}")));
        assert!(stop_all(&pids_with(&m)), "{who:?}: control tree did not stop");
        kill(child.id(), libc::SIGKILL);
        let killed = Instant::now();
        let _ = child.wait();
        assert!(!survivors(&m, killed).is_empty(), "{who:?}: control: plain bwrap's stopped sandbox should survive");

        for whole_tree in [true, false] {
            let m = marker();
            let (mut c, log) = snug_verbose(who, dir.path(), &["--", "sleep", &m]);
            let mut child = spawn_own_group(&mut c);
            assert!(
                until(LIMIT, || read_text(&log).contains("payload started") && running(&format!("sleep {m}"))),
                "{who:?}: {}",
                read_text(&log)
            );
            let text = read_text(&log);
            let tree = match whole_tree {
                // snug and the payload carry the marker; bwrap's and init's command lines do
                // not (the payload's argv reaches init in a memfd, SPEC R7).
                true => {
                    let mut t = pids_with(&m);
                    t.extend(["bwrap pid ", "init pid "].iter().filter_map(|k| logged_pid(&text, k)));
                    t
                }
                false => ["init pid ", "payload started: pid "].iter().filter_map(|k| logged_pid(&text, k)).collect(),
            };
            let stopped = stop_all(&tree);
            kill(child.id(), libc::SIGKILL);
            let killed = Instant::now();
            let _ = child.wait();
            let left = survivors(&m, killed);
            assert!(
                tree.len() >= if whole_tree { 4 } else { 2 } && stopped,
                "{who:?}: tree {tree:?} stopped {stopped}"
            );
            assert!(left.is_empty(), "{who:?} (whole tree stopped: {whole_tree}): survived: {left:?}");
        }
    }
}

/// K4: snug's relay reaches the sandbox group only, never the caller's group snug lives in:
/// a TERM sent to snug alone ends the payload while a sibling in snug's own process group
/// keeps running. Positive control, each run: a naive wrapper that relays to its own group
/// (`kill -TERM 0`) takes the sibling with it; fails without the fix, by mutation (snug's signal
/// to the sandbox group replaced by `kill(0, sig)`): "snug's relay killed a process of its
/// caller's group". The line to mutate is the one that turns a relay decision into the
/// group signal (`Order::Signal` in src/supervise.rs).
#[test]
fn k4_relay_never_reaches_the_callers_group() {
    for who in everyone() {
        let snug = snug_for(who);
        let dir = workdir(who);
        let (m, sib) = (marker(), marker());
        let naive = format!("trap 'trap - TERM; kill -TERM 0' TERM; sleep {m} & wait");
        let snugged = format!("exec {} -- sleep {m}", snug.display());
        for (name, script) in [("naive", naive), ("snug", snugged)] {
            let mut c = cmd_as(who, dir.path(), "sh", &["-c", &script]);
            let mut child = spawn_own_group(&mut c);
            let mut s = cmd_as(who, dir.path(), "sleep", &[&sib]);
            let mut sibling = s.process_group(child.id() as i32).spawn().expect("sibling");
            // Both running under their final uid (setpriv is still root before its exec).
            until(LIMIT, || running(&format!("sleep {m}")) && running(&format!("sleep {sib}")));
            kill(child.id(), libc::SIGTERM);
            let st = wait_bounded(&mut child, LIMIT);
            let sibling_alive = if name == "naive" {
                // The control's `kill -TERM 0` is sent before the wrapper exits: wait for its effect.
                ended_within(&mut sibling, LIMIT).is_none()
            } else {
                // Kept: a check that the sibling does NOT die within 0.1 s of snug's end.
                std::thread::sleep(ms(100));
                sibling.try_wait().ok().flatten().is_none()
            };
            let _ = sibling.kill();
            let _ = sibling.wait();
            reap_leftovers(&m);
            if name == "naive" {
                assert!(!sibling_alive, "{who:?}: control: the naive wrapper should kill its group");
            } else {
                assert_eq!(
                    st.and_then(|s| s.signal()),
                    Some(libc::SIGTERM),
                    "{who:?}: snug should die of the relayed TERM"
                );
                assert!(sibling_alive, "{who:?}: snug's relay killed a process of its caller's group");
            }
        }
    }
}

/// `bash -c 'set -m; SCRIPT'` in its own process group, with `{snug}` in SCRIPT standing for
/// snug run as `who` and `{as}` for running a command as `who`.
fn job_control(who: Who, dir: &Path, script: &str) -> Out {
    let words = as_words(who);
    let script = script.replace("{snug}", &format!("{words}{}", snug_for(who).display())).replace("{as}", &words);
    run_bounded(Command::new("bash").args(["-c", &format!("set -m; {script}")]).current_dir(dir), LIMIT)
}

/// X1: from inside, `kill -KILL 0` reaches only the sandbox: with job control the pipeline
/// `snug … | { cat >/dev/null; echo alive; }` has its own group, and its right side prints
/// `alive` once the left side has ended (the pipe's end of file);
/// a sibling started beside snug survives. Positive control, each run: the same pipeline
/// without snug kills its right side; once, by mutation: without nest's `setpgid(0, 0)` and
/// init's `setsid()` the sandbox shares the pipeline's group and this fails (no `alive`).
#[test]
fn x1_kill_zero_stays_inside() {
    for who in everyone() {
        let dir = workdir(who);
        let o = job_control(who, dir.path(), r#"sh -c "kill -KILL 0" | { cat >/dev/null; echo alive; }"#);
        assert!(!o.out.contains("alive"), "{who:?}: control: kill 0 should end the pipeline");
        let sib = marker();
        let script = format!(
            r#"{{as}}sleep {sib} & s=$!; {{snug}} -- sh -c "kill -KILL 0" | {{ cat >/dev/null; echo alive; }}; echo "snug=${{PIPESTATUS[0]}}"; kill -0 $s && echo sibling; kill $s"#
        );
        let o = job_control(who, dir.path(), &script);
        reap_leftovers(&sib);
        assert!(o.out.contains("alive\n") && o.out.contains("sibling\n"), "{who:?}: {:?} {}", o.out, o.err);
        assert!(o.out.contains("snug=137"), "{who:?}: snug should die of the payload's SIGKILL: {:?}", o.out);
    }
}

/// X1: from inside, `kill -KILL -1` reaches only sandbox processes (a background job inside
/// dies; init, snug, the pipeline's right side and a same-uid sibling outside survive).
/// Positive control, each run (as root): the same script without snug, as a throwaway uid,
/// kills that uid's sibling and pipeline.
#[test]
fn x1_kill_minus_one_stays_inside() {
    for who in everyone() {
        let dir = workdir(who);
        let (sib, inner) = (marker(), marker());
        if is_root() {
            let script =
                format!(r#"sleep {sib} & sh -c "kill -KILL -1" | {{ cat >/dev/null; echo alive; }}; echo end"#);
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid=54321",
                "--regid=54321",
                "--clear-groups",
                "--",
                "bash",
                "-c",
                &format!("set -m; {script}"),
            ]);
            let o = run_bounded(c.current_dir("/"), LIMIT);
            let left = survivors(&sib, Instant::now());
            assert!(
                !o.out.contains("alive") && left.is_empty(),
                "{who:?}: control: kill -1 should reach the uid's processes"
            );
        }
        let script = format!(
            r#"{{as}}sleep {sib} & s=$!; {{snug}} -- sh -c "sleep {inner} & p=\$!; kill -KILL -1; wait \$p; echo inside=\$?" | {{ cat; echo alive; }}; echo "snug=${{PIPESTATUS[0]}}"; kill -0 $s && echo sibling; kill $s"#
        );
        let o = job_control(who, dir.path(), &script);
        reap_leftovers(&sib);
        reap_leftovers(&inner);
        assert!(
            o.out.contains("alive\n") && o.out.contains("inside=137\n") && o.out.contains("sibling\n"),
            "{who:?}: {:?} {}",
            o.out,
            o.err
        );
        assert!(o.out.contains("snug=0"), "{who:?}: {:?}", o.out);
    }
}

/// X1: host pids are invisible from inside: `kill -0` of a live same-uid process and of the
/// test process fails with ESRCH ("No such process"). Positive control, each run: the same
/// `kill -0` outside snug succeeds.
#[test]
fn x1_host_pids_are_invisible() {
    for who in everyone() {
        let dir = workdir(who);
        let sib = marker();
        let mut sibling = cmd_as(who, dir.path(), "sleep", &[&sib]).spawn().expect("sibling");
        let pid = sibling.id().to_string();
        until(LIMIT, || running(&format!("sleep {sib}"))); // past setpriv's change of uid
        let o = run_bounded(&mut cmd_as(who, dir.path(), "kill", &["-0", &pid]), LIMIT);
        assert!(o.status.success(), "{who:?}: control: kill -0 {pid} outside: {}", o.err);
        for target in [pid.clone(), std::process::id().to_string()] {
            let o = run_bounded(&mut snug_cmd(who, dir.path(), &["--", "kill", "-0", &target]), LIMIT);
            assert!(
                !o.status.success() && o.err.contains("No such process"),
                "{who:?}: kill -0 {target} inside: {:?} {}",
                o.status,
                o.err
            );
        }
        let _ = sibling.kill();
        let _ = sibling.wait();
    }
}
