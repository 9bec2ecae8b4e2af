//! Makefile: one build, the one installed and benchmarked, and `snug --version` says which.

use crate::common::*;
use std::process::Command;

/// `snug --version` names how the binary was linked (static musl, static glibc or dynamic),
/// and the Makefile chooses musl when `build` runs, not when make reads the file (so `make
/// setup install` builds once, with musl once `install-deps` added its target). Without the
/// fix `--version` said "snug 0.1.0" alone and the choice was an `ifeq` made at parse time.
#[test]
fn o7_version_says_which_build_and_make_chooses_at_build_time() {
    let o = run_bounded(Command::new(snug()).arg("--version"), crate::conventions::LIMIT);
    let line = o.out.trim_end();
    let kinds = ["(static, musl)", "(static, glibc)", "(dynamic, glibc)"];
    assert!(line.starts_with("snug ") && kinds.iter().any(|k| line.ends_with(k)), "{line}");
    let make = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Makefile")).expect("Makefile");
    assert!(!make.contains("ifeq ($(HAVE_MUSL)") && !make.contains("HAVE_MUSL :="), "parse-time choice");
    let build = make.split("\nbuild:\n").nth(1).expect("build rule");
    assert!(build.contains("--print target-libdir --target $(MUSL)"), "{build}");
}
