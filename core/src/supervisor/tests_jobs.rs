//! The ordering rows of keys and job control (T1, T2, T5, T8, T12, G2's stopped clock), as
//! scripts (see [`super::tests`]).

use super::tests::{decided, order, running, script, sig, Sup, DETACHED, PID, TERMINAL};
use super::*;
use crate::types::Signal;

const COPYING: Tty = Tty { in_front: true, copying: true, hung_up: false, has_key: true };
const FRONT: Tty = Tty { in_front: true, copying: false, hung_up: false, has_key: true };
const BACK: Tty = Tty { in_front: false, copying: false, hung_up: false, has_key: true };

fn key(s: Signal, tty: Tty) -> Event<&'static str> {
    Event::Signal { together: false, sig: s, origin: Origin::Terminal, tty }
}

/// T2: while snug copies keys, ^C, ^\ and ^Z become the pty's keys: no relay, no deadline;
/// a ^C asks init whether it was caught. A pty without that key, or keys before the fork,
/// fall through to the table (relayed once to the payload's group, T13). Fails with the
/// `copying` check dropped (step 3 types instead of relaying).
#[test]
fn t2_typed_keys_go_to_the_pty_not_relayed() {
    let mut sup = running(TERMINAL);
    let t = Origin::Terminal;
    script(
        &mut sup,
        vec![
            (
                0,
                key(Signal::INT, COPYING),
                vec![
                    Effect::PtyKey(Signal::INT),
                    Effect::Note(Note::KeyTyped(Signal::INT)),
                    order(Order::Typed(Signal::INT)),
                ],
            ),
            (
                1,
                key(Signal::QUIT, COPYING),
                vec![Effect::PtyKey(Signal::QUIT), Effect::Note(Note::KeyTyped(Signal::QUIT))],
            ),
            (
                2,
                key(Signal::TSTP, COPYING),
                vec![Effect::PtyKey(Signal::TSTP), Effect::Note(Note::KeyTyped(Signal::TSTP))],
            ),
            // Deferred (not copying): the terminal gave snug's job the key.
            (3, key(Signal::INT, FRONT), vec![decided(Signal::INT, t, Action::Key), order(Order::Key(Signal::INT))]),
            (
                4,
                key(Signal::INT, Tty { has_key: false, ..COPYING }),
                vec![decided(Signal::INT, t, Action::Key), order(Order::Key(Signal::INT))],
            ),
            (5, key(Signal::QUIT, FRONT), vec![decided(Signal::QUIT, t, Action::Key), order(Order::Key(Signal::QUIT))]),
            (6, Event::Typed(Signal::INT), vec![Effect::SignalOwnGroup(Signal::INT), order(Order::Typed(Signal::INT))]),
            (7, Event::Typed(Signal::QUIT), vec![Effect::SignalOwnGroup(Signal::QUIT)]),
        ],
    );
    assert_eq!(sup.deadline(), None);

    // Before the fork the key waits with the other signals.
    let mut sup = Sup::new(TERMINAL);
    script(
        &mut sup,
        vec![
            (0, key(Signal::INT, COPYING), vec![decided(Signal::INT, t, Action::Key)]),
            (1, Event::Started { tty: COPYING }, vec![order(Order::Key(Signal::INT))]),
        ],
    );
    // Detached, a terminal's INT is an INT with the grace (D1).
    let mut sup = running(DETACHED);
    let fx = sup.on(super::tests::at(0), key(Signal::INT, COPYING));
    assert_eq!(fx, super::tests::with_grace(Signal::INT, t));
}

/// T1: an immediate hand-over goes raw at the start; if the terminal refuses (the job left
/// the front), init takes the pty's foreground back and the hand-over is deferred.
#[test]
fn t1_immediate_hand_over_at_the_start_or_deferred() {
    let mut sup = Sup::new(TERMINAL);
    assert_eq!(sup.start(), vec![Effect::Raw]);
    script(&mut sup, vec![(0, Event::Raw(false), vec![order(Order::Front(false))])]);
    // The payload's first read stops it: in front, it gets the terminal and is continued.
    script(
        &mut sup,
        vec![
            (1, Event::Started { tty: FRONT }, vec![]),
            (2, Event::Stopped { sig: Signal::TTIN, really: true, tty: FRONT }, vec![Effect::Raw]),
            (3, Event::Raw(true), vec![Effect::Resize, order(Order::Front(true)), order(Order::Continue(Resume::Job))]),
        ],
    );
    assert_eq!(sup.state(), "running");

    let mut sup = Sup::new(TERMINAL);
    assert_eq!(sup.start(), vec![Effect::Raw]);
    script(&mut sup, vec![(0, Event::Raw(true), vec![Effect::Note(Note::HandedAtStart)])]);
    script(&mut sup, vec![(1, Event::Raw(true), vec![])]);
    assert!(Sup::new(Config { immediate: false, ..TERMINAL }).start().is_empty());
    assert!(Sup::new(DETACHED).start().is_empty());
}

