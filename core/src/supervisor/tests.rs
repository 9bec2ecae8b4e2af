//! The ordering rows of relay, grace and teardown (G1–G4, G6, T3, T4, T10, L2, L4, O6), as
//! scripts: each step is the time (ms from the run's start), one event, and exactly the
//! effects it must give, in order.
//!
//! Positive controls: each "Fails with …" below was run by mutating the core that way (the
//! test failed at the step named), and `cargo mutants -p snug-core -f 'core/src/supervisor*'
//! -f 'core/src/supervisor/*.rs'` finds no mutant these tests miss.

use super::*;
use crate::types::{Pid, Signal, WaitStatus};
use std::sync::OnceLock;

pub(super) type Sup = Supervisor<&'static str>;
pub(super) type Step = (u64, Event<&'static str>, Vec<Effect>);

/// Time `ms` after a fixed start.
pub(super) fn at(ms: u64) -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now) + Duration::from_millis(ms)
}

/// Run `steps` on `sup`, asserting each step's effects exactly.
pub(super) fn script(sup: &mut Sup, steps: Vec<Step>) {
    for (i, (ms, event, want)) in steps.into_iter().enumerate() {
        let shown = format!("{event:?}");
        assert_eq!(sup.on(at(ms), event), want, "step {i} at {ms} ms: {shown}");
    }
}

pub(super) const DETACHED: Config =
    Config { terminal: false, immediate: false, hup_ignored: false, jobs_grace: false, timeout: None };
pub(super) const TERMINAL: Config = Config { terminal: true, immediate: true, ..DETACHED };

pub(super) const PID: Origin = Origin::Process(Some(Pid(4242)));

pub(super) fn sig(sig: Signal, origin: Origin) -> Event<&'static str> {
    Event::Signal { together: false, sig, origin, tty: Tty::default() }
}

pub(super) fn decided(sig: Signal, origin: Origin, action: Action) -> Effect {
    Effect::Decided { sig, origin, action }
}

pub(super) fn order(o: Order) -> Effect {
    Effect::Order(o)
}

/// A run whose payload was forked.
pub(super) fn running(cfg: Config) -> Sup {
    let mut sup = Sup::new(cfg);
    script(
        &mut sup,
        vec![
            (0, Event::Hello, vec![Effect::StartNetwork]),
            (0, Event::NetworkUp, vec![order(Order::Go)]),
            (0, Event::Started { tty: Tty::default() }, vec![]),
        ],
    );
    assert_eq!(sup.state(), "running");
    sup
}

/// The effects of a first INT/TERM/HUP relayed with the grace, once the payload runs.
pub(super) fn with_grace(s: Signal, origin: Origin) -> Vec<Effect> {
    vec![
        decided(s, origin, Action::RelayWithGrace),
        Effect::Note(Note::GraceStarted),
        order(Order::Grace),
        order(Order::Signal(s)),
    ]
}

#[test]
fn n3_the_payload_starts_only_once_the_network_is_up() {
    let mut sup = Sup::new(DETACHED);
    assert_eq!(sup.state(), "starting");
    assert_eq!(sup.exec_refusal(), Some("the sandbox is still starting"));
    script(
        &mut sup,
        vec![(0, Event::Hello, vec![Effect::StartNetwork]), (5, Event::NetworkUp, vec![order(Order::Go)])],
    );
    assert!(!sup.started());
    script(&mut sup, vec![(6, Event::Started { tty: Tty::default() }, vec![])]);
    assert!(sup.started() && sup.exec_refusal().is_none() && *sup.phase() == Phase::Running);
}

/// Signals before the fork wait, in order of receipt, and each goes out once (G1); the
/// grace counts from receipt, not from the fork (G3). Fails with the queue left out
/// (relaying at receipt): step 0 then holds the orders.
#[test]
fn g1_signals_before_the_fork_wait_in_order_and_go_out_once() {
    let mut sup = Sup::new(DETACHED);
    script(
        &mut sup,
        vec![
            (
                0,
                sig(Signal::TERM, PID),
                vec![decided(Signal::TERM, PID, Action::RelayWithGrace), Effect::Note(Note::GraceStarted)],
            ),
            (10, sig(Signal(10), PID), vec![decided(Signal(10), PID, Action::Relay)]),
            (20, Event::Hello, vec![Effect::StartNetwork]),
            (30, Event::NetworkUp, vec![order(Order::Go)]),
            (
                40,
                Event::Started { tty: Tty::default() },
                vec![order(Order::Grace), order(Order::Signal(Signal::TERM)), order(Order::Signal(Signal(10)))],
            ),
            (50, Event::Started { tty: Tty::default() }, vec![]),
        ],
    );
    assert_eq!(sup.deadline(), Some(at(1000)));
}

