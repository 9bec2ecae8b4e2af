//! The ordering rows of the force-quit, hangup, `snug stop`, `--timeout`, `--jobs grace`
//! and snug's failures (T3, T4, T10, L2, O6, L4, R4), as scripts (see [`super::tests`]).

use super::tests::{at, decided, order, running, script, sig, with_grace, Sup, DETACHED, PID, TERMINAL};
use super::*;
use crate::types::{Errno, Pid, Signal, WaitStatus};

/// T3: a second unanswered ^C within 1 s force-quits and snug dies of INT; one caught in
/// between, or one after more than 1 s, does not. Fails with `<` for `<=` (step 1).
#[test]
fn t3_second_unanswered_interrupt_within_a_second_force_quits() {
    let unanswered = || Event::Interrupt { unanswered: true };
    let first = || vec![Effect::Note(Note::InterruptUnanswered)];
    let mut sup = running(TERMINAL);
    script(
        &mut sup,
        vec![
            (0, unanswered(), first()),
            (1000, unanswered(), vec![Effect::Note(Note::ForceQuit), Effect::TearDown(EndedBy::ForceQuit)]),
        ],
    );
    assert_eq!(sup.finish(), Some(End::TornDown(Signal::INT)));

    let mut sup = running(TERMINAL);
    script(
        &mut sup,
        vec![
            (0, unanswered(), first()),
            (1001, unanswered(), first()),
            (1500, Event::Interrupt { unanswered: false }, vec![Effect::Note(Note::InterruptCaught)]),
            (1600, unanswered(), first()),
            (1700, Event::Interrupt { unanswered: false }, vec![Effect::Note(Note::InterruptCaught)]),
            (1800, Event::Interrupt { unanswered: false }, vec![Effect::Note(Note::InterruptCaught)]),
        ],
    );
    assert!(!sup.torn_down() && sup.deadline().is_none());
}

/// T4: INT/TERM/HUP from another process get the grace in terminal mode too; a terminal's
/// HUP is never a key (T10).
#[test]
fn t4_process_signals_get_the_grace_in_terminal_mode() {
    for s in [Signal::INT, Signal::TERM, Signal::HUP] {
        let mut sup = running(TERMINAL);
        let copying = Tty { in_front: true, copying: true, hung_up: false, has_key: true };
        script(
            &mut sup,
            vec![(0, Event::Signal { together: false, sig: s, origin: PID, tty: copying }, with_grace(s, PID))],
        );
        assert_eq!(sup.deadline(), Some(at(1000)));
    }
}

/// T10: the terminal going away is one hangup: SIGHUP and the grace once, the pty hung up,
/// the kernel's SIGHUP of the same hangup not a second signal; a payload that ignores HUP is
/// torn down 1 s later. Fails with the SameHangup check removed (step 1 tears down).
#[test]
fn t10_hangup_counts_once_then_the_grace_tears_down() {
    let kernel_hup = Event::Signal {
        together: false,
        sig: Signal::HUP,
        origin: Origin::Terminal,
        tty: Tty { hung_up: true, ..Tty::default() },
    };
    let mut sup = running(TERMINAL);
    let mut first = vec![Effect::ClosePty, decided(Signal::HUP, Origin::Terminal, Action::RelayWithGrace)];
    first.push(Effect::Note(Note::KernelHangup));
    first.extend(with_grace(Signal::HUP, Origin::Terminal).into_iter().skip(1));
    script(
        &mut sup,
        vec![
            (0, Event::HungUp, first),
            (5, kernel_hup, vec![Effect::Note(Note::SameHangup)]),
            (6, Event::HungUp, vec![Effect::Note(Note::SameHangup)]),
            (1000, Event::Tick, vec![Effect::Note(Note::GraceOver), Effect::TearDown(EndedBy::GraceExpired)]),
        ],
    );
    assert_eq!(sup.finish(), Some(End::TornDown(Signal::HUP)));
}

