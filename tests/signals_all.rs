//! Every signal sent to snug gets a deliberate answer (SPEC G6, T12 without a
//! terminal): every catchable signal that is neither G1's (INT, TERM, HUP) nor job control is
//! relayed once and never kills snug; TSTP/TTIN/TTOU stop the sandbox with snug and CONT
//! continues both; one CONT reaches the payload once.
//!
//! Detached mode (stdin /dev/null), snug in its own process group, as root and as the test
//! user. Signals go to the snug pid the test started, nothing else. Positive controls: each
//! test's comment says what it saw without the fix (snug before these rows held).

use crate::relay::kit;

mod every;
mod stops;

/// The recorder payload (`kit::RECORDER`) handling `sigs` and TERM; it exits 0 `linger`
/// seconds after the first TERM (time for a duplicate to show). With `spin` it polls without
/// sleeping, so a second delivery close behind the first is seen, not merged by the kernel.
pub fn record_all(mark: &str, sigs: &[i32], linger: &str, spin: bool) -> Vec<String> {
    let mut handled = sigs.to_vec();
    handled.push(libc::SIGTERM);
    kit::recording(mark, &handled, &libc::SIGTERM.to_string(), linger, spin)
}
