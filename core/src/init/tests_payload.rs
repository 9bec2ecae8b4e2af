//! The payload's own events as init decides them: its stops at the terminal, the pty's
//! foreground, its end, the grace's end, orphans.

use super::tests::*;
use super::*;

const GO: Event = order(Order::Go);
const fn stopped(sig: Signal) -> Event {
    Event::Child(PAYLOAD, WaitStatus::Stopped(sig))
}
const fn ended(status: WaitStatus) -> Event {
    Event::Child(PAYLOAD, status)
}
const EXEC_DONE: Event = Event::ExecError(None);
const WAIT: Config = Config { jobs: Jobs::Wait, ..DETACHED };
const GRACE_JOBS: Config = Config { jobs: Jobs::Grace, ..DETACHED };

#[test]
fn t5_stops_at_the_terminal_are_reported_once() {
    // Fails with `self.cfg.terminal` dropped from the stop's guard: "B5 detached" saw
    // [Report(Stopped(20))].
    let mut rows = Vec::new();
    for sig in [Signal::TSTP, Signal::TTIN, Signal::TTOU, Signal::STOP] {
        rows.push((sig, [report(Report::Stopped(sig))]));
    }
    for (sig, want) in &rows {
        check(&[Row { id: "T5 stop", cfg: TERMINAL, before: &[GO], procs: OWN_GROUP, ev: stopped(*sig), want }]);
    }
    check(&[
        Row {
            id: "B5 detached: a stop is nobody's business",
            cfg: DETACHED,
            before: &[GO],
            procs: IN_INIT_GROUP,
            ev: stopped(Signal::TSTP),
            want: &[],
        },
        Row {
            id: "T5 a continue is no news",
            cfg: TERMINAL,
            before: &[GO, stopped(Signal::TSTP)],
            procs: OWN_GROUP,
            ev: ended(WaitStatus::Continued),
            want: &[],
        },
        Row {
            id: "T5 fg: CONT to init's group and the payload's",
            cfg: TERMINAL,
            before: &[GO, stopped(Signal::TSTP)],
            procs: OWN_GROUP,
            ev: order(Order::Continue(Resume::Job)),
            want: &[
                Effect::Signal(Target::OwnGroup, Signal::CONT),
                Effect::Signal(Target::Group(PAYLOAD), Signal::CONT),
            ],
        },
        Row {
            id: "T5 fg, payload in init's group: one CONT to it (T6: the shell's jobs stay stopped)",
            cfg: TERMINAL,
            before: &[GO, stopped(Signal::TSTP)],
            procs: IN_INIT_GROUP,
            ev: order(Order::Continue(Resume::Job)),
            want: &[Effect::Signal(Target::OwnGroup, Signal::CONT)],
        },
    ]);
}

#[test]
fn t1_t5_t8_the_pty_foreground_goes_back_where_it_was() {
    // An interactive shell payload gave the foreground to its job 7; init takes it (^Z, or
    // snug's job went to the background) and gives it back to job 7 on `fg`.
    // Fails with `taken_from` never used (always the payload's group): "T5 back to the job"
    // saw [Foreground(2)] for [Foreground(7)].
    let procs = Fake { pgrps: &[(PAYLOAD, PAYLOAD)], front: Some(JOB), alive: &[PAYLOAD, JOB] };
    let take = order(Order::Front(false));
    let give = order(Order::Front(true));
    check(&[
        Row { id: "T5 take", cfg: TERMINAL, before: &[GO], procs, ev: take, want: &[Effect::Foreground(OWN)] },
        Row {
            id: "T5 back to the job",
            cfg: TERMINAL,
            before: &[GO, take],
            procs,
            ev: give,
            want: &[Effect::Foreground(JOB)],
        },
        Row {
            id: "T5 the job is gone: to the payload's group",
            cfg: TERMINAL,
            before: &[GO, take],
            procs: Fake { alive: &[PAYLOAD], ..procs },
            ev: give,
            want: &[Effect::Foreground(PAYLOAD)],
        },
        Row {
            id: "T5 given once: a second give goes to the payload's group",
            cfg: TERMINAL,
            before: &[GO, take, give],
            procs,
            ev: give,
            want: &[Effect::Foreground(PAYLOAD)],
        },
        Row {
            id: "T8 init had it already: nothing to remember",
            cfg: TERMINAL,
            before: &[GO, take],
            procs: Fake { front: Some(OWN), ..procs },
            ev: take,
            want: &[Effect::Foreground(OWN)],
        },
        Row {
            id: "T1 payload gone: init's group",
            cfg: TERMINAL,
            before: &[GO],
            procs: GONE,
            ev: give,
            want: &[Effect::Foreground(OWN)],
        },
        Row { id: "D1 no pty: nothing", cfg: DETACHED, before: &[GO], procs, ev: give, want: &[] },
    ]);
}

