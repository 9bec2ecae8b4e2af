//! The decisions of `snug exec`'s client (SPEC L3, T2, T5, T12): it relays the signals it
//! gets to CMD through init, passes the caller's signal keys to CMD's pty, and does job
//! control for its own job when CMD stops. Its loop decodes events (a signal, a message from
//! init, the bridge's hangup) and carries out the [`Effect`]s; it decides nothing.
//!
//! | Row | Place |
//! |-----|-------|
//! | T2 (a terminal's key goes to CMD's pty, which signals CMD's foreground) | `Client::signal` |
//! | T5 (CMD stopped at its pty: the client's job stops; `fg` continues CMD) | `Client::stop_job` |
//! | T12 (TSTP to the client: CMD's session stops, then the job; CONT both) | `Client::signal` |
//! | L3 (CMD's end is the client's; other signals relayed once) | `Client::on` |
//! | T10 (the caller's terminal hung up: CMD gets HUP) | `Client::on` |

use crate::types::{Errno, Signal, WaitStatus};

/// What the loop read of the bridge when it decoded the event (all false without one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tty {
    /// There is a bridge: the client is at a terminal.
    pub bridge: bool,
    /// The bridge copies keys now.
    pub input: bool,
    /// The pty's foreground is its session leader's group, orphaned for `snug exec`, so the
    /// kernel drops the pty's SIGTSTP for it (`kernel/signal.c`).
    pub front_is_leader: bool,
    /// The pty makes this event's signal from a key of its own (ISIG and the key set).
    pub has_key: bool,
}

/// One thing the client's loop saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A signal was delivered to the client; `terminal`: the caller's terminal made it (a key).
    Signal { sig: Signal, terminal: bool, tty: Tty },
    /// The caller's terminal hung up.
    HungUp,
    /// Init: CMD ended so.
    Exited(WaitStatus),
    /// Init: CMD could not be executed.
    Failed(Errno),
    /// Init: CMD stopped with this signal; `bridge`: the client is at a terminal (without
    /// one, nothing acts on it: CMD's stop is the caller's business, B5).
    Stopped { sig: Signal, bridge: bool },
    /// The client's job was stopped by [`Effect::StopSelf`] and continued; `in_front`: its job
    /// is the caller's terminal's foreground now (`fg`, not `bg`).
    Woke { in_front: bool },
    /// Init's end of the socket is gone: the sandbox ended and took CMD with it.
    Closed,
}

/// How the client ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// As CMD ended.
    Status(WaitStatus),
    /// By this signal (the sandbox's SIGKILL of CMD).
    Signal(Signal),
    /// CMD could not be executed.
    Failed(Errno),
}

/// One thing for the loop to do, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Type `sig`'s key into CMD's pty (T2).
    PtyKey(Signal),
    /// The caller's window size to the pty.
    Resize,
    /// Ask init to send `sig` to CMD's session.
    Tell(Signal),
    /// Stop copying keys; the caller's terminal gets its settings back.
    InputOff,
    /// Write out what is held for the caller's terminal.
    Flush,
    /// Stop the client's job with `sig`; answered by [`Event::Woke`] ([`crate::carry`]).
    StopSelf(Signal),
    /// Tell the bridge the job was stopped (a pending `tostop` may be given again).
    Stopped,
    /// Copy keys again (raw).
    InputOn,
    /// Hang up CMD's pty.
    ClosePty,
    /// Copy what CMD wrote to the last byte, then give the caller's settings back.
    Drain,
    /// The client ends so.
    End(End),
}

/// The client's state: one value.
#[derive(Debug, Default)]
pub struct Client {
    /// Keys were copied when CMD started: after a stop, copy them again when in front.
    wanted_input: bool,
    /// CMD's stop that this client caused (its SIGSTOP): init's report of it is no news.
    own_stop: bool,
}

impl Client {
    /// A client whose bridge copies keys from the start (`wanted_input`), or not.
    pub fn new(wanted_input: bool) -> Client {
        Client { wanted_input, own_stop: false }
    }

