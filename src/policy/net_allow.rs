//! A profile's `net_allow` key (SPEC N5): each pattern checked as `--net-allow` checks it,
//! kept with the profile that gave it, so that a bad one and a clash with `@net` name it.

use crate::profiles::Profile;

/// Add `p`'s patterns to `all`, each with `p`'s name.
///
/// # Errors
/// The first pattern not understood, with why.
pub fn add(p: &Profile, all: &mut Vec<(String, String)>) -> Result<(), (String, String)> {
    for raw in &p.net_allow {
        snug_core::net_allow::Pattern::parse(raw).map_err(|e| (raw.clone(), e.why))?;
        all.push((raw.clone(), p.name.clone()));
    }
    Ok(())
}
