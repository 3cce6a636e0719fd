//! File name patterns: `data/*.csv`, `logs/2024-??.csv`, `data/**/part-*.csv`. `*` matches
//! any run of characters within one path component, `?` one character, `[abc]` / `[a-z]`
//! one of a set, and a `**` component any number of directories. Matches come back sorted,
//! so a multi-file table reads its files in a stable order.

use std::io;
use std::path::{Path, PathBuf};

/// Whether `path` contains pattern characters.
pub fn is_pattern(path: &str) -> bool {
    path.contains(['*', '?', '['])
}

/// The files matching `pattern`, sorted by path.
pub fn expand(pattern: &str) -> io::Result<Vec<PathBuf>> {
    let absolute = pattern.starts_with('/');
    let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
    let root = if absolute {
        PathBuf::from("/")
    } else {
        PathBuf::from(".")
    };
    let mut out = Vec::new();
    walk(&root, &parts, &mut out, !absolute)?;
    out.sort();
    out.dedup();
    Ok(out)
}

fn walk(dir: &Path, parts: &[&str], out: &mut Vec<PathBuf>, relative: bool) -> io::Result<()> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(());
    };
    let join = |name: &std::ffi::OsStr| {
        if relative && dir == Path::new(".") {
            PathBuf::from(name)
        } else {
            dir.join(name)
        }
    };
    if *first == "**" {
        // Zero directories, then each subdirectory in turn.
        walk(dir, rest, out, relative)?;
        for entry in read_dir_sorted(dir)? {
            if entry.is_dir() {
                let name = entry.file_name().unwrap_or_default().to_owned();
                walk(&join(&name), parts, out, relative)?;
            }
        }
        return Ok(());
    }
    if !is_pattern(first) {
        return descend(join(std::ffi::OsStr::new(first)), rest, out, relative);
    }
    for entry in read_dir_sorted(dir)? {
        let Some(name) = entry.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.starts_with('.') && !first.starts_with('.') {
            continue;
        }
        if !matches(first.as_bytes(), name.as_bytes()) {
            continue;
        }
        descend(join(std::ffi::OsStr::new(name)), rest, out, relative)?;
    }
    Ok(())
}

/// `next` matched the current component: a file if it was the last, else a folder to walk.
fn descend(next: PathBuf, rest: &[&str], out: &mut Vec<PathBuf>, relative: bool) -> io::Result<()> {
    if rest.is_empty() {
        if next.is_file() {
            out.push(next);
        }
    } else if next.is_dir() {
        walk(&next, rest, out, relative)?;
    }
    Ok(())
}

fn read_dir_sorted(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    v.sort();
    Ok(v)
}

/// Whether `name` matches the one-component pattern `p`.
fn matches(p: &[u8], name: &[u8]) -> bool {
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < name.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ni));
                pi += 1;
                continue;
            }
            Some(b'?') => {
                pi += 1;
                ni += 1;
                continue;
            }
            Some(b'[') => {
                if let Some((ok, len)) = class(&p[pi..], name[ni]) {
                    if ok {
                        pi += len;
                        ni += 1;
                        continue;
                    }
                } else if name[ni] == b'[' {
                    pi += 1;
                    ni += 1;
                    continue;
                }
            }
            Some(&c) if c == name[ni] => {
                pi += 1;
                ni += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some((sp, sn)) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// A `[...]` class at the start of `p`: whether `c` is in it, and the class's length.
fn class(p: &[u8], c: u8) -> Option<(bool, usize)> {
    let end = p.iter().skip(1).position(|&x| x == b']')? + 1;
    let body = &p[1..end];
    let (negate, body) = match body.first() {
        Some(b'!' | b'^') => (true, &body[1..]),
        _ => (false, body),
    };
    let mut hit = false;
    let mut i = 0;
    while i < body.len() {
        if i + 2 < body.len() && body[i + 1] == b'-' {
            hit |= body[i] <= c && c <= body[i + 2];
            i += 3;
        } else {
            hit |= body[i] == c;
            i += 1;
        }
    }
    Some((hit != negate, end + 1))
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn matches_wildcards_and_classes() {
        let m = |p: &str, n: &str| matches(p.as_bytes(), n.as_bytes());
        assert!(m("*.csv", "a.csv"));
        assert!(m("*.csv", ".csv"));
        assert!(!m("*.csv", "a.tsv"));
        assert!(m("part-??.csv", "part-01.csv"));
        assert!(!m("part-??.csv", "part-1.csv"));
        assert!(m("[ab]*", "b1"));
        assert!(!m("[!ab]*", "b1"));
        assert!(m("x[0-9]", "x7"));
        assert!(m("*a*b*", "xxaxxbxx"));
        assert!(!m("*a*b*", "xxbxxaxx"));
    }
}
