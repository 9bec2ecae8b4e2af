//! Keeping a new child off snug's CPU while both have work (SPEC B1).
//!
//! The kernel puts a forked child on its parent's CPU (`wake_up_new_task`'s fork balancing
//! picks the parent's when its load looks light), and a new task does not preempt its
//! parent. So nest, cloned so that bwrap starts while snug resolves the policy, waited on
//! snug's CPU until snug blocked, about 1 ms on a 2-CPU machine whose other CPU was idle
//! (`perf record -e sched:sched_wakeup_new,sched:sched_switch`: `target_cpu` equal to
//! snug's in 17 of 20 runs). Moving the waiting child is a dequeue and an enqueue; moving
//! snug itself, which is running, would need the stopper thread.

use rustix::process::Pid;
use rustix::thread::{sched_getaffinity, sched_getcpu, sched_setaffinity, CpuSet};

/// A child's CPU affinity before [`apart`] narrowed it; [`Apart::restore`] gives it back.
pub struct Apart {
    pid: Pid,
    mask: CpuSet,
}

/// Narrow `pid`'s affinity to snug's own CPUs but the one snug is on, so that the child runs
/// on another CPU at once instead of waiting for snug to block (`sched_setaffinity(2)`).
/// `None` when there is no other CPU to go to, or the kernel refused: the child then only
/// runs later, which costs time, never a guarantee.
pub fn apart(pid: snug_core::Pid) -> Option<Apart> {
    let pid = super::process::to_rustix(pid)?;
    let mask = sched_getaffinity(None).ok()?;
    let mut others = mask;
    let cpu = sched_getcpu();
    if cpu >= CpuSet::MAX_CPU {
        return None; // past what a CpuSet holds: leave nest where it is
    }
    others.unset(cpu);
    if others.count() == 0 {
        return None;
    }
    sched_setaffinity(Some(pid), &others).ok()?;
    Some(Apart { pid, mask })
}

impl Apart {
    /// The child's own affinity again: snug's mask, as it had at the clone (and as every
    /// process of the sandbox inherits from it).
    ///
    /// # Errors
    /// `sched_setaffinity(2)`'s (`ESRCH` once the child is gone).
    pub fn restore(self) -> std::io::Result<()> {
        sched_setaffinity(Some(self.pid), &self.mask).map_err(std::io::Error::from)
    }
}