#[test]
fn r3_r5_the_end_passes_through_and_init_exits() {
    // R3: the status goes to snug as reaped, whatever it is; R5: init exits at once, so
    // the kernel kills what is left. Fails with `Leaving` dropped: every row saw
    // [Report(Exited(..)), Exit(0)].
    let ends = [
        WaitStatus::Exited(0),
        WaitStatus::Exited(7),
        WaitStatus::Exited(255),
        WaitStatus::Signaled { sig: Signal::TERM, core: false },
        WaitStatus::Signaled { sig: Signal(11), core: true },
    ];
    for status in ends {
        let want = [report(Report::Exited(status)), report(Report::Leaving), Effect::Exit(0)];
        for cfg in [DETACHED, TERMINAL] {
            let id = format!("R3/R5 {status:?}");
            check(&[Row { id: &id, cfg, before: &[GO, EXEC_DONE], procs: GONE, ev: ended(status), want: &want }]);
        }
    }
}

#[test]
fn r4_an_exec_error_is_read_before_the_end_it_caused() {
    let status = WaitStatus::Exited(127);
    check(&[
        Row {
            id: "R4 pipe still open: read it first",
            cfg: DETACHED,
            before: &[GO],
            procs: GONE,
            ev: ended(status),
            want: &[Effect::ReadExecError, report(Report::Exited(status)), report(Report::Leaving), Effect::Exit(0)],
        },
        Row {
            id: "R4 what the pipe said",
            cfg: DETACHED,
            before: &[GO],
            procs: GONE,
            ev: Event::ExecError(Some(Errno(2))),
            want: &[report(Report::ExecFailed(Errno(2)))],
        },
        Row {
            id: "R4 said once: not read again",
            cfg: DETACHED,
            before: &[GO, Event::ExecError(Some(Errno(2)))],
            procs: GONE,
            ev: ended(status),
            want: &[report(Report::Exited(status)), report(Report::Leaving), Effect::Exit(0)],
        },
    ]);
}

#[test]
fn g2_l4_init_waits_for_the_sandbox_to_empty() {
    let status = WaitStatus::Exited(3);
    let end = ended(status);
    check(&[
        Row {
            id: "G2 ended during the grace: no exit yet",
            cfg: DETACHED,
            before: &[GO, EXEC_DONE, order(Order::Grace)],
            procs: GONE,
            ev: end,
            want: &[report(Report::Exited(status))],
        },
        Row {
            id: "G2 then the sandbox is empty: say so, exit",
            cfg: DETACHED,
            before: &[GO, EXEC_DONE, order(Order::Grace), end],
            procs: GONE,
            ev: Event::NoChildren,
            want: &[report(Report::Empty), Effect::Exit(0)],
        },
        Row {
            id: "G2 an orphan reaped during the grace is nobody's business",
            cfg: DETACHED,
            before: &[GO, EXEC_DONE, order(Order::Grace), end],
            procs: GONE,
            ev: Event::Child(Pid(40), WaitStatus::Exited(0)),
            want: &[],
        },
        Row {
            id: "L4 --jobs wait: as in a grace",
            cfg: WAIT,
            before: &[GO, EXEC_DONE],
            procs: GONE,
            ev: end,
            want: &[report(Report::Exited(status))],
        },
        Row {
            id: "L4 --jobs grace: TERM to what is left",
            cfg: GRACE_JOBS,
            before: &[GO, EXEC_DONE],
            procs: GONE,
            ev: end,
            want: &[report(Report::Exited(status)), relay(Signal::TERM)],
        },
        Row {
            id: "L4 --jobs grace after a grace began: no second TERM",
            cfg: GRACE_JOBS,
            before: &[GO, EXEC_DONE, order(Order::Grace)],
            procs: GONE,
            ev: end,
            want: &[report(Report::Exited(status))],
        },
        Row {
            id: "L4 --jobs grace, then empty",
            cfg: GRACE_JOBS,
            before: &[GO, EXEC_DONE, end],
            procs: GONE,
            ev: Event::NoChildren,
            want: &[report(Report::Empty), Effect::Exit(0)],
        },
    ]);
}

