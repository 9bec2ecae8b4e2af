//! Every message of every link round-trips through its encoding; every packet cut short, too
//! long, or with a tag the link does not know is refused. Values are swept over the edges of
//! their ranges (every signal number, the extremes of i32), property-style.

use super::*;

/// i32 values at the edges: zero, signs, the byte boundaries, the extremes.
const INTS: [i32; 12] = [0, 1, -1, 2, 9, 0x7f, 0x80, 0xff, 0x100, 0xffff, i32::MIN, i32::MAX];

fn signals() -> impl Iterator<Item = Signal> {
    (1..=64).map(Signal)
}

/// Every wait status `waitpid(2)` can give (signals 1–64, exit codes 0–255).
fn statuses() -> Vec<WaitStatus> {
    let mut all: Vec<WaitStatus> = (0..=255).map(WaitStatus::Exited).collect();
    for sig in signals() {
        all.extend([WaitStatus::Signaled { sig, core: false }, WaitStatus::Signaled { sig, core: true }]);
        all.push(WaitStatus::Stopped(sig));
    }
    all.push(WaitStatus::Continued);
    all
}

fn from_init() -> Vec<FromInit> {
    let mut all = vec![FromInit::Hello, FromInit::Halted, FromInit::Empty, FromInit::Interrupt(false)];
    all.extend([FromInit::Interrupt(true), FromInit::Leaving(None)]);
    for v in INTS {
        all.extend([FromInit::Started(Pid(v)), FromInit::ExecFailed(Errno(v)), FromInit::InitFailed(Errno(v))]);
        if let Ok(n) = u32::try_from(v) {
            all.push(FromInit::Leaving(Some(n)));
        }
    }
    all.extend(signals().map(FromInit::Stopped));
    all.extend(statuses().into_iter().map(FromInit::Exited));
    all
}

fn to_init() -> Vec<ToInit> {
    let mut all = vec![ToInit::Exec];
    for o in [Order::Go, Order::Grace, Order::Stop, Order::Front(false), Order::Front(true)] {
        all.push(ToInit::Order(o));
    }
    all.extend([Resume::Job, Resume::All].map(|r| ToInit::Order(Order::Continue(r))));
    for sig in signals().chain(INTS.map(Signal)) {
        all.extend([Order::Signal(sig), Order::Key(sig), Order::Typed(sig)].map(ToInit::Order));
    }
    all
}

fn control() -> Vec<Control> {
    let mut all = vec![Control::Info, Control::Exec, Control::Stop { now: false }, Control::Stop { now: true }];
    all.extend(signals().chain(INTS.map(Signal)).map(Control::Signal));
    all
}

fn exec_ask() -> Vec<ExecAsk> {
    let mut all = vec![ExecAsk::OpenPty, ExecAsk::Run { tty: false }, ExecAsk::Run { tty: true }];
    all.extend(signals().chain(INTS.map(Signal)).map(ExecAsk::Kill));
    all
}

fn exec_told() -> Vec<ExecTold> {
    let mut all = Vec::new();
    for v in INTS {
        all.extend([ExecTold::Master(Errno(v)), ExecTold::Cmd(ToClient::Failed(Errno(v)))]);
        all.push(ExecTold::Cmd(ToClient::Started(Pid(v))));
    }
    all.extend(signals().map(|s| ExecTold::Cmd(ToClient::Stopped(s))));
    all.extend(statuses().into_iter().map(|s| ExecTold::Cmd(ToClient::Exited(s))));
    all
}

/// `bytes` decodes to `m`; every shorter prefix and `bytes` with a byte more decode to nothing.
fn round_trips<M: Copy + PartialEq + std::fmt::Debug>(m: M, bytes: &[u8], decode: fn(&[u8]) -> Option<M>) {
    assert_eq!(decode(bytes), Some(m), "{bytes:?}");
    for cut in 0..bytes.len() {
        assert_eq!(decode(&bytes[..cut]), None, "{m:?} cut to {cut} bytes");
    }
    for extra in [0, 1, 0xff] {
        let longer = [bytes, &[extra]].concat();
        assert_eq!(decode(&longer), None, "{m:?} with a byte more");
    }
}

