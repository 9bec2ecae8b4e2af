//! The grace (SPEC G2–G5) and its log (O4): what happens between the first INT/TERM/HUP and
//! snug's end.

use crate::common::{everyone, marker};
use crate::relay::kit::{ms, sh, How, Run};
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

const TERM: i32 = libc::SIGTERM;
const SETTLE: Duration = Duration::from_secs(10);

/// A payload whose handler runs only if the whole group is signalled: the foreground `sleep`
/// must die for `sh` to run its trap.
fn trap_behind_child(mark: &str) -> Vec<String> {
    sh(&format!("trap 'echo T; exit 7' TERM; sleep {mark}"))
}

/// A payload that ignores TERM, and so does its foreground child.
fn ignoring(mark: &str) -> Vec<String> {
    sh(&format!("trap '' TERM; sleep {mark}"))
}

#[test]
fn g5_handler_runs_behind_blocking_child() {
    for who in everyone() {
        let mark = marker();
        let mut run = Run::start(who, How::snug(), &mark, &trap_behind_child(&mark));
        run.sleepers(1);
        let sent = run.signal(TERM);
        let (st, at) = run.end(SETTLE);
        println!("G5 {who:?}: exit {:?} {} ms after TERM", st.code(), ms(sent, at));
        assert_eq!(st.code(), Some(7), "{who:?}: {st:?}; stderr: {}", run.stderr());
        assert_eq!(run.read("stdout"), "T\n", "{who:?}");
        assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());

        // Positive control: plain bwrap relays nothing; TERM kills it and the handler never runs.
        let mark = marker();
        let mut ctl = Run::start(who, How::bwrap(&["--die-with-parent"]), &mark, &trap_behind_child(&mark));
        ctl.sleepers(1);
        ctl.signal(TERM);
        let (st, _) = ctl.end(SETTLE);
        assert!(st.code() != Some(7) && ctl.read("stdout").is_empty(), "control: bwrap ran the handler? {st:?}");
    }
}

#[test]
fn g3_ignoring_payload_torn_down_after_grace() {
    for who in everyone() {
        let mark = marker();
        let mut run = Run::start(who, How::snug(), &mark, &ignoring(&mark));
        run.sleepers(1);
        let sent = run.signal(TERM);
        let (st, at) = run.end(SETTLE);
        let took = ms(sent, at);
        println!("G3 {who:?}: snug gone {took} ms after TERM (SPEC: 1000, <= 1100)");
        assert_eq!(st.signal(), Some(TERM), "{who:?}: {st:?}; stderr: {}", run.stderr());
        assert!((900..=1300).contains(&took), "{who:?}: gone after {took} ms, want about 1000");
        assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());

        // Positive control (timing): plain bwrap has no grace; it is gone well before 900 ms.
        let mark = marker();
        let mut ctl = Run::start(who, How::bwrap(&["--die-with-parent"]), &mark, &ignoring(&mark));
        ctl.sleepers(1);
        let sent = ctl.signal(TERM);
        let (_, at) = ctl.end(SETTLE);
        assert!(ms(sent, at) < 900, "control: bwrap took {} ms", ms(sent, at));

        // Positive control (leftovers): bwrap without --die-with-parent leaves the payload
        // behind, and the marker check sees it.
        let mark = marker();
        let mut ctl = Run::start(who, How::bwrap(&[]), &mark, &ignoring(&mark));
        ctl.sleepers(1);
        ctl.signal(TERM);
        ctl.end(SETTLE);
        assert!(!ctl.left().is_empty(), "control: the leftover check saw nothing");
    }
}

#[test]
fn g4_second_signal_tears_down_at_once() {
    for who in everyone() {
        let mark = marker();
        let mut run = Run::start(who, How::snug(), &mark, &ignoring(&mark));
        run.sleepers(1);
        let first = run.signal(TERM);
        // Kept: pacing; the second TERM comes 0.2 s into the grace, as a person's would.
        std::thread::sleep(Duration::from_millis(200));
        let second = run.signal(TERM);
        let (st, at) = run.end(SETTLE);
        let took = ms(second, at);
        println!("G4 {who:?}: snug gone {took} ms after the second TERM ({} ms after the first)", ms(first, at));
        assert_eq!(st.signal(), Some(TERM), "{who:?}: {st:?}; stderr: {}", run.stderr());
        assert!(took <= 150, "{who:?}: gone {took} ms after the second TERM (SPEC: 50)");
        assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());

        // Positive control: without the second TERM (a snug that let the grace run) snug is
        // still there 150 ms after the moment the second would have come.
        let mark = marker();
        let mut ctl = Run::start(who, How::snug(), &mark, &ignoring(&mark));
        ctl.sleepers(1);
        ctl.signal(TERM);
        // Kept: a check that snug does NOT end within 0.35 s of one TERM.
        std::thread::sleep(Duration::from_millis(350));
        assert!(ctl.running(), "control: snug ended early without a second signal");
    }
}

