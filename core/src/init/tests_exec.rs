//! `snug exec` (L3) as init decides it: run, signal, a client that goes, the end.

use super::tests::*;
use super::*;

const GO: Event = order(Order::Go);
const A: ExecId = ExecId(0);
const CMD: Pid = Pid(50);
const OPEN: Event = Event::ExecOpened(A);
const RUN: Event = Event::Client(A, FromClient::Run { tty: false });
const RUN_TTY: Event = Event::Client(A, FromClient::Run { tty: true });
const STARTED: Event = Event::Spawned(A, Ok(CMD));

#[test]
fn l3_run_starts_cmd_once_and_says_its_pid() {
    check(&[
        Row { id: "L3 run", cfg: DETACHED, before: &[GO, OPEN], procs: GONE, ev: RUN, want: &[Effect::Spawn(A)] },
        Row {
            id: "L3 started",
            cfg: DETACHED,
            before: &[GO, OPEN, RUN],
            procs: GONE,
            ev: STARTED,
            want: &[Effect::ToClient(A, ToClient::Started(CMD))],
        },
        Row {
            id: "L3 a second run is ignored",
            cfg: DETACHED,
            before: &[GO, OPEN, RUN, STARTED],
            procs: GONE,
            ev: RUN,
            want: &[],
        },
        Row { id: "L3 an unknown socket", cfg: DETACHED, before: &[GO], procs: GONE, ev: RUN, want: &[] },
        Row {
            id: "L3 fork failed: say so, close",
            cfg: DETACHED,
            before: &[GO, OPEN, RUN],
            procs: GONE,
            ev: Event::Spawned(A, Err(Errno(12))),
            want: &[Effect::ToClient(A, ToClient::Failed(Errno(12))), Effect::Forget(A)],
        },
        Row {
            id: "L3 exec failed: say so; the end follows",
            cfg: DETACHED,
            before: &[GO, OPEN, RUN, STARTED],
            procs: GONE,
            ev: Event::CmdExecFailed(A, Errno(2)),
            want: &[Effect::ToClient(A, ToClient::Failed(Errno(2)))],
        },
    ]);
}

#[test]
fn l3_t5_a_cmd_with_a_pty_makes_stops_news() {
    // Fails with `if e.tty` made `if true`: "B5 no pty" saw [StopNews(true), ToClient(..)].
    check(&[
        Row {
            id: "L3 detached, pty: stops are news from now on",
            cfg: DETACHED,
            before: &[GO, OPEN, RUN_TTY],
            procs: GONE,
            ev: STARTED,
            want: &[Effect::StopNews(true), Effect::ToClient(A, ToClient::Started(CMD))],
        },
        Row {
            id: "B5 no pty: still none",
            cfg: DETACHED,
            before: &[GO, OPEN, RUN],
            procs: GONE,
            ev: STARTED,
            want: &[Effect::ToClient(A, ToClient::Started(CMD))],
        },
        Row {
            id: "T5 terminal: they are already",
            cfg: TERMINAL,
            before: &[GO, OPEN, RUN_TTY],
            procs: GONE,
            ev: STARTED,
            want: &[Effect::ToClient(A, ToClient::Started(CMD))],
        },
        Row {
            id: "T5 CMD with a pty stopped",
            cfg: DETACHED,
            before: &[GO, OPEN, RUN_TTY, STARTED],
            procs: GONE,
            ev: Event::Child(CMD, WaitStatus::Stopped(Signal::TSTP)),
            want: &[Effect::ToClient(A, ToClient::Stopped(Signal::TSTP))],
        },
        Row {
            id: "T5 CMD without a pty stopped: no news",
            cfg: TERMINAL,
            before: &[GO, OPEN, RUN, STARTED],
            procs: GONE,
            ev: Event::Child(CMD, WaitStatus::Stopped(Signal::TSTP)),
            want: &[],
        },
        Row {
            id: "T5 CMD continued: no news",
            cfg: DETACHED,
            before: &[GO, OPEN, RUN_TTY, STARTED],
            procs: GONE,
            ev: Event::Child(CMD, WaitStatus::Continued),
            want: &[],
        },
    ]);
    let news = after(DETACHED, &[GO, OPEN, RUN_TTY, STARTED], &GONE);
    assert!(news.stop_news(), "waitpid asks for stops");
    let second = [Event::ExecOpened(ExecId(1)), Event::Client(ExecId(1), FromClient::Run { tty: true })];
    let mut init = after(DETACHED, &[&[GO, OPEN, RUN_TTY, STARTED][..], &second].concat(), &GONE);
    let got = init.on(Event::Spawned(ExecId(1), Ok(Pid(51))), &GONE);
    assert_eq!(got, [Effect::ToClient(ExecId(1), ToClient::Started(Pid(51)))], "B5: said once");
}