#[test]
fn orphans_are_reaped_silently_and_no_child_is_not_an_end() {
    check(&[
        Row {
            id: "R5 an orphan's end",
            cfg: TERMINAL,
            before: &[GO],
            procs: OWN_GROUP,
            ev: Event::Child(Pid(30), WaitStatus::Signaled { sig: Signal::KILL, core: false }),
            want: &[],
        },
        Row {
            id: "no child before the payload ended",
            cfg: WAIT,
            before: &[GO],
            procs: GONE,
            ev: Event::NoChildren,
            want: &[],
        },
        Row { id: "no child, payload held", cfg: WAIT, before: &[], procs: GONE, ev: Event::NoChildren, want: &[] },
    ]);
}

#[test]
fn d1_b5_detached_stops_raise_no_sigchld() {
    check(&[
        Row {
            id: "B5 detached",
            cfg: DETACHED,
            before: &[],
            procs: GONE,
            ev: Event::Start,
            want: &[Effect::StopNews(false)],
        },
        Row { id: "T5 terminal", cfg: TERMINAL, before: &[], procs: GONE, ev: Event::Start, want: &[] },
    ]);
    assert!(Init::new(TERMINAL).stop_news(), "T5: waitpid reports the payload's stops");
    assert!(!Init::new(DETACHED).stop_news(), "B5");
}

#[test]
fn b1_o8_unheld_payload_starts_at_once_and_init_leaves_after_the_go() {
    // Without the network nothing waits for snug before the payload's exec (B1); init's
    // exit waits for snug's go instead, so snug's O8 watch, opened through init's root on
    // its hello, sees the sandbox's tmpfs. Fails with the deferral dropped from `leave`:
    // "ended before the go" saw [Report(Exited(..)), Report(Leaving), Exit(0)].
    const FREE: Config = Config { hold: false, ..DETACHED };
    const FREE_TTY: Config = Config { hold: false, ..TERMINAL };
    const FREE_WAIT: Config = Config { hold: false, ..WAIT };
    let status = WaitStatus::Exited(3);
    let leave = [report(Report::Leaving), Effect::Exit(0)];
    check(&[
        Row {
            id: "B1 start",
            cfg: FREE,
            before: &[],
            procs: GONE,
            ev: Event::Start,
            want: &[Effect::StopNews(false), Effect::Go],
        },
        Row {
            id: "B1 start, terminal",
            cfg: FREE_TTY,
            before: &[],
            procs: GONE,
            ev: Event::Start,
            want: &[Effect::Go],
        },
        Row {
            id: "B1 snug's go lets nothing go twice",
            cfg: FREE,
            before: &[Event::Start],
            procs: IN_INIT_GROUP,
            ev: GO,
            want: &[],
        },
        Row {
            id: "O8 ended before the go: reported, init stays",
            cfg: FREE,
            before: &[Event::Start, EXEC_DONE],
            procs: GONE,
            ev: ended(status),
            want: &[report(Report::Exited(status))],
        },
        Row {
            id: "O8 then the go: init leaves",
            cfg: FREE,
            before: &[Event::Start, EXEC_DONE, ended(status)],
            procs: GONE,
            ev: GO,
            want: &leave,
        },
        Row {
            // Fails with the guard on the sandbox being empty dropped: init reported the
            // sandbox empty and its exit lost the `Leaving` report waiting for the go.
            id: "O8 sandbox empty while the exit waits for the go: init stays",
            cfg: FREE,
            before: &[Event::Start, EXEC_DONE, ended(status)],
            procs: GONE,
            ev: Event::NoChildren,
            want: &[],
        },
        Row {
            id: "O8 empty, then the go: init leaves as the payload's end asked",
            cfg: FREE,
            before: &[Event::Start, EXEC_DONE, ended(status), Event::NoChildren],
            procs: GONE,
            ev: GO,
            want: &leave,
        },
        Row {
            id: "O8 ended after the go: init leaves at once",
            cfg: FREE,
            before: &[Event::Start, GO, EXEC_DONE],
            procs: GONE,
            ev: ended(status),
            want: &[report(Report::Exited(status)), report(Report::Leaving), Effect::Exit(0)],
        },
        Row {
            id: "O8 --jobs wait, empty before the go: init stays",
            cfg: FREE_WAIT,
            before: &[Event::Start, EXEC_DONE, ended(status)],
            procs: GONE,
            ev: Event::NoChildren,
            want: &[report(Report::Empty)],
        },
        Row {
            id: "O8 --jobs wait, then the go",
            cfg: FREE_WAIT,
            before: &[Event::Start, EXEC_DONE, ended(status), Event::NoChildren],
            procs: GONE,
            ev: GO,
            want: &[Effect::Exit(0)],
        },
    ]);
}