/// Main shell exits at once on TERM with `code`; a background subshell takes 0.3 s to clean
/// up (its own TERM handler) and writes `child-done`. Each waits in `wait` (which a trap
/// interrupts) on its own `sleep MARK`.
fn slow_child_cleanup(mark: &str, code: i32) -> Vec<String> {
    sh(&format!(
        "(trap 'sleep 0.3; echo child-done >> out' TERM; sleep {mark} & wait) & \
         trap 'exit {code}' TERM; sleep {mark} & wait"
    ))
}

#[test]
fn g2_child_cleanup_finishes_after_main_ended() {
    for who in everyone() {
        for code in [0, 3] {
            let mark = marker();
            let mut run = Run::start(who, How::snug(), &mark, &slow_child_cleanup(&mark, code));
            run.sleepers(2);
            let sent = run.signal(TERM);
            let (st, at) = run.end(SETTLE);
            let took = ms(sent, at);
            println!(
                "G2 {who:?}: main exit {code}, child cleanup 300 ms: snug exit {:?} {took} ms after TERM",
                st.code()
            );
            assert_eq!(st.code(), Some(code), "{who:?}: {st:?}; stderr: {}", run.stderr());
            assert_eq!(run.read("out"), "child-done\n", "{who:?}: the child's cleanup did not finish");
            // It waited for the child, and ended as soon as the sandbox was empty.
            assert!((280..700).contains(&took), "{who:?}: gone {took} ms after TERM, want 300 to well under 1000");
            assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());
        }

        // Positive control: a launcher that ends with the main process (plain bwrap, whose
        // pid 1 exits when its child does, like tini) cuts the child's cleanup short. The
        // TERM goes to the payload's group directly, as a relay would send it.
        let mark = marker();
        let mut ctl =
            Run::start(who, How::bwrap(&["--die-with-parent", "--new-session"]), &mark, &slow_child_cleanup(&mark, 0));
        ctl.sleepers(2);
        let group = ctl.payload_group().expect("control: payload group");
        // The group of a sandbox process found by the run's marker.
        crate::common::kill_group(group, TERM);
        ctl.end(SETTLE);
        // Kept: a check that the child's cleanup does NOT finish within 0.5 s.
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(ctl.read("out"), "", "control: the child's cleanup finished under plain bwrap");
    }
}

#[test]
fn g2_exit_zero_and_main_status_kept_through_teardown() {
    for who in everyone() {
        // A payload that traps TERM and exits 0 makes snug exit 0, promptly.
        let mark = marker();
        let mut run = Run::start(who, How::snug(), &mark, &sh(&format!("trap 'exit 0' TERM; sleep {mark}")));
        run.sleepers(1);
        let sent = run.signal(TERM);
        let (st, at) = run.end(SETTLE);
        println!("G2 {who:?}: trap 'exit 0': snug exit {:?} {} ms after TERM", st.code(), ms(sent, at));
        assert_eq!(st.code(), Some(0), "{who:?}: {st:?}; stderr: {}", run.stderr());
        assert!(ms(sent, at) < 500, "{who:?}: {} ms", ms(sent, at));
        assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());

        // The main process exits 4 at once, a child ignores TERM: teardown at the end of the
        // grace, and snug still ends as the main process did (exit 4, not death by TERM).
        let mark = marker();
        let script = format!("(trap '' TERM; sleep {mark}) & trap 'exit 4' TERM; sleep {mark} & wait");
        let mut run = Run::start(who, How::snug(), &mark, &sh(&script));
        run.sleepers(2);
        let sent = run.signal(TERM);
        let (st, at) = run.end(SETTLE);
        let took = ms(sent, at);
        println!("G2 {who:?}: main exit 4, child ignores TERM: snug exit {:?} {took} ms after TERM", st.code());
        assert_eq!(st.code(), Some(4), "{who:?}: {st:?}; stderr: {}", run.stderr());
        assert!((900..=1300).contains(&took), "{who:?}: gone after {took} ms, want the grace (1000)");
        assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());

        // Positive control: under plain bwrap the same TERM never reaches the handler, so
        // the exit is not the payload's 0.
        let mark = marker();
        let mut ctl = Run::start(
            who,
            How::bwrap(&["--die-with-parent"]),
            &mark,
            &sh(&format!("trap 'exit 0' TERM; sleep {mark}")),
        );
        ctl.sleepers(1);
        ctl.signal(TERM);
        let (st, _) = ctl.end(SETTLE);
        assert_ne!(st.code(), Some(0), "control: bwrap exited 0");
    }
}