#[test]
fn l3_kill_signals_cmds_group() {
    check(&[
        Row {
            id: "L3 kill",
            cfg: DETACHED,
            before: &[GO, OPEN, RUN, STARTED],
            procs: GONE,
            ev: Event::Client(A, FromClient::Kill(Signal::INT)),
            want: &[Effect::Signal(Target::Group(CMD), Signal::INT)],
        },
        Row {
            id: "L3 kill with the highest real-time signal",
            cfg: DETACHED,
            before: &[GO, OPEN, RUN, STARTED],
            procs: GONE,
            ev: Event::Client(A, FromClient::Kill(Signal(64))),
            want: &[Effect::Signal(Target::Group(CMD), Signal(64))],
        },
        Row {
            id: "L3 kill before the run: nothing to signal",
            cfg: DETACHED,
            before: &[GO, OPEN],
            procs: GONE,
            ev: Event::Client(A, FromClient::Kill(Signal::INT)),
            want: &[],
        },
    ]);
    for bad in [0, -9, 65] {
        let mut init = after(DETACHED, &[GO, OPEN, RUN, STARTED], &GONE);
        assert_eq!(init.on(Event::Client(A, FromClient::Kill(Signal(bad))), &GONE), [], "signal {bad}");
    }
}

#[test]
fn l3_k1_a_client_that_goes_takes_cmds_session() {
    let closed = Event::Client(A, FromClient::Closed);
    let end = WaitStatus::Signaled { sig: Signal::KILL, core: false };
    check(&[
        Row {
            id: "K1 started: SIGKILL to CMD's session, the entry stays",
            cfg: DETACHED,
            before: &[GO, OPEN, RUN, STARTED],
            procs: GONE,
            ev: closed,
            want: &[Effect::Signal(Target::Session(CMD), Signal::KILL)],
        },
        Row {
            id: "K1 then CMD's end: told (to a closed socket), forgotten",
            cfg: DETACHED,
            before: &[GO, OPEN, RUN, STARTED, closed],
            procs: GONE,
            ev: Event::Child(CMD, end),
            want: &[Effect::ToClient(A, ToClient::Exited(end)), Effect::Forget(A)],
        },
        Row {
            id: "L3 not started: forgotten",
            cfg: DETACHED,
            before: &[GO, OPEN],
            procs: GONE,
            ev: closed,
            want: &[Effect::Forget(A)],
        },
        Row {
            id: "L3 forgotten: a run is ignored",
            cfg: DETACHED,
            before: &[GO, OPEN, closed],
            procs: GONE,
            ev: RUN,
            want: &[],
        },
    ]);
}

#[test]
fn l3_r3_cmds_end_passes_through_and_is_not_the_payloads() {
    for status in [WaitStatus::Exited(0), WaitStatus::Exited(9), WaitStatus::Signaled { sig: Signal::TERM, core: true }]
    {
        let want = [Effect::ToClient(A, ToClient::Exited(status)), Effect::Forget(A)];
        let id = format!("L3 end {status:?}");
        check(&[Row {
            id: &id,
            cfg: DETACHED,
            before: &[GO, OPEN, RUN, STARTED],
            procs: GONE,
            ev: Event::Child(CMD, status),
            want: &want,
        }]);
    }
    check(&[Row {
        id: "L3 reaped once: a second status of that pid is an orphan's",
        cfg: DETACHED,
        before: &[GO, OPEN, RUN, STARTED, Event::Child(CMD, WaitStatus::Exited(0))],
        procs: GONE,
        ev: Event::Child(CMD, WaitStatus::Exited(0)),
        want: &[],
    }]);
}

/// T1, L3: a client asks for a pty from the sandbox's own `/dev/ptmx` before its run
/// request, and gets one; once CMD runs, a request for one is ignored. Fails with the
/// `OpenPty` arm's effect dropped: "T1 before the run" saw no effect.
#[test]
fn t1_l3_a_pty_from_inside_before_the_run_only() {
    let ask = Event::Client(A, FromClient::OpenPty);
    check(&[
        Row {
            id: "T1 before the run",
            cfg: DETACHED,
            before: &[GO, OPEN],
            procs: GONE,
            ev: ask,
            want: &[Effect::OpenPty(A)],
        },
        Row {
            id: "T1 after the run",
            cfg: DETACHED,
            before: &[GO, OPEN, RUN_TTY, STARTED],
            procs: GONE,
            ev: ask,
            want: &[],
        },
        Row { id: "T1 an unknown socket", cfg: DETACHED, before: &[GO], procs: GONE, ev: ask, want: &[] },
    ]);
}
