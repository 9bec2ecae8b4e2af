//! Carrying out a decision's effects: one shape for the three loops (the supervisor's,
//! init's, `snug exec`'s client's). Some effects answer with an event (the caller's terminal
//! took raw mode or not, snug was continued, the payload's exec-error pipe said something,
//! CMD was forked): the core decides on the answer before the next effect is carried out, so
//! that what it decides then comes first (R4: an exec error is reported before the end it
//! caused).
//!
//! [`Carried::Answer`] is the only way an answer goes back: [`carry_out`] decides on it and
//! puts what that gave in front of the effects still to come. No loop feeds an answer back by
//! calling itself, and where in its batch an answering effect stands does not matter.

use std::collections::VecDeque;
use std::ops::ControlFlow;

/// What carrying out one effect gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Carried<Ev, End> {
    /// Carried out; on with the next effect.
    Done,
    /// Carried out, and this is the answer: decided on before the next effect.
    Answer(Ev),
    /// The loop ends so; no further effect is carried out.
    End(End),
}

/// A loop that carries out a core's effects.
pub trait Carry {
    /// What the core decides on.
    type Event;
    /// What the core decides.
    type Effect;
    /// How an effect ends the loop ([`std::convert::Infallible`] for a loop that ends
    /// otherwise).
    type End;
    /// The core's decision on `ev`: the effects, in order.
    fn decide(&mut self, ev: Self::Event) -> Vec<Self::Effect>;
    /// Carry out `fx`, one system call or a few; nothing is decided here.
    fn carry(&mut self, fx: Self::Effect) -> Carried<Self::Event, Self::End>;
}

/// Decide on `ev` and carry out what was decided ([`carry_out`]).
pub fn on<C: Carry + ?Sized>(c: &mut C, ev: C::Event) -> ControlFlow<C::End> {
    let fx = c.decide(ev);
    carry_out(c, fx)
}

/// Carry out `fx` in order; an answer is decided on at once and its effects come before the
/// rest of `fx`. `Break` with the end an effect gave, the effects after it left undone.
pub fn carry_out<C: Carry + ?Sized>(c: &mut C, fx: Vec<C::Effect>) -> ControlFlow<C::End> {
    let mut todo = VecDeque::from(fx);
    while let Some(fx) = todo.pop_front() {
        match c.carry(fx) {
            Carried::Done => {}
            Carried::Answer(ev) => {
                for fx in c.decide(ev).into_iter().rev() {
                    todo.push_front(fx);
                }
            }
            Carried::End(end) => return ControlFlow::Break(end),
        }
    }
    ControlFlow::Continue(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A core whose event `n` decides `[Say(n), Ask(n)]` for n > 0 and nothing for 0, with a
    /// loop that records what it carried out; `Ask(n)` answers `n - 1`, `Ask(9)` ends.
    #[derive(Default)]
    struct Log(Vec<Fx>);

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Fx {
        Say(u8),
        Ask(u8),
        Stop,
    }

    impl Carry for Log {
        type Event = u8;
        type Effect = Fx;
        type End = &'static str;
        fn decide(&mut self, ev: u8) -> Vec<Fx> {
            match ev {
                0 => Vec::new(),
                9 => vec![Fx::Stop, Fx::Say(9)],
                n => vec![Fx::Ask(n), Fx::Say(n)],
            }
        }
        fn carry(&mut self, fx: Fx) -> Carried<u8, &'static str> {
            self.0.push(fx);
            match fx {
                Fx::Say(_) => Carried::Done,
                Fx::Ask(n) => Carried::Answer(n - 1),
                Fx::Stop => Carried::End("stop"),
            }
        }
    }

    /// Fails with the answer's effects queued after the rest, as a worklist does: `Say(2)`
    /// came before `Ask(1)`.
    #[test]
    fn an_answer_is_decided_on_before_the_next_effect() {
        let mut l = Log::default();
        assert_eq!(on(&mut l, 2), ControlFlow::Continue(()));
        assert_eq!(l.0, [Fx::Ask(2), Fx::Ask(1), Fx::Say(1), Fx::Say(2)]);
    }

    #[test]
    fn an_end_leaves_the_rest_undone() {
        let mut l = Log::default();
        assert_eq!(carry_out(&mut l, vec![Fx::Say(1), Fx::Stop, Fx::Say(2)]), ControlFlow::Break("stop"));
        assert_eq!(l.0, [Fx::Say(1), Fx::Stop]);
        // An end among an answer's effects ends the batch that asked too.
        let mut l = Log::default();
        assert_eq!(carry_out(&mut l, vec![Fx::Ask(10), Fx::Say(1)]), ControlFlow::Break("stop"));
        assert_eq!(l.0, [Fx::Ask(10), Fx::Stop]);
    }

    #[test]
    fn nothing_decided_carries_nothing() {
        let mut l = Log::default();
        assert_eq!(on(&mut l, 0), ControlFlow::Continue(()));
        assert!(l.0.is_empty());
    }
}