/// `-v` lines: (milliseconds, text).
fn events(stderr: &str) -> Vec<(f64, String)> {
    stderr
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("snug: [")?;
            let (ms, text) = rest.split_once(" ms] ")?;
            Some((ms.trim().parse().ok()?, text.to_string()))
        })
        .collect()
}

/// The events matching each of `wanted` (substrings), in that order; panics naming the first
/// one missing.
fn in_order(evs: &[(f64, String)], wanted: &[&str]) -> Vec<f64> {
    let mut at = 0;
    let mut times = Vec::new();
    for w in wanted {
        match evs[at..].iter().position(|(_, t)| t.contains(w)) {
            Some(i) => {
                times.push(evs[at + i].0);
                at += i + 1;
            }
            None => panic!("no {w:?} after event {at} in {evs:#?}"),
        }
    }
    times
}

#[test]
fn o4_verbose_logs_signal_events_in_order() {
    for who in everyone() {
        // G3-style: received (with origin), grace started, relayed, grace over, teardown.
        let mark = marker();
        let mut run = Run::start(who, How::verbose(), &mark, &ignoring(&mark));
        run.sleepers(1);
        run.signal(TERM);
        let (st, _) = run.end(SETTLE);
        assert_eq!(st.signal(), Some(TERM), "{who:?}");
        let evs = events(&run.stderr_all());
        let me = std::process::id();
        let t = in_order(
            &evs,
            &[
                &format!("received SIGTERM from process {me}"),
                "grace started",
                "relayed SIGTERM",
                "grace over",
                "teardown",
            ],
        );
        println!("O4 {who:?}: received at {:.3} ms, teardown {:.1} ms later", t[0], t[4] - t[0]);
        assert!(evs.windows(2).all(|w| w[0].0 <= w[1].0), "{who:?}: timestamps go back: {evs:#?}");
        assert!((950.0..1300.0).contains(&(t[4] - t[0])), "{who:?}: teardown {} ms after receipt", t[4] - t[0]);

        // G5-style: the payload's end is logged with its status.
        let mark = marker();
        let mut run = Run::start(who, How::verbose(), &mark, &trap_behind_child(&mark));
        run.sleepers(1);
        run.signal(TERM);
        run.end(SETTLE);
        let evs = events(&run.stderr_all());
        in_order(&evs, &["received SIGTERM from process", "relayed SIGTERM", "payload ended: exit 7"]);

        // Positive control: without -v there is none of it.
        let mark = marker();
        let mut ctl = Run::start(who, How::snug(), &mark, &ignoring(&mark));
        ctl.sleepers(1);
        ctl.signal(TERM);
        ctl.end(SETTLE);
        assert!(events(&ctl.stderr_all()).is_empty(), "control: events without -v");
    }
}

