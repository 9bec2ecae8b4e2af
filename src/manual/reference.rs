//! The README's reference as roff for snug(1) (SPEC O7): the README is the one source, built
//! into the binary (`include_str!`), so `man snug` and the README cannot say different things.
//! Only the markdown the README uses is converted: `##`/`###` headings, paragraphs, `-` lists,
//! fenced code, tables, and inline code, bold and links (`groff_man(7)`, `man-pages(7)`).

/// The README as this binary was built with it.
const README: &str = include_str!("../../README.md");

/// The README's `##` sections snug(1) carries, in the README's order: what a user of the
/// command looks up (profiles and grants, terminals, CI, exit status, environment, files,
/// examples); the introduction, "How it works" and "Development" stay in the README.
pub const SECTIONS: [&str; 13] = [
    "Usage",
    "What the default profiles grant",
    "Keeping a run's changes aside: `--cow`",
    "Signals, terminals and exit status",
    "A network of snug's own: `--net-allow`",
    "Bounds",
    "Reports and timeouts (for CI harnesses)",
    "In CI",
    "Live sandboxes",
    "Exit status",
    "Environment",
    "Files",
    "Known limitations",
];

/// Each of [`SECTIONS`] as (heading, markdown body), in order; a heading the README lacks is
/// left out (the unit test below fails then).
pub fn sections() -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut current: Option<(&'static str, String)> = None;
    for line in README.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            out.extend(current.take());
            current = SECTIONS.iter().find(|s| **s == h).map(|s| (*s, String::new()));
            continue;
        }
        if let Some((_, body)) = current.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out.extend(current);
    out
}

/// The README's "Exit status" as snug(1)'s EXIT STATUS, for every page (SPEC O7).
pub fn exit_status() -> String {
    let body = sections().into_iter().find(|(h, _)| *h == "Exit status").map(|(_, b)| b).unwrap_or_default();
    format!(".SH \"EXIT STATUS\"\n{}", from_markdown(&body))
}

/// The sections as roff, each a `.SH` named by its heading in capitals.
pub fn roff() -> String {
    let mut out = String::new();
    for (heading, body) in sections() {
        out.push_str(&format!(".SH \"{}\"\n", heading_of(heading)));
        out.push_str(&from_markdown(&body));
    }
    out
}

/// One section's markdown body as roff.
pub fn from_markdown(md: &str) -> String {
    let mut out = String::new();
    let mut code = false;
    // The paragraph or list item being read: converted whole, as a code span or bold may
    // run over a line break.
    let mut text = String::new();
    let flush = |out: &mut String, text: &mut String| {
        if !text.is_empty() {
            out.push_str(&guard(&inline(text)));
            out.push('\n');
            text.clear();
        }
    };
    for line in md.lines() {
        if line.starts_with("```") {
            flush(&mut out, &mut text);
            out.push_str(if code { ".fi\n.RE\n" } else { ".PP\n.RS 2\n.nf\n" });
            code = !code;
            continue;
        }
        if code {
            out.push_str(&guard(&escape(line)));
            out.push('\n');
            continue;
        }
        let t = line.trim();
        if let Some(h) = t.strip_prefix("### ") {
            flush(&mut out, &mut text);
            out.push_str(&format!(".SS \"{}\"\n", inline(h).replace('"', "")));
        } else if t.is_empty() {
            flush(&mut out, &mut text);
        } else if let Some(rest) = t.strip_prefix("- ").filter(|_| !line.starts_with(' ')) {
            flush(&mut out, &mut text);
            out.push_str(".IP \\(bu 2\n");
            text.push_str(rest);
        } else if t.starts_with('|') {
            flush(&mut out, &mut text);
            if t.trim_matches(|c| "|-: ".contains(c)).is_empty() {
                continue; // the header's rule
            }
            let cells: Vec<&str> = t.trim_matches('|').split(" | ").map(str::trim).collect();
            out.push_str(&format!(".TP\n\\fB{}\\fR\n", inline(cells[0])));
            out.push_str(&guard(&inline(&cells[1..].join("; "))));
            out.push('\n');
        } else if text.is_empty() {
            out.push_str(".PP\n");
            text.push_str(t);
        } else {
            text.push(' ');
            text.push_str(t);
        }
    }
    flush(&mut out, &mut text);
    if code {
        out.push_str(".fi\n.RE\n");
    }
    out
}

/// roff's escapes for text: the backslash and the minus sign.
fn escape(s: &str) -> String {
    s.replace('\\', "\\e").replace('-', "\\-")
}

/// A text line that would start with a request's `.` or `'` is kept as text.
fn guard(s: &str) -> String {
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s.to_string()
    }
}