/// No frame with a tag outside `known` decodes, whatever its value.
fn unknown_tags_refused<M: std::fmt::Debug>(known: &[u8], decode: fn(&[u8]) -> Option<M>) {
    for tag in (0..=255u8).filter(|t| !known.contains(t)) {
        for v in INTS {
            assert!(decode(&frame(tag, v)).is_none(), "tag {tag} value {v}: {:?}", decode(&frame(tag, v)));
        }
    }
}

#[test]
fn frames_round_trip_and_refuse_other_shapes() {
    for tag in [0, 7, b'X', 0xff] {
        for v in INTS {
            assert_eq!(unframe(&frame(tag, v)), Some((tag, v)));
            assert_eq!(value_of(&frame(tag, v), tag), Some(v));
            assert_eq!(value_of(&frame(tag, v), tag ^ 1), None);
        }
    }
    assert_eq!(frame(b'X', 0x0102_0304), [b'X', 4, 3, 2, 1]);
    assert_eq!(unframe(b"X12"), None);
    assert_eq!(unframe(&[1, 0, 0, 0, 0, 0]), None);
}

#[test]
fn channel_from_init_round_trips_and_refuses_the_rest() {
    for m in from_init() {
        round_trips(m, &m.encode(), FromInit::decode);
    }
    unknown_tags_refused(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 11], FromInit::decode);
    // A count that does not fit the frame is no count; any nonzero value is an unanswered ^C.
    assert_eq!(FromInit::decode(&FromInit::Leaving(Some(u32::MAX)).encode()), Some(FromInit::Leaving(None)));
    assert_eq!(FromInit::decode(&frame(4, 5)), Some(FromInit::Interrupt(true)));
    assert_eq!(FromInit::Exited(WaitStatus::Exited(3)).encode(), [6, 0, 3, 0, 0]);
}

#[test]
fn channel_to_init_round_trips_and_refuses_the_rest() {
    for m in to_init() {
        round_trips(m, &m.encode(), ToInit::decode);
    }
    unknown_tags_refused(&[1, 2, 3, 4, 5, 6, 7, 8, 9], ToInit::decode);
    assert_eq!(ToInit::decode(&frame(7, 5)), Some(ToInit::Order(Order::Front(true))));
    assert_eq!(ToInit::decode(&frame(4, 5)), Some(ToInit::Order(Order::Continue(Resume::All))));
    assert_eq!(ToInit::Order(Order::Signal(Signal::TERM)).encode(), [3, 15, 0, 0, 0]);
}

#[test]
fn l1_l2_control_requests_round_trip_and_refuse_the_rest() {
    let mut buf = [0; FRAME];
    for m in control() {
        round_trips(m, m.encode(&mut buf), Control::decode);
    }
    unknown_tags_refused(b"S", Control::decode);
    for bad in [&b"T\x02"[..], b"I\0", b"E\0", b"S", b""] {
        assert_eq!(Control::decode(bad), None, "{bad:?}");
    }
    assert_eq!(Control::Stop { now: true }.encode(&mut buf), b"T\x01");
    assert_eq!(Control::Info.encode(&mut buf), b"I");
    assert_eq!(Control::Exec.encode(&mut buf), b"E");
}

#[test]
fn l3_exec_requests_round_trip_and_refuse_the_rest() {
    let mut buf = [0; FRAME];
    for m in exec_ask() {
        round_trips(m, m.encode(&mut buf), ExecAsk::decode);
    }
    unknown_tags_refused(b"OK", ExecAsk::decode);
    assert_eq!(ExecAsk::decode(&frame(b'O', 1)), None, "a pty is asked with 0");
    assert_eq!(ExecAsk::decode(b"R\x03"), Some(ExecAsk::Run { tty: true }));
    assert_eq!(ExecAsk::decode(b"R\x02"), Some(ExecAsk::Run { tty: false }));
    assert_eq!(ExecAsk::Run { tty: true }.encode(&mut buf), b"R\x01");
}

#[test]
fn l3_exec_answers_round_trip_and_refuse_the_rest() {
    for m in exec_told() {
        round_trips(m, &m.encode(), ExecTold::decode);
    }
    unknown_tags_refused(b"MPFXZ", ExecTold::decode);
    assert_eq!(ExecTold::Cmd(ToClient::Exited(WaitStatus::Exited(7))).encode(), [b'X', 0, 7, 0, 0]);
}