/// T10: the kernel's SIGHUP may come first; the bridge's hangup after it counts once. Under
/// `nohup` (S2) the run goes on and the pty stays.
#[test]
fn t10_kernel_hangup_first_and_nohup() {
    let mut sup = running(TERMINAL);
    let tty = Tty { hung_up: true, ..Tty::default() };
    let mut first =
        vec![decided(Signal::HUP, Origin::Terminal, Action::RelayWithGrace), Effect::Note(Note::KernelHangup)];
    first.extend(with_grace(Signal::HUP, Origin::Terminal).into_iter().skip(1));
    script(
        &mut sup,
        vec![
            (0, Event::Signal { together: false, sig: Signal::HUP, origin: Origin::Terminal, tty }, first),
            (1, Event::HungUp, vec![Effect::Note(Note::SameHangup)]),
        ],
    );

    let mut sup = running(Config { hup_ignored: true, ..TERMINAL });
    script(&mut sup, vec![(0, Event::HungUp, vec![Effect::Note(Note::HangupIgnored)])]);
    assert_eq!(sup.deadline(), None);
}

/// G4, T10: the terminal going away during another signal's grace, as snug's bridge sees it
/// (`exit` with a stopped job: bash's TERM, then the window closes) is no second request and
/// no SIGHUP of anyone's: the pty hangs up, nothing is relayed (without snug nobody tells
/// a background job), and the grace runs on to the first signal's deadline. The first
/// SIGHUP that comes once the terminal is gone (the kernel's to a foreground group, the
/// shell's to its jobs) is relayed under that grace, and later ones count once. Positive
/// control: before, the hangup tore down (`TearDown(SecondSignal)`), cutting the payload's
/// TERM handler short; a build that dropped the kernel's SIGHUP left a foreground payload
/// without the SIGHUP it gets without snug (a tester's window closed during a kill's grace).
#[test]
fn g4_t10_a_hangup_during_the_grace_is_relayed_not_a_second_signal() {
    let mut sup = running(TERMINAL);
    script(
        &mut sup,
        vec![
            (0, sig(Signal::TERM, PID), with_grace(Signal::TERM, PID)),
            (2, Event::HungUp, vec![Effect::ClosePty, Effect::Note(Note::UnderGrace(Signal::HUP))]),
            (
                3,
                kernel_hup_event(),
                vec![
                    Effect::Note(Note::UnderGrace(Signal::HUP)),
                    decided(Signal::HUP, Origin::Terminal, Action::Relay),
                    Effect::Note(Note::KernelHangup),
                    Effect::Order(Order::Signal(Signal::HUP)),
                ],
            ),
            (4, kernel_hup_event(), vec![Effect::Note(Note::SameHangup)]),
            (5, Event::HungUp, vec![Effect::Note(Note::SameHangup)]),
        ],
    );
    assert_eq!(sup.deadline(), Some(at(1000)), "the grace was moved");
    let fx = sup.on(at(1000), Event::Tick);
    assert_eq!(fx.last(), Some(&Effect::TearDown(EndedBy::GraceExpired)));
    assert_eq!(sup.finish(), Some(End::TornDown(Signal::TERM)));

    // The kernel's SIGHUP before the bridge's news: relayed, the pty hung up with it.
    let mut k = running(TERMINAL);
    script(&mut k, vec![(0, sig(Signal::TERM, PID), with_grace(Signal::TERM, PID))]);
    let fx = k.on(at(2), kernel_hup_event());
    assert_eq!(fx.first(), Some(&Effect::ClosePty), "{fx:?}");
    assert_eq!(fx.last(), Some(&Effect::Order(Order::Signal(Signal::HUP))), "{fx:?}");
    assert_eq!(k.on(at(3), Event::HungUp), vec![Effect::Note(Note::SameHangup)]);
}

fn kernel_hup_event() -> Event<&'static str> {
    Event::Signal {
        together: false,
        sig: Signal::HUP,
        origin: Origin::Terminal,
        tty: Tty { hung_up: true, ..Tty::default() },
    }
}

