//! The record's decisions (SPEC O5, O6), without a sandbox.

use super::json::short_name;
use super::*;
use serde_json::Value;
use snug_core::{Pid, Signal, WaitStatus};

fn got(sig: Signal, code: i32, pid: Option<Pid>) -> Delivered {
    Delivered { sig, code, pid }
}

fn exited(code: i32) -> i32 {
    code << 8
}

#[test]
fn o5_payload_and_payload_signal() {
    let mut r = RunRecord::new();
    r.report(FromInit::Started(Pid(2)));
    r.report(FromInit::Exited(WaitStatus::from_raw(exited(3))));
    assert_eq!(r.close(&Outcome::Status(WaitStatus::Exited(3))), EndedBy::Payload);
    let mut r = RunRecord::new();
    r.report(FromInit::Exited(WaitStatus::from_raw(libc::SIGKILL)));
    assert_eq!(r.close(&Outcome::Signal(Signal::KILL)), EndedBy::PayloadSignal);
}

#[test]
fn o5_relayed_handled_even_with_exit_0() {
    let mut r = RunRecord::new();
    r.report(FromInit::Started(Pid(2)));
    r.signal(&got(Signal::TERM, 0, Some(Pid(42))), Action::RelayWithGrace);
    r.report(FromInit::Exited(WaitStatus::from_raw(0)));
    assert_eq!(r.close(&Outcome::Status(WaitStatus::Exited(0))), EndedBy::RelayedHandled);
    let v: Value =
        serde_json::from_str(&r.to_json(EndedBy::RelayedHandled, &Outcome::Status(WaitStatus::Exited(0)))).unwrap();
    assert_eq!(v["signals"][0]["name"], "TERM");
    assert_eq!(v["signals"][0]["pid"], 42);
    assert_eq!(v["signals"][0]["relayed"], true);
    assert_eq!(v["payload"]["code"], 0);
}

#[test]
fn o5_a_signal_after_the_payload_ended_did_not_end_it() {
    let mut r = RunRecord::new();
    r.report(FromInit::Exited(WaitStatus::from_raw(0)));
    r.signal(&got(Signal::TERM, 0, Some(Pid(42))), Action::RelayWithGrace);
    assert_eq!(r.close(&Outcome::Status(WaitStatus::Exited(0))), EndedBy::Payload);
}

#[test]
fn o5_teardowns_and_errors() {
    let mut r = RunRecord::new();
    r.signal(&got(Signal::TERM, 0, Some(Pid(42))), Action::RelayWithGrace);
    r.teardown(EndedBy::GraceExpired, None);
    assert_eq!(r.close(&Outcome::Signal(Signal::TERM)), EndedBy::GraceExpired);
    r.teardown(EndedBy::SecondSignal, None); // the first reason stays
    assert_eq!(r.close(&Outcome::Signal(Signal::TERM)), EndedBy::GraceExpired);
    let mut r = RunRecord::new();
    r.signal(&got(Signal::TERM, 0, Some(Pid(42))), Action::RelayWithGrace);
    r.teardown(EndedBy::SecondSignal, None);
    assert_eq!(r.close(&Outcome::Signal(Signal::TERM)), EndedBy::SecondSignal);
    let mut r = RunRecord::new();
    r.report(FromInit::ExecFailed(snug_core::Errno(libc::ENOENT)));
    r.report(FromInit::Exited(WaitStatus::from_raw(exited(127))));
    assert_eq!(r.close(&Outcome::Fail(crate::error::failure(127, "x: not found"))), EndedBy::SnugError);
    let v: Value = serde_json::from_str(
        &r.to_json(EndedBy::SnugError, &Outcome::Fail(crate::error::failure(127, "x: not found"))),
    )
    .unwrap();
    assert!(v["payload"].is_null());
    assert_eq!(v["snug_exit"]["code"], 127);
}

#[test]
fn o6_timeout_fires_once_and_names_its_term() {
    let mut r = RunRecord::new();
    r.arm(Some(Duration::from_millis(0)));
    assert!(r.deadline().is_some());
    r.timing_out();
    r.signal(&got(Signal::TERM, 0, Some(Pid(1))), Action::RelayWithGrace);
    r.report(FromInit::Exited(WaitStatus::from_raw(0)));
    assert_eq!(r.close(&Outcome::Status(WaitStatus::Exited(0))), EndedBy::Timeout);
    let v: Value =
        serde_json::from_str(&r.to_json(EndedBy::Timeout, &Outcome::Status(WaitStatus::Exited(124)))).unwrap();
    assert_eq!(v["signals"][0]["origin"], "timeout");
    assert_eq!(v["snug_exit"]["code"], 124);
    assert_eq!(v["timeout_ms"], 0);
}

#[test]
fn o5_signal_list_is_bounded() {
    let mut r = RunRecord::new();
    for _ in 0..MAX_SIGNALS + 5 {
        r.signal(&got(Signal::USR1, 0, Some(Pid(7))), Action::Relay);
    }
    let v: Value = serde_json::from_str(&r.to_json(EndedBy::Payload, &Outcome::Status(WaitStatus::Exited(0)))).unwrap();
    assert_eq!(v["signals"].as_array().map(Vec::len), Some(MAX_SIGNALS));
    assert_eq!(v["signals_omitted"], 5);
    assert_eq!((short_name(Signal(37)), short_name(Signal::TERM)), ("RTMIN+3".into(), "TERM".into()));
    assert_eq!(
        (short_name(Signal(32)), short_name(Signal(64)), short_name(Signal(0))),
        ("SIG32".into(), "RTMAX".into(), "0".into())
    );
}
