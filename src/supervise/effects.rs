//! Carrying out what the core decided, in order, and saying it under `-v` (O4). Nothing here
//! decides: each effect is one system call or a few, and the three that answer
//! ([`Effect::StartNetwork`], [`Effect::Raw`], [`Effect::StopSelf`]) return their answer
//! ([`Carried::Answer`]).

use super::SupervisorLoop;
use crate::log::log;
use crate::signals::{signame, Delivered, SI_KERNEL};
use snug_core::carry::{Carried, Carry};
use snug_core::supervisor::{Effect, Event, Note, Order, Origin, FORCE_QUIT, GRACE};
use snug_core::Signal;
use std::convert::Infallible;
use std::time::Instant;

impl Carry for SupervisorLoop {
    type Event = Event<anyhow::Error>;
    type Effect = Effect;
    /// The loop ends when the outer namespace is gone, never by an effect.
    type End = Infallible;

    fn decide(&mut self, ev: Self::Event) -> Vec<Effect> {
        self.core.on(Instant::now(), ev)
    }

    fn carry(&mut self, e: Effect) -> Carried<Self::Event, Infallible> {
        match e {
            Effect::Order(o) => self.order(o),
            Effect::StartNetwork => {
                let Some(init) = self.init.as_ref() else { return Carried::Done };
                return Carried::Answer(match (self.on_init)(init) {
                    Ok(attached) => {
                        match attached {
                            Some(crate::net::Attached::Pasta(p)) => self.pasta = Some(p),
                            Some(crate::net::Attached::Own(o)) => self.own_net = Some(o),
                            None => {}
                        }
                        Event::NetworkUp
                    }
                    Err(e) => Event::Failed(e),
                });
            }
            Effect::SignalOwnGroup(sig) => {
                let own = rustix::process::getpgrp().as_raw_nonzero().get();
                let _ = crate::signals::kill(-own, sig);
                log!(
                    "typed {}: the sandbox's terminal signals its foreground; sent to snug's own process group {own} too",
                    signame(sig)
                );
            }
            Effect::ContinueInit => {
                if let Some(init) = self.init() {
                    let _ = init.signal(Signal::CONT);
                }
            }
            // The core waits for the answer, with or without a terminal.
            Effect::Raw => return Carried::Answer(Event::Raw(self.bridge.as_mut().is_some_and(|b| b.set_input(true)))),
            Effect::PtyKey(_) | Effect::Resize | Effect::Cooked | Effect::KeysOff | Effect::ClosePty => {
                self.terminal_effect(e)
            }
            Effect::StopSelf { sig, group } => return Carried::Answer(self.stop_self(sig, group)),
            Effect::TearDown(why) => {
                // Killing bwrap, pid 1 of the outer namespace: the kernel kills and reaps
                // everything below before bwrap's own exit is seen (`zap_pid_ns_processes` in
                // `kernel/pid_namespace.c`).
                log!("teardown");
                self.record.teardown(why, self.init.as_ref());
                let _ = self.bwrap.signal(Signal::KILL);
            }
            Effect::TimingOut => self.record.timing_out(),
            Effect::Decided { sig, origin, action } => {
                let (code, pid) = match origin {
                    Origin::Terminal => (SI_KERNEL, None),
                    Origin::Own => (0, Some(crate::sys::process::own())),
                    Origin::Process(pid) => (0, pid),
                };
                self.record.signal(&Delivered { sig, code, pid }, action);
                log!("decision: {action:?}");
            }
            Effect::Note(n) => note(n),
        }
        Carried::Done
    }
}

impl SupervisorLoop {
    /// An effect on the caller's terminal or the sandbox's pty (terminal mode).
    fn terminal_effect(&mut self, e: Effect) {
        let Some(b) = self.bridge.as_mut() else { return };
        match e {
            Effect::PtyKey(sig) => {
                b.send_key(sig);
            }
            Effect::Resize => b.resize(),
            Effect::Cooked => {
                b.set_input(false);
            }
            Effect::KeysOff => b.keys_off(),
            Effect::ClosePty => b.close_pty(), // the sandbox's terminal hangs up too (T10)
            _ => {}
        }
    }

