//! The relay table is decided in the core ([`snug_core::supervisor::relay`]); this gives the
//! binary the raw numbers it blocks and reads through its signalfd (S2, G6).

/// The signals snug catches (every one the table does not answer with `Never`).
pub fn caught() -> Vec<i32> {
    snug_core::supervisor::relay::caught().into_iter().map(|s| s.raw()).collect()
}
