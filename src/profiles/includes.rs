//! Following a profile's includes (SPEC P2, P4): depth first, each profile once, a cycle
//! or a chain deeper than [`MAX_INCLUDE_DEPTH`] an error.

use crate::error::{failure, POLICY};
use crate::profiles::Profile;

/// How deep includes may nest below a requested profile (SPEC P4).
pub const MAX_INCLUDE_DEPTH: usize = 32;

/// Whether profile `name` and everything it includes load: no include cycle, no chain
/// deeper than [`MAX_INCLUDE_DEPTH`], every included profile found and valid (for
/// `profile list`, SPEC P4). `load` reads one profile (the list caches them: 20,000
/// profiles in one chain would otherwise be read 33 times each).
///
/// # Errors
/// What `-p NAME` would fail with.
pub fn check_includes(name: &str, load: &mut dyn FnMut(&str) -> anyhow::Result<Profile>) -> anyhow::Result<()> {
    visit(name, &mut Vec::new(), &mut Vec::new(), load)
}

/// Depth-first: a profile, then its includes, into `order` (`chain` holds the includers);
/// each profile once; a cycle is an error.
pub fn visit(
    name: &str,
    chain: &mut Vec<String>,
    order: &mut Vec<Profile>,
    load: &mut dyn FnMut(&str) -> anyhow::Result<Profile>,
) -> anyhow::Result<()> {
    if chain.iter().any(|c| c == name) {
        chain.push(name.to_string());
        return Err(failure(POLICY, format!("include cycle: {}", chain.join(" -> "))));
    }
    if order.iter().any(|p| p.name == name) {
        return Ok(());
    }
    if chain.len() > MAX_INCLUDE_DEPTH {
        // SPEC P4: a bound, so a 20,000-deep chain is an error, not a stack overflow.
        let by = chain.last().map(String::as_str).unwrap_or_default();
        let file = order.iter().find(|p| p.name == by).map(|p| p.source.label()).unwrap_or_default();
        return Err(failure(
            POLICY,
            format!("profile {by} ({file}): include {name}: includes nest deeper than {MAX_INCLUDE_DEPTH}"),
        ));
    }
    let p = load(name).map_err(|e| match chain.last() {
        Some(by) => failure(POLICY, format!("{} (included by {by})", crate::error::one_line(&e))),
        None => e,
    })?;
    let includes = p.include.clone();
    order.push(p);
    chain.push(name.to_string());
    for inc in &includes {
        visit(inc, chain, order, load)?;
    }
    chain.pop();
    Ok(())
}
