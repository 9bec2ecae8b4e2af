//! Every signal sent to snug gets a deliberate answer (SPEC G6, T12 without a terminal;
//! issue 17): every catchable signal that is neither G1's (INT, TERM, HUP) nor job control is
//! relayed once and never kills snug; TSTP/TTIN/TTOU stop the sandbox with snug and CONT
//! continues both; one CONT reaches the payload once.
//!
//! Detached mode (stdin /dev/null), snug in its own process group, as root and as the test
//! user. Signals go to the snug pid the test started, nothing else. Positive controls: each
//! test's comment says what it observed against today's build (main@76434d3).

mod common;

#[allow(dead_code)]
#[path = "relay/kit.rs"]
mod kit;

#[allow(dead_code)]
#[path = "pty/procs.rs"]
mod procs;

#[path = "signals_all/every.rs"]
mod every;

#[path = "signals_all/stops.rs"]
mod stops;

/// A python payload that records every delivery of the signals in ARGV1 (a comma list) to
/// the file `got`, one number per line. Counting goes through `set_wakeup_fd`, which writes
/// one byte (the number) per delivery, so two deliveries are never merged into one handler
/// call. It writes `ready` once its handlers are installed, and exits 0 ARGV2 seconds after
/// the first TERM (time for a duplicate to show). ARGV3 is the test's marker. With ARGV4
/// `spin` it polls without sleeping, so it stays on a CPU and takes each signal the moment it
/// arrives: a second delivery close behind the first is then seen, not merged by the kernel
/// into one pending signal.
pub const RECORD_ALL: &str = r#"
import os, select, signal, sys, time
handled = [int(s) for s in sys.argv[1].split(",")]
linger = float(sys.argv[2])
wait = 0 if sys.argv[4:] == ["spin"] else 0.02
r, w = os.pipe()
os.set_blocking(r, False)
os.set_blocking(w, False)
signal.set_wakeup_fd(w, warn_on_full_buffer=False)
for s in handled:
    signal.signal(s, lambda n, f: None)
got = open("got", "a", buffering=1)
open("ready", "w").close()
end = None
while end is None or time.monotonic() < end:
    select.select([r], [], [], wait)
    try:
        data = os.read(r, 256)
    except BlockingIOError:
        data = b""
    for n in data:
        got.write(f"{n}\n")
        if n == signal.SIGTERM and end is None:
            end = time.monotonic() + linger
sys.exit(0)
"#;

/// The recorder's argv, handling `sigs` (and TERM, which ends it).
pub fn record_all(mark: &str, sigs: &[i32], linger: &str, spin: bool) -> Vec<String> {
    let mut list: Vec<String> = sigs.iter().map(i32::to_string).collect();
    list.push(libc::SIGTERM.to_string());
    let how = if spin { "spin" } else { "sleep" };
    [kit::PY, "-c", RECORD_ALL, &list.join(","), linger, mark, how].map(String::from).to_vec()
}
