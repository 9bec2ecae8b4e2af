//! G2's SIGCONT after a relay: a sandbox process that is stopped when TERM is relayed still
//! runs its handler within the grace, as under systemd (`SendSIGCONT=`).

use crate::common::{everyone, marker, stat};
use crate::relay::kit::{ms, sh, How, Run};
use std::time::Duration;

/// The main shell dies of TERM at once; its background worker handles TERM (writes `handled`
/// to `out` and exits 0) but has stopped itself (`kill -STOP $$`) before the TERM comes, the
/// way a worker paused by a sibling or by itself sits when the operator stops the run.
fn stopped_worker(mark: &str) -> Vec<String> {
    sh(&format!("sh -c 'trap \"echo handled >> out; exit 0\" TERM; kill -STOP $$; sleep 100' {mark} & wait"))
}

#[test]
fn g2_stopped_worker_continued_after_relay() {
    for who in everyone() {
        let mark = marker();
        let mut run = Run::start(who, How::snug(), &mark, &stopped_worker(&mark));
        let stopped = || run.left().iter().any(|p| stat(*p).is_some_and(|s| s.state == 'T'));
        assert!(
            crate::common::until(Duration::from_secs(10), stopped),
            "{who:?}: the worker never stopped; stderr: {}",
            run.stderr()
        );
        let sent = run.signal(libc::SIGTERM);
        let (_, at) = run.end(Duration::from_secs(10));
        let took = ms(sent, at);
        println!("G2 {who:?}: stopped worker's handler ran; snug gone {took} ms after TERM");
        // Fails without the CONT: `out` stayed empty and snug tore down when the grace ran
        // out (gone 1003 ms after TERM, the worker killed while stopped).
        assert_eq!(run.read("out"), "handled\n", "{who:?}: stderr: {}", run.stderr());
        assert!(took < 900, "{who:?}: gone {took} ms after TERM: the grace ran out");
        assert!(run.left().is_empty(), "{who:?}: left {:?}", run.left());
    }
}
