//! Orders that wait for room in init's socket.

use super::{Channel, Order};

/// snug's orders that found init's socket full (init stopped by someone, or not reading):
/// queued in order and sent when it has room, so snug's loop never waits on init.
#[derive(Debug, Default)]
pub struct Outbox {
    queue: Vec<Order>,
}

impl Outbox {
    /// Send `o` now, or queue it behind what already waits; a signal already queued is not
    /// queued twice (pending standard signals merge in the kernel too). Errors mean init is
    /// gone, and the order with it.
    pub fn send(&mut self, chan: &Channel, o: Order) {
        if self.queue.is_empty() && !matches!(chan.order(o), Ok(false)) {
            return;
        }
        if !(matches!(o, Order::Signal(_)) && self.queue.contains(&o)) {
            self.queue.push(o);
        }
    }

    /// Whether something waits for room (poll for `POLLOUT`).
    pub fn waiting(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Send what waited, in order, while there is room.
    pub fn flush(&mut self, chan: &Channel) {
        while let Some(&o) = self.queue.first() {
            if matches!(chan.order(o), Ok(false)) {
                return;
            }
            self.queue.remove(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::Received;
    use crate::channel::ToInit;
    use snug_core::Signal;

    /// G3 with a stopped init: orders beyond the socket's room queue instead of blocking,
    /// repeated signals merge, and everything queued arrives in order once init reads.
    #[test]
    fn outbox_queues_when_full_and_flushes_in_order() {
        let (snug, init) = Channel::pair().unwrap();
        let mut out = Outbox::default();
        let mut sent = 0;
        while !out.waiting() {
            out.send(&snug, Order::Signal(Signal::USR1));
            sent += 1;
            assert!(sent < 100_000, "the socket never filled");
        }
        out.send(&snug, Order::Signal(Signal::USR1));
        out.send(&snug, Order::Grace);
        out.send(&snug, Order::Signal(Signal::TERM));
        assert_eq!(out.queue, [Order::Signal(Signal::USR1), Order::Grace, Order::Signal(Signal::TERM)]);
        let mut got = Vec::new();
        while out.waiting() || !got.ends_with(&[Order::Signal(Signal::TERM)]) {
            if let Ok(Received::Packet(Some(ToInit::Order(o)), _)) = init.recv_message(true) {
                got.push(o);
            }
            out.flush(&snug);
        }
        assert_eq!(got.len(), sent + 2);
        assert_eq!(&got[got.len() - 2..], [Order::Grace, Order::Signal(Signal::TERM)]);
    }
}