/// G4, T10: the caller's shell's SIGHUP to its jobs once the terminal is gone, during another
/// signal's grace, is relayed (the payload gets it as without snug), the grace runs on, and
/// the kernel's SIGHUP of the same hangup counts once; a TERM then is still the second
/// signal. Positive control: before, the shell's HUP tore down (`TearDown(SecondSignal)`).
#[test]
fn g4_t10_the_shells_hangup_during_the_grace_is_relayed() {
    let mut sup = running(TERMINAL);
    let gone = Tty { hung_up: true, ..Tty::default() };
    let shell_hup = Event::Signal { together: false, sig: Signal::HUP, origin: PID, tty: gone };
    let kernel_hup = Event::Signal { together: false, sig: Signal::HUP, origin: Origin::Terminal, tty: gone };
    script(
        &mut sup,
        vec![
            (0, sig(Signal::TERM, PID), with_grace(Signal::TERM, PID)),
            (
                2,
                shell_hup,
                vec![
                    Effect::ClosePty,
                    Effect::Note(Note::UnderGrace(Signal::HUP)),
                    decided(Signal::HUP, PID, Action::Relay),
                    Effect::Order(Order::Signal(Signal::HUP)),
                ],
            ),
            (3, kernel_hup, vec![Effect::Note(Note::SameHangup)]),
        ],
    );
    assert_eq!(sup.deadline(), Some(at(1000)));
    let term = Event::Signal { together: false, sig: Signal::TERM, origin: PID, tty: gone };
    assert_eq!(sup.on(at(4), term).last(), Some(&Effect::TearDown(EndedBy::SecondSignal)));
}

/// G4: signals read together (pending at once: bash's HUP and TERM to a stopped job whose
/// terminal closed, delivered when it continues) are one request: the first starts the
/// grace, the others are relayed under it; a TERM read later is the second signal. Positive
/// control: before, the TERM read with the HUP tore down at once, so the payload, still
/// stopped, never ran its HUP handler.
#[test]
fn g4_signals_pending_together_are_one_request() {
    let mut sup = running(DETACHED);
    let together = |s| Event::Signal { together: true, sig: s, origin: PID, tty: Tty::default() };
    script(
        &mut sup,
        vec![
            (0, sig(Signal::HUP, PID), with_grace(Signal::HUP, PID)),
            (
                0,
                together(Signal::TERM),
                vec![
                    Effect::Note(Note::UnderGrace(Signal::TERM)),
                    decided(Signal::TERM, PID, Action::Relay),
                    Effect::Order(Order::Signal(Signal::TERM)),
                ],
            ),
        ],
    );
    assert_eq!(sup.deadline(), Some(at(1000)));
    let fx = sup.on(at(5), sig(Signal::TERM, PID));
    assert_eq!(fx.last(), Some(&Effect::TearDown(EndedBy::SecondSignal)), "a later TERM");

    // Read together, but with a grace from an earlier read: a second signal.
    let mut sup = running(DETACHED);
    script(&mut sup, vec![(0, sig(Signal::TERM, PID), with_grace(Signal::TERM, PID))]);
    assert_eq!(sup.on(at(5), sig(Signal::WINCH, PID)).len(), 2);
    let fx = sup.on(at(5), together(Signal::INT));
    assert_eq!(fx.last(), Some(&Effect::TearDown(EndedBy::SecondSignal)));
}

/// L2: `snug stop` is a TERM from the stop caller, `--now` its second; `snug signal` relays
/// as G6 does.
#[test]
fn l2_stop_is_a_term_from_a_process_now_is_the_second() {
    let caller = Origin::Process(Some(Pid(77)));
    let mut sup = running(DETACHED);
    script(
        &mut sup,
        vec![
            (
                0,
                sig(Signal(10), caller),
                vec![decided(Signal(10), caller, Action::Relay), order(Order::Signal(Signal(10)))],
            ),
            (1, sig(Signal::TERM, caller), with_grace(Signal::TERM, caller)),
        ],
    );
    assert_eq!(sup.state(), "grace");
    let fx = sup.on(at(2), sig(Signal::TERM, caller));
    assert_eq!(fx.last(), Some(&Effect::TearDown(EndedBy::SecondSignal)));
    assert_eq!(sup.finish(), Some(End::TornDown(Signal::TERM)));
}