/// G3/G4 when init does not read its orders: an outside actor SIGSTOPs the sandbox's init, then
/// 600 USR1 and a TERM reach snug. The relays pile up in init's socket; snug must queue them
/// rather than block, and still tear down at the end of the grace. Positive control (run once
/// without the fix): with blocking sends snug hung in `sendmsg` and was "still running 5 s
/// after TERM".
#[test]
fn g3_grace_holds_when_init_is_stopped_and_relays_pile_up() {
    use crate::common::{kill, logged_pid, read_text, snug_verbose, spawn_own_group, until, wait_bounded, workdir};
    for who in everyone() {
        let dir = workdir(who);
        let mark = marker();
        let (mut cmd, log) = snug_verbose(who, dir.path(), &["--", "sh", "-c", &format!("trap '' USR1; sleep {mark}")]);
        let mut run = spawn_own_group(&mut cmd);
        let mut init = None;
        let up = until(Duration::from_secs(5), || {
            init = logged_pid(&read_text(&log), "init pid ");
            read_text(&log).contains("payload started")
        });
        if !up {
            let _ = run.kill();
            panic!("{who:?}: snug never logged the payload's start: {}", read_text(&log));
        }
        let init = init.expect("init pid logged");
        // `init` is this run's init (from its own -v log).
        kill(init as u32, libc::SIGSTOP);
        let stopped = until(Duration::from_secs(5), || crate::common::proc_state(init) == Some('T'));
        assert!(stopped, "{who:?}: init {init} did not stop");
        for _ in 0..600 {
            kill(run.id(), libc::SIGUSR1);
            // Kept: pacing, so that snug reads each one (pending signals of one kind merge).
            std::thread::sleep(Duration::from_millis(2));
        }
        let sent = std::time::Instant::now();
        kill(run.id(), TERM);
        let status = wait_bounded(&mut run, Duration::from_secs(5));
        let took = sent.elapsed().as_millis();
        println!("G3 {who:?}: init stopped, 600 relays queued: gone {took} ms after TERM");
        let status = status.unwrap_or_else(|| panic!("{who:?}: snug still running 5 s after TERM"));
        assert_eq!(status.signal(), Some(TERM), "{who:?}: {status:?}");
        assert!((900..=1300).contains(&took), "{who:?}: gone after {took} ms");
        assert!(until(Duration::from_millis(500), || !crate::common::alive(&mark)), "{who:?}: left running");
    }
}

/// G4: signals sent while snug could not act on them (stopped, as a ^Z'd job is when bash
/// sends it HUP, TERM and CONT because its terminal closed) are one request, not a first
/// and a second: read together, HUP starts the grace, TERM is relayed under it, and the
/// payload's TERM handler (0.3 s of cleanup) finishes: snug exits 3. A TERM sent after that
/// would tear down (`g4_second_signal_tears_down_at_once`). Positive control: against the
/// build that counted the TERM read with the HUP as the second signal, snug tore down at once
/// and died of SIGTERM, `out` without DONE.
#[test]
fn g4_signals_sent_while_snug_was_stopped_are_one_request() {
    for who in everyone() {
        let mark = marker();
        let script = format!(
            "trap 'echo HUP >> out' HUP; trap 'echo TERM >> out; sleep 0.3; echo DONE >> out; exit 3' TERM; \
             while :; do sleep {mark} & wait; done"
        );
        let mut run = Run::start(who, How::snug(), &mark, &sh(&script));
        run.sleepers(1);
        run.signal(libc::SIGSTOP);
        let stopped = crate::common::until(SETTLE, || crate::common::stat(run.pid).is_some_and(|s| s.state == 'T'));
        assert!(stopped, "{who:?}: snug did not stop");
        for sig in [libc::SIGHUP, TERM, libc::SIGCONT] {
            run.signal(sig);
        }
        let (st, _) = run.end(SETTLE);
        assert_eq!(st.code(), Some(3), "{who:?}: {st:?}; out: {:?}; stderr: {}", run.read("out"), run.stderr());
        assert!(run.read("out").ends_with("TERM\nDONE\n"), "{who:?}: out: {:?}", run.read("out"));
        assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());
    }
}

/// G4: `kill -TERM snug; kill -INT snug` back to back from a script, snug running: the INT is
/// the second signal every time (teardown at once), however close the two come and whether
/// snug reads them in one read or two. Positive control: against the build that counted any
/// signals read together as one request, the same pair gave the 1 s grace in about half the
/// runs (a tester: 6 of 12).
#[test]
fn g4_two_signals_back_to_back_are_a_first_and_a_second() {
    for who in everyone() {
        for round in 0..4 {
            let mark = marker();
            let mut run = Run::start(who, How::snug(), &mark, &ignoring_all(&mark));
            run.sleepers(1);
            let first = run.signal(TERM);
            run.signal(libc::SIGINT);
            let (st, at) = run.end(SETTLE);
            let took = ms(first, at);
            assert!(took < 500, "{who:?} round {round}: gone {took} ms after the pair: the INT was no second signal");
            assert!(st.signal().is_some(), "{who:?}: {st:?}");
            assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());
        }
    }
}

/// A payload that ignores INT, TERM and HUP, and so does its foreground child.
fn ignoring_all(mark: &str) -> Vec<String> {
    sh(&format!("trap '' INT TERM HUP; sleep {mark}"))
}
