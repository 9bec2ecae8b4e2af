//! Relaying a signal to every sandbox process, with systemd's SIGCONT after a terminating
//! one (SPEC G2; `systemd.kill(5)`, `SendSIGCONT=`): a process that is stopped when TERM
//! comes (it stopped itself, or another sandbox process stopped it) would otherwise sit on
//! the pending signal until the grace runs out, its handler never run.

/// Whether a relay of `sig` is followed by SIGCONT: only for the signals that start the
/// grace (INT, TERM, HUP), and never while the caller has the job stopped (^Z, a TSTP to
/// snug: T5, T12), since a job the shell lists as stopped must not run on.
pub fn cont_after(sig: i32, caller_stopped: bool) -> bool {
    matches!(sig, libc::SIGINT | libc::SIGTERM | libc::SIGHUP) && !caller_stopped
}

/// Send `sig` to every sandbox process but init with `kill(-1, sig)` (see
/// [`crate::channel::Order::Signal`]), then SIGCONT to all of them when [`cont_after`] says
/// so. To a running process the CONT does nothing but run a SIGCONT handler it has
/// (`signal(7)`), as under systemd.
pub fn relay_with_cont(sig: i32, caller_stopped: bool) {
    let _ = crate::signals::kill(-1, sig);
    if cont_after(sig, caller_stopped) {
        let _ = crate::signals::kill(-1, libc::SIGCONT);
    }
}

#[cfg(test)]
mod tests {
    use super::cont_after;

    #[test]
    fn g2_cont_follows_grace_signals_unless_caller_stopped() {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            assert!(cont_after(sig, false), "{sig}");
            assert!(!cont_after(sig, true), "{sig}: a job the caller stopped must stay stopped (T12)");
        }
        for sig in [libc::SIGUSR1, libc::SIGSTOP, libc::SIGQUIT, libc::SIGWINCH] {
            assert!(!cont_after(sig, false), "{sig}: only the grace's signals get a CONT");
        }
    }
}
