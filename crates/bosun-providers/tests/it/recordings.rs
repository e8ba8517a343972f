//! The recorded provider streams are kept byte for byte as published: each
//! file in `tests/fixtures/providers/` is listed in the README beside it with
//! its size, SHA-256, source and licence, and matches them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use sha2::{Digest, Sha256};

/// `| \`path\` | bytes | \`sha256\` |` rows of the README's table.
fn listed(readme: &str) -> Vec<(String, u64, String)> {
    readme
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let [_, path, bytes, sha, _] = cells.as_slice() else { return None };
            let path = path.strip_prefix('`')?.strip_suffix('`')?;
            let sha = sha.strip_prefix('`')?.strip_suffix('`')?;
            Some((path.to_owned(), bytes.parse().ok()?, sha.to_owned()))
        })
        .collect()
}

#[test]
fn recordings_are_byte_identical_to_their_listed_sources() {
    let dir = support::fixtures_dir();
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let rows = listed(&readme);
    assert_eq!(rows.len(), 7, "the README lists every recording");
    for (path, bytes, sha) in &rows {
        let data = std::fs::read(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(data.len() as u64, *bytes, "{path}: size");
        let digest: String = Sha256::digest(&data).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(&digest, sha, "{path}: changed since it was copied (line endings?)");
        let section =
            readme.split(&format!("## `{path}`")).nth(1).unwrap_or_else(|| panic!("{path}: no section"));
        let section = section.split("\n## ").next().unwrap_or_default();
        assert!(section.contains("- Source:"), "{path}: its source is named");
        assert!(section.contains("- Licence:"), "{path}: its licence is named");
        assert!(section.contains("blob `"), "{path}: its git blob is named");
    }
    let mut on_disk = Vec::new();
    for folder in std::fs::read_dir(&dir).unwrap() {
        let folder = folder.unwrap().path();
        if folder.is_dir() {
            for file in std::fs::read_dir(&folder).unwrap() {
                let file = file.unwrap().path();
                on_disk.push(file.strip_prefix(&dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    on_disk.sort();
    let mut names: Vec<String> = rows.into_iter().map(|(path, ..)| path).collect();
    names.sort();
    assert_eq!(on_disk, names, "no recording is unlisted");
}