/// snug's own copy of a key it sent its group is dropped (R3, T2); a process's INT is not.
#[test]
fn g1_own_copy_of_a_typed_key_is_dropped_a_process_signal_is_relayed() {
    let mut sup = running(TERMINAL);
    script(
        &mut sup,
        vec![
            (0, sig(Signal::INT, Origin::Own), vec![Effect::Note(Note::OwnCopyDropped(Signal::INT))]),
            (0, sig(Signal::QUIT, Origin::Own), vec![Effect::Note(Note::OwnCopyDropped(Signal::QUIT))]),
            (1, sig(Signal::INT, PID), with_grace(Signal::INT, PID)),
        ],
    );
}

/// G2: the payload that ends within the grace is how snug ends, also when the grace's
/// deadline passes before bwrap is reaped.
#[test]
fn g2_payload_ending_within_the_grace_is_the_end() {
    let mut sup = running(DETACHED);
    script(
        &mut sup,
        vec![
            (0, sig(Signal::TERM, PID), with_grace(Signal::TERM, PID)),
            (300, Event::Tick, vec![]),
            (400, Event::Exited(WaitStatus::Exited(0)), vec![]),
            (1000, Event::Tick, vec![Effect::Note(Note::GraceOver), Effect::TearDown(EndedBy::GraceExpired)]),
        ],
    );
    assert_eq!(sup.finish(), Some(End::Payload(WaitStatus::Exited(0))));
    assert_eq!(sup.finish(), Some(End::TornDown(Signal::TERM)));
}

/// G3: after 1.0 s, teardown once, and snug dies of the signal it received. Fails with the
/// comparison `now > until` (step 2 gives nothing) or GRACE at 999 ms (step 1 tears down).
#[test]
fn g3_grace_over_tears_down_once_with_the_first_signal() {
    for s in [Signal::INT, Signal::TERM, Signal::HUP] {
        let mut sup = running(DETACHED);
        script(
            &mut sup,
            vec![
                (100, sig(s, PID), with_grace(s, PID)),
                (1099, Event::Tick, vec![]),
                (1100, Event::Tick, vec![Effect::Note(Note::GraceOver), Effect::TearDown(EndedBy::GraceExpired)]),
                (1200, Event::Tick, vec![]),
            ],
        );
        assert!(sup.torn_down() && sup.exec_refusal() == Some("the sandbox is ending"));
        assert_eq!(sup.finish(), Some(End::TornDown(s)));
        assert_eq!(sup.finish(), None);
    }
}

/// G3: the deadline counts from receipt also when init is not up yet.
#[test]
fn g3_grace_counts_from_receipt_before_init_is_up() {
    let mut sup = Sup::new(DETACHED);
    script(
        &mut sup,
        vec![
            (
                7,
                sig(Signal::INT, PID),
                vec![decided(Signal::INT, PID, Action::RelayWithGrace), Effect::Note(Note::GraceStarted)],
            ),
            (1007, Event::Tick, vec![Effect::Note(Note::GraceOver), Effect::TearDown(EndedBy::GraceExpired)]),
        ],
    );
    assert_eq!(sup.finish(), Some(End::TornDown(Signal::INT)));
}

/// G4: a second INT/TERM/HUP during the grace tears down at once, with the first signal;
/// a third tears down nothing more. Fails with `in_grace` ignored in `decide`.
#[test]
fn g4_second_signal_during_grace_tears_down_at_once() {
    let mut sup = running(DETACHED);
    script(
        &mut sup,
        vec![
            (0, sig(Signal::TERM, PID), with_grace(Signal::TERM, PID)),
            (
                100,
                sig(Signal::INT, PID),
                vec![
                    decided(Signal::INT, PID, Action::Teardown),
                    Effect::Note(Note::SecondSignal(Signal::INT)),
                    Effect::TearDown(EndedBy::SecondSignal),
                ],
            ),
            (
                110,
                sig(Signal::HUP, PID),
                vec![decided(Signal::HUP, PID, Action::Teardown), Effect::Note(Note::SecondSignal(Signal::HUP))],
            ),
        ],
    );
    assert_eq!(sup.finish(), Some(End::TornDown(Signal::TERM)));
}

/// G6: every other catchable signal is relayed once, no grace; CHLD, PIPE, URG never; a CONT
/// continues the sandbox once.
#[test]
fn g6_other_signals_relayed_once_without_grace() {
    let mut sup = running(DETACHED);
    for n in [3, 10, 12, 14, 24, 26, 27, 29, 30, 31, 34, 64] {
        let s = Signal(n);
        script(&mut sup, vec![(5, sig(s, PID), vec![decided(s, PID, Action::Relay), order(Order::Signal(s))])]);
    }
    for n in [17, 13, 23] {
        let s = Signal(n);
        script(&mut sup, vec![(5, sig(s, PID), vec![decided(s, PID, Action::Drop)])]);
    }
    assert_eq!(sup.deadline(), None);
    script(
        &mut sup,
        vec![(
            6,
            sig(Signal::CONT, PID),
            vec![decided(Signal::CONT, PID, Action::Resume), Effect::ContinueInit, order(Order::Continue(Resume::All))],
        )],
    );
    assert_eq!(sup.state(), "running");
}
