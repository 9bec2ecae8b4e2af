//! N2 with K1's sweep: SIGKILL of snug at any moment of an `@net` start, including while
//! pasta is being spawned and is configuring the namespace.

use std::time::Duration;

use crate::common::*;
use crate::net::lab::*;
use crate::net::lifecycle::launch;

/// N2, K1: `snug -p @net` is SIGKILLed 0 to 150 ms after its start in 5 ms steps (the attach
/// takes tens of ms, so the sweep crosses the fork of pasta, its setup and the payload's
/// start). The launcher is a subreaper, so whatever of the run outlives snug is reparented
/// to it: within 200 ms it has no child left, and pasta died of SIGKILL (`PR_SET_PDEATHSIG`;
/// this pasta does not quit when its namespace goes). The sweep counts the kills that hit a
/// live pasta and requires some, so it cannot pass vacuously.
///
/// Positive control: `n2_positive_control_plain_pasta_leaks` (plain pasta survives its
/// parent's SIGKILL); one-time mutation with the prctl removed: `alive … passt.avx2`.
#[test]
fn n2_k1_sigkill_at_any_moment_of_the_attach_leaves_no_pasta() {
    if let Some(why) = skip_reason() {
        return eprintln!("skipped: {why}");
    }
    for who in everyone() {
        let dir = workdir(who);
        let mark = marker();
        let mut hit = 0;
        for ms in (0..=150).step_by(5) {
            let argv = snug_words(who, &["-p", "@net", &dir.path().to_string_lossy(), "--", "sleep", &mark]);
            let mut run = launch(&format!("detached,kill={ms}"), &argv);
            let status = run.status();
            let tail = run.tail();
            let _ = wait_bounded(&mut run.child, Duration::from_secs(5));
            assert_eq!(status, Some(-libc::SIGKILL), "{who:?} at {ms} ms");
            assert!(tail.alive.is_empty(), "{who:?} killed at {ms} ms, alive 0.5 s later: {tail:?}");
            assert!(tail.clear_ms.is_some_and(|c| c <= 200), "{who:?} killed at {ms} ms: {tail:?}");
            // A pasta orphan that exited 0 is one of its short-lived helper clones (it runs
            // netlink calls in the namespace in a `clone(CLONE_VFORK)` child, which finishes
            // its call and exits). pasta itself died of SIGKILL, or, when the kill came
            // while it was still joining the sandbox's namespace, found that namespace gone
            // and exited 1 on its own (seen once in CI at 15 ms, as the user). Either way it
            // is gone within the bound checked above; what may never be is a pasta alive.
            for (pid, st, comm) in &tail.orphans {
                if comm.starts_with("pas") {
                    assert!(
                        *st == -libc::SIGKILL || *st == 0 || *st == 1,
                        "{who:?} at {ms} ms: pasta {pid} ended {st}"
                    );
                    hit += usize::from(*st == -libc::SIGKILL);
                }
            }
        }
        reap_leftovers(&format!("sleep {mark}"));
        eprintln!("{who:?}: {hit} of 31 kills hit a live pasta");
        assert!(hit >= 3, "{who:?}: only {hit} kills hit a live pasta; the sweep missed the attach");
    }
}
