//! The end line of a failed run in a DIR whose owners the sandbox cannot map (SPEC P11):
//! there the payload sees them as the overflow uid (65534, `user_namespaces(7)`, "Unmapped
//! user and group IDs") and its writes fail as "Permission denied", which says nothing of why.

use super::Identity;
use std::path::Path;

/// Entries of DIR looked at: its top level, enough to find a checkout's or an archive's owner
/// without walking a large tree at the end of a run.
const LOOKED_AT: usize = 4096;

/// The line for a failed run in `dir` under `identity`, when DIR or an entry at its top level
/// belongs to a uid the sandbox does not map: the caller's alone for a caller other than
/// root, the ranges of snug's own user namespace as root.
pub fn unmapped_line(dir: &Path, identity: Identity) -> Option<String> {
    let mapped: Box<dyn Fn(u32) -> bool> = match identity {
        Identity::Caller => {
            let me = rustix::process::getuid().as_raw();
            Box::new(move |uid| uid == me)
        }
        _ => {
            let ranges = own_ranges();
            Box::new(move |uid| ranges.iter().any(|&(first, count)| uid >= first && uid - first < count))
        }
    };
    let foreign = foreign_owners(dir, &*mapped);
    let first = *foreign.first()?;
    let more = match foreign.len() {
        1 => String::new(),
        n => format!(" and {} other uid{}", n - 1, if n == 2 { "" } else { "s" }),
    };
    let how = match identity {
        Identity::Caller => format!("run snug as uid {first}, or as root, which maps every owner"),
        _ => "snug's own user namespace does not map them either".to_string(),
    };
    Some(format!(
        "{} holds files of uid {first}{more}, which the sandbox cannot map: the payload sees them as \
         uid 65534 and cannot write them as their owner; {how}",
        dir.display()
    ))
}

/// The uids owning `dir` or an entry at its top level for which `mapped` is false, each once.
fn foreign_owners(dir: &Path, mapped: &dyn Fn(u32) -> bool) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut note = |uid: u32| {
        if !mapped(uid) && !out.contains(&uid) {
            out.push(uid);
        }
    };
    if let Ok(m) = std::fs::symlink_metadata(dir) {
        note(m.uid());
    }
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten().take(LOOKED_AT) {
        if let Ok(m) = entry.metadata() {
            note(m.uid());
        }
    }
    out
}

/// snug's own uid ranges, `(first, count)`, from `/proc/self/uid_map`.
fn own_ranges() -> Vec<(u32, u32)> {
    let text = std::fs::read_to_string("/proc/self/uid_map").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let w: Vec<u32> = l.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            (w.len() == 3).then(|| (w[0], w[2]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p11_foreign_owners_of_a_dir() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "").unwrap();
        let me = std::fs::metadata(dir.path()).unwrap().uid();
        assert!(foreign_owners(dir.path(), &|u| u == me).is_empty());
        assert_eq!(foreign_owners(dir.path(), &|_| false), vec![me]);
    }
}