/// T13, T15 (issue: `snug -- python3 ask.py | cat`, which waits for its terminal in
/// `select`, never got the line typed: a `select` from the background stops nothing, so the
/// hand-over that a read brings never came): a payload waiting in `poll`/`select` while
/// deferred gets the terminal as a read would, without a CONT (it was never stopped); not
/// from the background, nor once handed over. Fails with `payload_waits` a no-op.
#[test]
fn t13_t15_a_payload_polling_its_terminal_gets_it_when_a_line_waits() {
    let mut sup = Sup::new(Config { immediate: false, ..TERMINAL });
    assert!(sup.start().is_empty());
    script(
        &mut sup,
        vec![
            (0, Event::Started { tty: FRONT }, vec![]),
            (1, Event::PayloadWaits { tty: BACK }, vec![]),
            (2, Event::PayloadWaits { tty: FRONT }, vec![Effect::Raw]),
            (3, Event::Raw(true), vec![Effect::Resize, order(Order::Front(true))]),
            (4, Event::PayloadWaits { tty: COPYING }, vec![]),
        ],
    );
}

/// T5: ^Z stops the payload: the caller's settings back, snug's job stopped with the same
/// signal. `fg`: raw, size, continue the job; `bg`: cooked, init takes the pty, continue.
/// Fails with the Cooked before StopSelf left out (step 0).
#[test]
fn t5_payload_stop_stops_the_job_fg_and_bg_continue_it() {
    let mut sup = running(TERMINAL);
    let stop = |s| Event::Stopped { sig: s, really: true, tty: FRONT };
    script(
        &mut sup,
        vec![
            (0, stop(Signal::TSTP), vec![Effect::Cooked, Effect::StopSelf { sig: Signal::TSTP, group: true }]),
            (9, Event::Woke { paused: Duration::from_millis(9) }, vec![]),
        ],
    );
    assert_eq!(sup.state(), "stopped");
    // fg: the shell's CONT, snug's job in front.
    script(
        &mut sup,
        vec![
            (
                10,
                Event::Signal { together: false, sig: Signal::CONT, origin: PID, tty: FRONT },
                vec![decided(Signal::CONT, PID, Action::Resume), Effect::Raw],
            ),
            (11, Event::Raw(true), vec![Effect::Resize, Effect::ContinueInit, order(Order::Continue(Resume::Job))]),
        ],
    );
    assert_eq!(sup.state(), "running");
    // ^Z again, then bg: the job continues in the background, reading nothing.
    script(
        &mut sup,
        vec![
            (20, stop(Signal::TSTP), vec![Effect::Cooked, Effect::StopSelf { sig: Signal::TSTP, group: true }]),
            (
                21,
                Event::Signal { together: false, sig: Signal::CONT, origin: PID, tty: BACK },
                vec![
                    decided(Signal::CONT, PID, Action::Resume),
                    Effect::Cooked,
                    order(Order::Front(false)),
                    Effect::Resize,
                    order(Order::Key(Signal::WINCH)),
                    Effect::ContinueInit,
                    order(Order::Continue(Resume::Job)),
                ],
            ),
            // It reads in the background: stops as a background job, wants the terminal.
            (
                22,
                Event::Stopped { sig: Signal::TTIN, really: true, tty: BACK },
                vec![Effect::Cooked, Effect::StopSelf { sig: Signal::TTIN, group: true }],
            ),
            (
                30,
                Event::Signal { together: false, sig: Signal::CONT, origin: PID, tty: FRONT },
                vec![decided(Signal::CONT, PID, Action::Resume), Effect::Raw],
            ),
            // The terminal refused raw: no hand-over, the job is continued all the same.
            (31, Event::Raw(false), vec![Effect::ContinueInit, order(Order::Continue(Resume::Job))]),
            (
                40,
                Event::Signal { together: false, sig: Signal::CONT, origin: PID, tty: FRONT },
                vec![decided(Signal::CONT, PID, Action::Resume), Effect::Raw],
            ),
            (
                41,
                Event::Raw(true),
                vec![
                    Effect::Resize,
                    order(Order::Front(true)),
                    Effect::ContinueInit,
                    order(Order::Continue(Resume::All)),
                ],
            ),
        ],
    );
}

/// T5: a stop init reports is a hint: acted on only when checked, and only in terminal mode.
#[test]
fn t5_an_unchecked_or_detached_stop_is_ignored() {
    let mut sup = running(TERMINAL);
    script(&mut sup, vec![(0, Event::Stopped { sig: Signal::TSTP, really: false, tty: FRONT }, vec![])]);
    let mut sup = running(DETACHED);
    script(&mut sup, vec![(0, Event::Stopped { sig: Signal::TSTP, really: true, tty: FRONT }, vec![])]);
    assert_eq!(sup.state(), "running");
}