/// O6: at the deadline snug acts as on a TERM from a process (relay, grace), once; not
/// when a grace runs or the payload ended. Fails with the `>=` of the timeout made `>`.
#[test]
fn o6_timeout_acts_as_a_term_once() {
    let mut sup = running(Config { timeout: Some(at(500)), ..DETACHED });
    assert_eq!(sup.deadline(), Some(at(500)));
    let mut due = vec![Effect::Note(Note::Timeout), Effect::TimingOut];
    due.extend(with_grace(Signal::TERM, Origin::Own));
    script(
        &mut sup,
        vec![
            (499, Event::Tick, vec![]),
            (500, Event::Tick, due),
            (501, Event::Tick, vec![]),
            (1500, Event::Tick, vec![Effect::Note(Note::GraceOver), Effect::TearDown(EndedBy::GraceExpired)]),
        ],
    );

    let mut sup = running(Config { timeout: Some(at(500)), ..DETACHED });
    script(&mut sup, vec![(100, sig(Signal::INT, PID), with_grace(Signal::INT, PID)), (500, Event::Tick, vec![])]);
    assert_eq!(sup.deadline(), Some(at(1100)));

    let mut sup = running(Config { timeout: Some(at(500)), ..DETACHED });
    script(&mut sup, vec![(100, Event::Exited(WaitStatus::Exited(3)), vec![]), (500, Event::Tick, vec![])]);
    assert_eq!((sup.deadline(), sup.state()), (None, "jobs"));
}

/// L4: `--jobs grace` gives what is left the grace at the main process's exit; the default
/// does not.
#[test]
fn l4_jobs_grace_starts_the_grace_at_the_main_exit() {
    let mut sup = running(Config { jobs_grace: true, ..TERMINAL });
    script(
        &mut sup,
        vec![(10, Event::Exited(WaitStatus::Exited(0)), vec![Effect::KeysOff, Effect::Note(Note::JobsGrace)])],
    );
    assert_eq!(sup.deadline(), Some(at(1010)));
    script(
        &mut sup,
        vec![(1010, Event::Tick, vec![Effect::Note(Note::GraceOver), Effect::TearDown(EndedBy::GraceExpired)])],
    );
    assert_eq!(sup.finish(), Some(End::Payload(WaitStatus::Exited(0))));

    let mut sup = running(DETACHED);
    script(&mut sup, vec![(10, Event::Exited(WaitStatus::Exited(0)), vec![])]);
    assert_eq!(sup.deadline(), None);
}

/// R4: snug's failure tears down once and is how snug ends; init's own failure tears
/// nothing down (init ends); an exec failure wins over the payload's status.
#[test]
fn r4_failures_and_exec_failure() {
    let mut sup = running(DETACHED);
    script(
        &mut sup,
        vec![
            (0, Event::Failed("pasta"), vec![Effect::TearDown(EndedBy::SnugError)]),
            (1, Event::Failed("later"), vec![]),
        ],
    );
    assert_eq!(sup.finish(), Some(End::Failed("later")));

    let mut sup = running(DETACHED);
    script(&mut sup, vec![(0, Event::InitFailed("EAGAIN"), vec![])]);
    assert!(!sup.torn_down());
    assert_eq!(sup.finish(), Some(End::Failed("EAGAIN")));

    let mut sup = running(DETACHED);
    script(
        &mut sup,
        vec![(0, Event::ExecFailed(Errno(2)), vec![]), (0, Event::Exited(WaitStatus::Exited(127)), vec![])],
    );
    assert_eq!(sup.finish(), Some(End::ExecFailed(Errno(2))));
}

/// The binary sets `--timeout` and `--jobs` once its record and options are there, before
/// the first event (O6, L4).
#[test]
fn o6_l4_deadline_and_jobs_set_before_the_first_event() {
    let mut sup = Sup::new(DETACHED);
    sup.set_timeout(Some(at(500)));
    sup.set_jobs_grace(true);
    assert_eq!(sup.deadline(), Some(at(500)));
    script(
        &mut sup,
        vec![
            (0, Event::Hello, vec![Effect::StartNetwork]),
            (0, Event::NetworkUp, vec![order(Order::Go)]),
            (0, Event::Started { tty: Tty::default() }, vec![]),
            (10, Event::Exited(WaitStatus::Exited(0)), vec![Effect::Note(Note::JobsGrace)]),
            (500, Event::Tick, vec![]),
        ],
    );
    assert_eq!(sup.deadline(), Some(at(1010)));
}
