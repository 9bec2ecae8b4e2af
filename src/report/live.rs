//! The record's events as they happen, for `--events` (SPEC O9): each is emitted where the
//! record writes it down, with the fields the report gives the same thing.

use serde_json::json;

use super::json::{short_name, signal_out, Status};
use super::SignalEvent;
use crate::events::{emit, on};

/// A signal snug received and what it did with it: the report's `signals` entry (its `ms`
/// is the event's own).
pub(super) fn signal(e: &SignalEvent) {
    if on() {
        let mut v = serde_json::to_value(signal_out(e)).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.remove("ms");
        }
        emit("signal", v);
    }
}

/// The grace started with signal `sig` (G2).
pub(super) fn grace(sig: snug_core::Signal) {
    if on() {
        emit("grace", json!({ "signal": short_name(sig), "grace_ms": 1000 }));
    }
}

/// The payload's main process started, or exited with `status`.
pub(super) fn payload(what: &str, status: Option<snug_core::WaitStatus>) {
    if on() {
        match status {
            Some(st) => emit(what, json!({ "payload": Status::of(st) })),
            None => emit(what, json!({})),
        }
    }
}

/// The payload stopped with `sig` (terminal mode tells it).
pub(super) fn stopped(sig: snug_core::Signal) {
    if on() {
        emit("payload_stopped", json!({ "signal": short_name(sig) }));
    }
}

/// The timeout acts (O6), after `ms`.
pub(super) fn timeout(ms: Option<u64>) {
    emit("timeout", json!({ "timeout_ms": ms }));
}

/// `snug stop` asked the run to end (L2).
pub(super) fn stop_requested() {
    emit("stop_requested", json!({}));
}

/// snug tears the sandbox down, `why` (the report's `ended_by` word), killing `killed`.
pub(super) fn teardown(why: &str, killed: Option<u32>) {
    emit("teardown", json!({ "why": why, "killed_at_end": killed }));
}

/// Init leaves at the payload's end, killing `killed` other processes (R5).
pub(super) fn killed(killed: Option<u32>) {
    emit("killed", json!({ "killed_at_end": killed }));
}