/// T12: TSTP/TTIN/TTOU sent to snug stop the whole sandbox first, then snug alone, once;
/// CONT continues every process once. Fails with `halting` not checked (step 1 orders a
/// second Stop).
#[test]
fn t12_job_control_signal_stops_the_sandbox_then_snug() {
    let mut sup = running(DETACHED);
    script(
        &mut sup,
        vec![
            (0, sig(Signal::TSTP, PID), vec![decided(Signal::TSTP, PID, Action::Stop), order(Order::Stop)]),
            (1, sig(Signal::TTOU, PID), vec![decided(Signal::TTOU, PID, Action::Stop)]),
            (2, Event::Halted, vec![Effect::StopSelf { sig: Signal::TSTP, group: false }]),
            (3, Event::Halted, vec![]),
        ],
    );
    assert_eq!(sup.state(), "stopped");
    script(
        &mut sup,
        vec![(
            50,
            sig(Signal::CONT, PID),
            vec![decided(Signal::CONT, PID, Action::Resume), Effect::ContinueInit, order(Order::Continue(Resume::All))],
        )],
    );
    assert_eq!(sup.state(), "running");

    // Terminal mode, deferred ^Z from the caller's terminal: the same, and the caller's
    // settings go back before snug stops; `tostop` output stops the job with TTOU (T8).
    let mut sup = running(TERMINAL);
    script(
        &mut sup,
        vec![
            (
                0,
                key(Signal::TSTP, FRONT),
                vec![decided(Signal::TSTP, Origin::Terminal, Action::Stop), order(Order::Stop)],
            ),
            (1, Event::Halted, vec![Effect::Cooked, Effect::StopSelf { sig: Signal::TSTP, group: false }]),
            (2, Event::Tostop, vec![order(Order::Stop)]),
            (3, Event::Halted, vec![Effect::Cooked, Effect::StopSelf { sig: Signal::TTOU, group: false }]),
        ],
    );
}

/// G2 with T12: the grace's clock stops while snug is stopped, so a grace cannot expire on a
/// sandbox that could not clean up. Fails with `woke` a no-op (step 3 tears down).
#[test]
fn t12_g2_stopped_time_does_not_count_against_the_grace() {
    let mut sup = running(DETACHED);
    script(
        &mut sup,
        vec![
            (0, sig(Signal::TERM, PID), super::tests::with_grace(Signal::TERM, PID)),
            (100, sig(Signal::TSTP, PID), vec![decided(Signal::TSTP, PID, Action::Stop), order(Order::Stop)]),
            (110, Event::Halted, vec![Effect::StopSelf { sig: Signal::TSTP, group: false }]),
            (5110, Event::Woke { paused: Duration::from_millis(5000) }, vec![]),
            (5110, Event::Tick, vec![]),
            (5999, Event::Tick, vec![]),
            (6000, Event::Tick, vec![Effect::Note(Note::GraceOver), Effect::TearDown(EndedBy::GraceExpired)]),
        ],
    );
}

/// T5, T1: only a read or a settings change (TTIN, TTOU) before the hand-over asks for the
/// terminal; any other stop, or one after the hand-over, stops snug's job (a payload's own
/// `kill(0, SIGTSTP)`, a background job inside reading the pty).
#[test]
fn t5_a_stop_that_is_not_a_read_before_the_hand_over_stops_the_job() {
    let deferred = Config { immediate: false, ..TERMINAL };
    let mut sup = running(deferred);
    let stopped = |s| Event::Stopped { sig: s, really: true, tty: FRONT };
    script(
        &mut sup,
        vec![(0, stopped(Signal::TSTP), vec![Effect::Cooked, Effect::StopSelf { sig: Signal::TSTP, group: true }])],
    );
    let mut sup = running(TERMINAL);
    script(
        &mut sup,
        vec![(0, stopped(Signal::TTIN), vec![Effect::Cooked, Effect::StopSelf { sig: Signal::TTIN, group: true }])],
    );
}

/// T17: a new window size reaches the payload's group in every topology. Handed over, the
/// pty's own SIGWINCH does it; deferred (init holds the pty's foreground), init is told to
/// send it on; continued in front without a hand-over, the size is copied and told too.
/// Fails with `winch_deferred` doing nothing (steps 0 and 1 of the deferred run).
#[test]
fn t17_the_window_size_reaches_the_payload_also_when_deferred() {
    let winch = |tty| Event::Signal { together: false, sig: Signal::WINCH, origin: Origin::Terminal, tty };
    let copied = [Effect::Resize, Effect::Note(Note::WindowCopied)];
    let mut handed = running(TERMINAL);
    script(&mut handed, vec![(0, winch(COPYING), copied.to_vec())]);
    let mut deferred = running(Config { immediate: false, ..TERMINAL });
    let told = [copied.as_slice(), &[order(Order::Key(Signal::WINCH))]].concat();
    script(
        &mut deferred,
        vec![
            (0, winch(FRONT), told),
            (
                1,
                Event::Signal { together: false, sig: Signal::CONT, origin: PID, tty: FRONT },
                vec![
                    decided(Signal::CONT, PID, Action::Resume),
                    Effect::Resize,
                    order(Order::Key(Signal::WINCH)),
                    Effect::ContinueInit,
                    order(Order::Continue(Resume::All)),
                ],
            ),
        ],
    );
}
