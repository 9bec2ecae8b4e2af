//! snug's resolver in the sandbox (SPEC N5, N6): every DNS question the payload sends, to
//! whatever address, arrives at snug's sockets on port 53 (every address is local there).
//! An allowed name gets its pool addresses ([`snug_core::net_allow::Pool`]), any other name
//! NXDOMAIN; an allowed name's other record types get an empty answer. Nothing is ever
//! forwarded, so DNS cannot carry anything out. Replies leave from the address the question
//! went to (`IP_PKTINFO`, `IPV6_PKTINFO`; `ip(7)`, `ipv6(7)`): a stub that asked 127.0.0.53
//! or ::1 takes no answer from another address. Messages are parsed and built by
//! hickory-proto.

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, OwnedFd};

use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA};
use hickory_proto::rr::{RData, Record, RecordType};
use snug_core::net_allow::{Allowed, Decision, Pool, Reason, Verdict};

/// The time to live of an answer, in seconds: a name's pool addresses hold for the run.
const TTL: u32 = 60;

/// The answer to the DNS message `query`, and the decision it was; `None` when `query` is not
/// a question at all (dropped, as a resolver drops garbage).
pub fn answer(query: &[u8], allowed: &Allowed, pool: &mut Pool) -> Option<(Vec<u8>, Option<Decision>)> {
    let q = Message::from_vec(query).ok()?;
    if q.message_type() != MessageType::Query {
        return None;
    }
    let mut r = Message::new();
    r.set_id(q.id())
        .set_message_type(MessageType::Response)
        .set_op_code(q.op_code())
        .set_recursion_desired(q.recursion_desired())
        .set_recursion_available(true)
        .set_authoritative(true);
    r.add_queries(q.queries().iter().cloned());
    if q.op_code() != OpCode::Query || q.queries().len() != 1 {
        r.set_response_code(ResponseCode::NotImp);
        return Some((r.to_vec().ok()?, None));
    }
    let question = &q.queries()[0];
    let name = question.name().to_ascii().trim_end_matches('.').to_ascii_lowercase();
    let decide =
        |verdict| Decision { kind: "dns", subject: name.clone(), upstream: None, verdict, sent: 0, received: 0 };
    let decision;
    if !allowed.name_allowed(&name) {
        r.set_response_code(ResponseCode::NXDomain);
        decision = Some(decide(Verdict::Refused(Reason::NameNotAllowed)));
    } else if let Some((v4, v6)) = pool.addresses(&name) {
        let owner = question.name().clone();
        match question.query_type() {
            RecordType::A => {
                r.add_answer(Record::from_rdata(owner, TTL, RData::A(A(v4))));
            }
            RecordType::AAAA => {
                r.add_answer(Record::from_rdata(owner, TTL, RData::AAAA(AAAA(v6))));
            }
            _ => {}
        }
        decision = Some(decide(Verdict::Allowed));
    } else {
        r.set_response_code(ResponseCode::ServFail);
        // One subject for all of them: the tally counts them together.
        let mut d = decide(Verdict::Refused(Reason::TooManyNames));
        d.subject = "names past the bound".into();
        decision = Some(d);
    }
    Some((r.to_vec().ok()?, decision))
}

/// One datagram read from a DNS socket: its bytes, who sent it, and the address it was sent
/// to (the reply's source).
pub struct Datagram {
    /// The message.
    pub bytes: Vec<u8>,
    from: nix::sys::socket::SockaddrStorage,
    to: To,
}

enum To {
    V4(libc::in_pktinfo),
    V6(libc::in6_pktinfo),
}

/// Read one datagram from the UDP socket `fd` without waiting; `None` when none waits.
pub fn receive(fd: &OwnedFd) -> Option<Datagram> {
    use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags, SockaddrStorage};
    let mut buf = vec![0u8; 4096];
    let mut space = nix::cmsg_space!(libc::in6_pktinfo);
    let (n, from, to) = {
        let mut iov = [IoSliceMut::new(&mut buf)];
        let got =
            recvmsg::<SockaddrStorage>(fd.as_raw_fd(), &mut iov, Some(&mut space), MsgFlags::MSG_DONTWAIT).ok()?;
        let mut to = None;
        for c in got.cmsgs().ok()? {
            match c {
                ControlMessageOwned::Ipv4PacketInfo(i) => to = Some(To::V4(i)),
                ControlMessageOwned::Ipv6PacketInfo(i) => to = Some(To::V6(i)),
                _ => {}
            }
        }
        (got.bytes, got.address?, to?)
    };
    buf.truncate(n);
    Some(Datagram { bytes: buf, from, to })
}

/// Send `reply` to whoever sent `d`, from the address `d` was sent to.
pub fn reply(fd: &OwnedFd, d: &Datagram, reply: &[u8]) {
    use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
    let iov = [IoSlice::new(reply)];
    let flags = MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
    let _ = match &d.to {
        To::V4(i) => {
            // The source is the address asked (the header's destination), on any interface.
            let info = libc::in_pktinfo { ipi_ifindex: 0, ipi_spec_dst: i.ipi_addr, ipi_addr: i.ipi_addr };
            sendmsg(fd.as_raw_fd(), &iov, &[ControlMessage::Ipv4PacketInfo(&info)], flags, Some(&d.from))
        }
        To::V6(i) => {
            let info = libc::in6_pktinfo { ipi6_addr: i.ipi6_addr, ipi6_ifindex: 0 };
            sendmsg(fd.as_raw_fd(), &iov, &[ControlMessage::Ipv6PacketInfo(&info)], flags, Some(&d.from))
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::Query;
    use hickory_proto::rr::Name;
    use std::str::FromStr;

    fn ask(name: &str, t: RecordType) -> Vec<u8> {
        let mut m = Message::new();
        m.set_id(7).set_recursion_desired(true);
        m.add_query(Query::query(Name::from_str(name).unwrap(), t));
        m.to_vec().unwrap()
    }

    #[test]
    fn n5_allowed_names_get_pool_addresses_others_nxdomain() {
        let allowed = Allowed::parse(&["pkgs.example", "*.cdn.example"]).unwrap();
        let mut pool = Pool::default();
        let (bytes, d) = answer(&ask("PKGS.example.", RecordType::A), &allowed, &mut pool).unwrap();
        let m = Message::from_vec(&bytes).unwrap();
        assert_eq!((m.id(), m.response_code()), (7, ResponseCode::NoError));
        assert_eq!(m.answers()[0].data(), Some(&RData::A(A::new(198, 18, 0, 1))));
        assert_eq!(d.unwrap().verdict, Verdict::Allowed);
        let (bytes, _) = answer(&ask("a.cdn.example.", RecordType::AAAA), &allowed, &mut pool).unwrap();
        let m = Message::from_vec(&bytes).unwrap();
        assert!(matches!(m.answers()[0].data(), Some(RData::AAAA(_))));
        let (bytes, _) = answer(&ask("pkgs.example.", RecordType::MX), &allowed, &mut pool).unwrap();
        let m = Message::from_vec(&bytes).unwrap();
        assert_eq!((m.response_code(), m.answers().len()), (ResponseCode::NoError, 0));
        let (bytes, d) = answer(&ask("evil.example.", RecordType::A), &allowed, &mut pool).unwrap();
        assert_eq!(Message::from_vec(&bytes).unwrap().response_code(), ResponseCode::NXDomain);
        assert_eq!(d.unwrap().verdict, Verdict::Refused(Reason::NameNotAllowed));
        assert!(answer(b"\x00\x01garbage", &allowed, &mut pool).is_none());
    }
}
