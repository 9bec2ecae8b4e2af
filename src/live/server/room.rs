//! Room for one more connection on a run's control socket (SPEC L5): at most [`MAX_CONNS`]
//! are kept, so that no client can make a run hold descriptors without bound.

use super::Conn;
use crate::live::socket::{self, Queued};
use rustix::fd::AsFd;

/// How many connections a run keeps.
pub(super) const MAX_CONNS: usize = 32;

/// Make room in `conns` for one more; false when every one waits for the run's end.
///
/// Every run's start-up sweep connects to each live socket and closes at once: many starts
/// at a time leave more of those than fit before the loop's next round sees them close.
/// Those go first, then the oldest connection that never asked anything and holds no
/// request, then the oldest holding none, then the oldest not waiting for the end: a client
/// at work keeps its connection, and a request waiting to be read is answered.
pub(super) fn make(conns: &mut Vec<Conn>) -> bool {
    if conns.len() < MAX_CONNS {
        return true;
    }
    conns.retain(|c| socket::queued(c.fd.as_fd()) != Queued::Closed);
    if conns.len() < MAX_CONNS {
        return true;
    }
    // Looked at once each: a connection neither waiting for the end nor holding a request.
    let free: Vec<bool> = conns.iter().map(|c| !c.waiting && socket::queued(c.fd.as_fd()) == Queued::Nothing).collect();
    let idle = (0..conns.len()).find(|&i| free[i] && !conns[i].spoke);
    match idle.or_else(|| free.iter().position(|f| *f)).or_else(|| conns.iter().position(|c| !c.waiting)) {
        Some(i) => {
            conns.remove(i);
            true
        }
        None => false,
    }
}