    /// Send `o` to init, or queue it while init's socket is full.
    fn order(&mut self, o: Order) {
        match o {
            Order::Signal(s) => log!("relayed {} to every sandbox process (through init)", signame(s)),
            Order::Key(s) => {
                log!("relayed the terminal's {} to the payload's process group (the hand-over is deferred)", signame(s))
            }
            Order::Stop => {
                log!("stopping every sandbox process before snug stops");
                crate::events::emit("sandbox_stopped", serde_json::json!({}));
            }
            Order::Continue(how) => {
                log!("continued the sandbox ({how:?})");
                crate::events::emit("sandbox_continued", serde_json::json!({ "how": format!("{how:?}") }));
            }
            Order::Front(true) => {
                log!("hand-over: the payload holds its terminal's foreground; snug copies the caller's keys");
                if let Some(b) = self.bridge.as_mut() {
                    b.set_deferred(false);
                }
            }
            Order::Front(false) => {
                log!("take-back: init holds the pty's foreground");
                if let Some(b) = self.bridge.as_mut() {
                    b.set_deferred(true);
                }
            }
            Order::Go | Order::Grace | Order::Typed(_) => {}
        }
        self.outbox.send(&self.chan, o);
    }

    /// Stop snug (and its group when `group`) until continued; the answer says how long that
    /// took (the grace's clock does not run meanwhile, G2).
    fn stop_self(&mut self, sig: Signal, group: bool) -> Event<anyhow::Error> {
        log!("stopping snug{} with {}", if group { "'s process group" } else { "" }, signame(sig));
        if let Some(b) = self.bridge.as_mut() {
            b.flush();
        }
        let since = Instant::now();
        if !crate::signals::stop_with(sig, group) {
            // No launcher's ^Z would have stopped anything here: go on as after `fg`, which
            // the CONT now queued on the signalfd makes the core do (hand-over, the sandbox
            // continued once).
            log!("{} discarded, as the kernel does for an orphaned process group: snug goes on", signame(sig));
            let _ = crate::signals::kill(std::process::id() as i32, Signal::CONT);
        }
        let paused = since.elapsed();
        if let Some(b) = self.bridge.as_mut() {
            b.stopped();
        }
        log!("snug continued after {} ms", paused.as_millis());
        Event::Woke { paused }
    }
}

/// A decision with nothing to carry out, in words.
fn note(n: Note) {
    match n {
        Note::OwnCopyDropped(s) => log!("dropped {}: snug's own, sent to its group with a key (R3)", signame(s)),
        Note::GraceStarted => log!("grace started: {} ms", GRACE.as_millis()),
        Note::GraceOver => log!("grace over after {} ms", GRACE.as_millis()),
        Note::SecondSignal(s) => log!("second {} during the grace: teardown", signame(s)),
        Note::UnderGrace(s) => log!(
            "{} during the grace is no second request (sent with the first, or a hangup): the grace runs on",
            signame(s)
        ),
        Note::KernelHangup => log!("hangup from the kernel: the terminal went away (never a key, T10)"),
        Note::SameHangup => log!("SIGHUP of the same hangup: it counts once (T10)"),
        Note::HangupIgnored => {
            log!("SIGHUP ignored at start (nohup): the run goes on, the sandbox keeps its terminal (S2)")
        }
        Note::WindowCopied => log!("window size copied to the sandbox's terminal"),
        Note::KeyTyped(s) => log!("typed {}: passed to the sandbox's terminal as its key", signame(s)),
        Note::InterruptCaught => log!("^C caught by the foreground: no force-quit"),
        Note::InterruptUnanswered => log!("^C reached no handler (the foreground ignores or blocks SIGINT)"),
        Note::ForceQuit => log!("second unanswered ^C within {} ms: force-quit", FORCE_QUIT.as_millis()),
        Note::JobsGrace => {
            log!("--jobs grace: what is left got SIGTERM; grace started: {} ms", GRACE.as_millis())
        }
        Note::Timeout => log!("timeout: acting as on a SIGTERM from a process (O6)"),
        Note::HandedAtStart => log!("hand-over at start: the payload holds its terminal's foreground"),
    }
}