    /// What to do about `ev`.
    pub fn on(&mut self, ev: Event) -> Vec<Effect> {
        match ev {
            Event::Signal { sig, terminal, tty } => self.signal(sig, terminal, tty),
            Event::HungUp => vec![Effect::ClosePty, Effect::Tell(Signal::HUP)],
            Event::Exited(status) => vec![Effect::Drain, Effect::End(End::Status(status))],
            Event::Failed(errno) => vec![Effect::End(End::Failed(errno))],
            Event::Stopped { sig: Signal::STOP, .. } if std::mem::take(&mut self.own_stop) => Vec::new(),
            Event::Stopped { bridge: false, .. } => Vec::new(),
            Event::Stopped { sig, bridge: true } => vec![Effect::InputOff, Effect::StopSelf(sig)],
            Event::Woke { in_front } => {
                let mut fx = vec![Effect::Stopped];
                if self.wanted_input && in_front {
                    fx.extend([Effect::InputOn, Effect::Resize]);
                }
                fx.push(Effect::Tell(Signal::CONT));
                fx
            }
            Event::Closed => vec![Effect::End(End::Signal(Signal::KILL))],
        }
    }

    fn signal(&mut self, sig: Signal, terminal: bool, tty: Tty) -> Vec<Effect> {
        let key = matches!(sig, Signal::INT | Signal::QUIT | Signal::TSTP) && terminal;
        let orphaned = sig == Signal::TSTP && tty.front_is_leader;
        if key && !orphaned && tty.input && tty.has_key {
            return vec![Effect::PtyKey(sig)];
        }
        match sig {
            Signal::WINCH if tty.bridge => vec![Effect::Resize],
            Signal::CONT => Vec::new(),
            // Job control the pty did not take (keys not copied, an orphaned foreground, or a
            // TSTP from a process): CMD's session stops with SIGSTOP (it may ignore TSTP),
            // then this job; CONT continues both (T12).
            Signal::TSTP => {
                self.own_stop = true;
                let mut fx = vec![Effect::Tell(Signal::STOP)];
                if tty.bridge {
                    fx.extend([Effect::InputOff, Effect::Flush]);
                }
                fx.push(Effect::StopSelf(Signal::TSTP));
                fx
            }
            _ => vec![Effect::Tell(sig)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT_TTY: Tty = Tty { bridge: true, input: true, front_is_leader: false, has_key: true };

    fn typed(sig: Signal, tty: Tty) -> Event {
        Event::Signal { sig, terminal: true, tty }
    }

    /// T2: a key of the caller's terminal goes to the pty, once, and is not relayed too.
    /// Fails with `terminal` ignored (a process's INT was typed into the pty instead of relayed).
    #[test]
    fn t2_a_typed_key_goes_to_the_pty_only() {
        let mut c = Client::new(true);
        assert_eq!(c.on(typed(Signal::INT, AT_TTY)), [Effect::PtyKey(Signal::INT)]);
        assert_eq!(c.on(typed(Signal::QUIT, AT_TTY)), [Effect::PtyKey(Signal::QUIT)]);
        // ^Z goes to the pty too while its foreground is not the orphaned leader's group, and
        // an orphaned foreground matters only for ^Z (the kernel drops only the stop signals).
        assert_eq!(c.on(typed(Signal::TSTP, AT_TTY)), [Effect::PtyKey(Signal::TSTP)]);
        let leader_in_front = Tty { front_is_leader: true, ..AT_TTY };
        assert_eq!(c.on(typed(Signal::INT, leader_in_front)), [Effect::PtyKey(Signal::INT)]);
        let from_process = Event::Signal { sig: Signal::INT, terminal: false, tty: AT_TTY };
        assert_eq!(c.on(from_process), [Effect::Tell(Signal::INT)]);
        let no_key = Tty { has_key: false, ..AT_TTY };
        assert_eq!(c.on(typed(Signal::INT, no_key)), [Effect::Tell(Signal::INT)]);
        let not_copying = Tty { input: false, ..AT_TTY };
        assert_eq!(c.on(typed(Signal::INT, not_copying)), [Effect::Tell(Signal::INT)]);
    }

    /// T5, T12: ^Z with an orphaned foreground (the kernel would drop the pty's TSTP) stops
    /// CMD's session with SIGSTOP and then the job; init's report of that stop is no news;
    /// `fg` copies keys again and continues CMD. Fails with `own_stop` not set (the job
    /// stopped a second time on the report).
    #[test]
    fn t5_t12_tstp_stops_cmd_then_the_job_and_fg_continues_both() {
        let mut c = Client::new(true);
        let orphaned = Tty { front_is_leader: true, ..AT_TTY };
        assert_eq!(
            c.on(typed(Signal::TSTP, orphaned)),
            [Effect::Tell(Signal::STOP), Effect::InputOff, Effect::Flush, Effect::StopSelf(Signal::TSTP)]
        );
        assert_eq!(
            c.on(Event::Woke { in_front: true }),
            [Effect::Stopped, Effect::InputOn, Effect::Resize, Effect::Tell(Signal::CONT)]
        );
        assert_eq!(c.on(Event::Stopped { sig: Signal::STOP, bridge: true }), []);
        // A second report of a SIGSTOP (another process stopped CMD) is news again.
        assert_eq!(
            c.on(Event::Stopped { sig: Signal::STOP, bridge: true }),
            [Effect::InputOff, Effect::StopSelf(Signal::STOP)]
        );
        // `bg`: not in front, so no keys are copied; CMD is continued all the same.
        assert_eq!(c.on(Event::Woke { in_front: false }), [Effect::Stopped, Effect::Tell(Signal::CONT)]);
    }

    /// T12 detached: a TSTP to a client without a terminal stops CMD and the job, nothing
    /// of a bridge; a client that never copied keys does not start after `fg`.
    #[test]
    fn t12_tstp_without_a_terminal() {
        let mut c = Client::new(false);
        let none = Tty::default();
        let from_process = Event::Signal { sig: Signal::TSTP, terminal: false, tty: none };
        assert_eq!(c.on(from_process), [Effect::Tell(Signal::STOP), Effect::StopSelf(Signal::TSTP)]);
        assert_eq!(c.on(Event::Woke { in_front: true }), [Effect::Stopped, Effect::Tell(Signal::CONT)]);
    }

    /// T5: CMD stopped at its pty (^Z typed there, or SIGTTIN): the job stops with the same
    /// signal. L3: the end is CMD's; WINCH resizes; CONT is not relayed (init continues CMD).
    #[test]
    fn t5_l3_cmd_stops_ends_and_the_rest_is_relayed() {
        let mut c = Client::new(true);
        assert_eq!(
            c.on(Event::Stopped { sig: Signal::TTIN, bridge: true }),
            [Effect::InputOff, Effect::StopSelf(Signal::TTIN)]
        );
        assert_eq!(c.on(Event::Stopped { sig: Signal::TTIN, bridge: false }), []);
        assert_eq!(c.on(typed(Signal::WINCH, AT_TTY)), [Effect::Resize]);
        assert_eq!(
            c.on(Event::Signal { sig: Signal::WINCH, terminal: false, tty: Tty::default() }),
            [Effect::Tell(Signal::WINCH)]
        );
        assert_eq!(c.on(Event::Signal { sig: Signal::CONT, terminal: false, tty: AT_TTY }), []);
        assert_eq!(
            c.on(Event::Signal { sig: Signal::TERM, terminal: false, tty: AT_TTY }),
            [Effect::Tell(Signal::TERM)]
        );
        assert_eq!(c.on(Event::HungUp), [Effect::ClosePty, Effect::Tell(Signal::HUP)]);
        let done = WaitStatus::Exited(5);
        assert_eq!(c.on(Event::Exited(done)), [Effect::Drain, Effect::End(End::Status(done))]);
        assert_eq!(c.on(Event::Failed(Errno(2))), [Effect::End(End::Failed(Errno(2)))]);
        assert_eq!(c.on(Event::Closed), [Effect::End(End::Signal(Signal::KILL))]);
    }
}
