//! Under a soft `ulimit -s` (RLIMIT_STACK, `getrlimit(2)`) below [`STACK_BYTES`], snug's work
//! runs on a thread whose stack has a size snug chooses, not on the main thread, whose stack
//! that limit bounds: at 16–32 KiB the main thread overflowed, and Rust aborts on that (SPEC
//! R4: never an abort). At [`STACK_BYTES`] or more `main` runs the work on the main thread.
//! A thread's stack is mapped at its creation (`pthread_attr_setstacksize(3)`) and does not
//! depend on RLIMIT_STACK, which snug leaves as it is, so the payload inherits the caller's.
//!
//! Signals: the main thread blocks them all before the worker starts and only waits, so a
//! process-directed signal reaches the worker (or waits in the process's queue for its
//! signalfd) exactly as before; the worker starts with the mask snug inherited.

/// The worker's stack: 8 MiB, the usual default RLIMIT_STACK. Only what is touched costs
/// memory.
pub const STACK_BYTES: usize = 8 << 20;

/// glibc's internal SIGCANCEL (32) and SIGSETXID (33), as mask bits: left unblocked in the
/// main thread, since glibc's set*id(2) wrappers signal every thread with them.
const GLIBC_INTERNAL: u64 = (1 << 31) | (1 << 32);

/// Run `work` on a thread with a [`STACK_BYTES`] stack; `work` ends the process (exit or
/// death by a signal), so this never returns. Where the thread cannot be made (memory or
/// thread limits), `work` runs here, on the main thread, as it always did.
pub fn run(work: fn() -> !) -> ! {
    let Ok(inherited) = sigseal::set_mask(libc::SIG_SETMASK, !GLIBC_INTERNAL) else { work() };
    let spawned = std::thread::Builder::new().stack_size(STACK_BYTES).spawn(move || {
        let _ = sigseal::set_mask(libc::SIG_SETMASK, inherited);
        work()
    });
    match spawned {
        Ok(handle) => {
            // `work` never returns; should the thread end anyway (it cannot: a panic aborts),
            // end as an internal error rather than leave the process without its worker.
            let _ = handle.join();
            std::process::exit(crate::error::INTERNAL)
        }
        Err(_) => {
            let _ = sigseal::set_mask(libc::SIG_SETMASK, inherited);
            work()
        }
    }
}

/// RLIMIT_STACK's soft limit below which bwrap and pasta get more: bwrap 0.8.0 dies of
/// SIGSEGV at 16 KiB.
pub const CHILD_MIN: u64 = 8 << 20;

/// In a fork child before it execs bwrap or pasta (C programs with their stack on the main
/// thread): raise the soft RLIMIT_STACK to [`CHILD_MIN`] (at most the hard limit) when it
/// is lower. The payload still gets the caller's: init puts it back before the payload
/// starts ([`crate::payload_args::Spec::stack`]). Async-signal-safe: rustix's raw
/// `prlimit64(2)`, no allocation, so fine between fork and exec.
pub fn roomy_for_exec() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let now = getrlimit(Resource::Stack);
    if let Some(cur) = now.current.filter(|&c| c < CHILD_MIN) {
        let raised = now.maximum.map_or(CHILD_MIN, |max| CHILD_MIN.min(max)).max(cur);
        let _ = setrlimit(Resource::Stack, Rlimit { current: Some(raised), maximum: now.maximum });
    }
}

/// The soft RLIMIT_STACK snug runs with (`u64::MAX`: unlimited), for init to restore.
pub fn soft_limit() -> u64 {
    use rustix::process::{getrlimit, Resource};
    getrlimit(Resource::Stack).current.unwrap_or(u64::MAX)
}

/// In init, before anything of the payload's starts: the soft RLIMIT_STACK back to `soft`
/// (what the caller gave snug), the hard one as it is.
pub fn restore(soft: u64) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let now = getrlimit(Resource::Stack);
    let current = (soft != u64::MAX).then_some(soft);
    if now.current != current {
        let _ = setrlimit(Resource::Stack, Rlimit { current, maximum: now.maximum });
    }
}

/// Below this hard RLIMIT_STACK bwrap cannot run at all (0.8.0 dies of SIGSEGV at 24 KiB,
/// runs at 28 KiB); with margin.
const BWRAP_NEEDS: u64 = 64 << 10;

/// When bwrap died without a word and the hard stack limit is below what it needs: the
/// line to say (SPEC R4), naming the limit and what to do.
pub fn too_small_for_bwrap() -> Option<String> {
    use rustix::process::{getrlimit, Resource};
    let hard = getrlimit(Resource::Stack).maximum?;
    (hard < BWRAP_NEEDS).then(|| {
        format!(
            "bwrap crashed before the sandbox started: the stack limit (ulimit -s, hard) is {} KiB, \
             too small for it; raise it to at least {} KiB",
            hard >> 10,
            BWRAP_NEEDS >> 10
        )
    })
}