/// Inline markdown: `code` and **bold** in bold, [text](target) as text, the rest escaped.
fn inline(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('`') {
            if let Some(end) = after.find('`') {
                out.push_str(&format!("\\fB{}\\fR", escape(&after[..end])));
                rest = &after[end + 1..];
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix("**") {
            if let Some(end) = after.find("**") {
                out.push_str(&format!("\\fB{}\\fR", inline(&after[..end])));
                rest = &after[end + 2..];
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix('[') {
            if let Some((text, tail)) = after.split_once("](") {
                if let Some(close) = tail.find(')') {
                    out.push_str(&inline(text));
                    rest = &tail[close + 1..];
                    continue;
                }
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push_str(&escape(&c.to_string()));
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A README heading as snug(1)'s section name: capitals, without markup.
pub fn heading_of(h: &str) -> String {
    escape(&h.replace('`', "").to_uppercase())
}

/// Text without markup, whitespace folded: what a reader sees of a markdown or roff text, to
/// compare the two.
#[cfg(test)]
pub fn words_of_markdown(md: &str) -> String {
    let mut out = String::new();
    let mut code = false;
    for line in md.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            code = !code;
            continue;
        }
        if code {
            out.push_str(&t.replace('|', " "));
            out.push(' ');
            continue;
        }
        if t.starts_with('|') && t.trim_matches(|c| "|-: ".contains(c)).is_empty() {
            continue;
        }
        let t = t.strip_prefix("### ").or_else(|| t.strip_prefix("- ")).unwrap_or(t);
        let mut s = String::new();
        let mut rest = t;
        // Links keep their text.
        while let Some(at) = rest.find("](") {
            let Some(open) = rest[..at].rfind('[') else { break };
            let close = rest[at..].find(')').map_or(rest.len(), |c| at + c + 1);
            s.push_str(&rest[..open]);
            s.push_str(&rest[open + 1..at]);
            rest = &rest[close..];
        }
        s.push_str(rest);
        out.push_str(&s.replace("**", "").replace('`', "").replace('|', " "));
        out.push(' ');
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// [`words_of_markdown`]'s counterpart for the roff [`roff`] makes.
#[cfg(test)]
pub fn words_of_roff(roff: &str) -> String {
    let mut out = String::new();
    for line in roff.lines() {
        if let Some(h) = line.strip_prefix(".SS ") {
            out.push_str(h.trim_matches('"'));
        } else if line.starts_with('.') {
            continue;
        } else {
            out.push_str(line.strip_prefix("\\&").unwrap_or(line));
        }
        out.push(' ');
    }
    let text = out.replace("\\fB", "").replace("\\fR", "").replace("\\-", "-").replace("\\e", "\\").replace('|', " ");
    text.replace(';', " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// O7: snug(1) carries every reference section of the README, word for word.
    #[test]
    fn o7_manpage_carries_the_readme_reference() {
        let found: Vec<&str> = sections().iter().map(|(h, _)| *h).collect();
        assert_eq!(found, SECTIONS.to_vec(), "a reference section is missing from the README");
        let man = super::super::manpage().expect("manpage");
        for (heading, body) in sections() {
            let sh = format!(".SH \"{}\"", heading_of(heading));
            let at = man.find(&sh).unwrap_or_else(|| panic!("{sh} missing from snug(1)"));
            let rest = &man[at + sh.len()..];
            let end = rest.find("\n.SH ").map_or(rest.len(), |e| e + 1);
            let want = words_of_markdown(&body).replace(';', " ").split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(words_of_roff(&rest[..end]), want, "{heading}");
        }
        for name in ["PROFILES", "EXIT STATUS", "ENVIRONMENT", "FILES", "IN CI", "TERMINALS", "USAGE"] {
            assert!(man.contains(&format!(".SH \"{name}")) || man.contains(name), "{name}");
        }
    }

    #[test]
    fn o7_markdown_to_roff() {
        let r = from_markdown("A `-p` and **bold** [link](x.md) `a\nb`.\n\n- one\n  two\n\n```sh\n.dot\n```\n| a | b |\n|---|---|\n| c | d |\n");
        assert!(r.contains(".PP\nA \\fB\\-p\\fR and \\fBbold\\fR link \\fBa b\\fR."), "{r}");
        assert!(r.contains(".IP \\(bu 2\none two\n"), "{r}");
        assert!(r.contains(".nf\n\\&.dot\n.fi"), "{r}");
        assert!(r.contains(".TP\n\\fBa\\fR\nb\n.TP\n\\fBc\\fR\nd\n"), "{r}");
    }
}
