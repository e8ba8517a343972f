//! `bosun models list`: every catalog entry, pulled or not, then any other
//! `.gguf` in the models directory, each with its size, state, licence (the
//! file's own `general.license`) and where it came from.

use std::path::Path;

use bosun_core::sanitize;

use crate::catalog::{DEFAULT_MODEL, FROM_HUB, KNOWN};
use crate::fetch::human;
use crate::{fetch, gguf, source};

/// What `list` says of a hub catalog entry's checksum.
pub(crate) const FROM_THE_HUB: &str = "checksum from the hub at pull time";

fn size_of(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().filter(|meta| meta.is_file()).map(|meta| meta.len())
}

/// The file's licence as its metadata states it, for one table cell.
fn licence(path: &Path) -> String {
    match gguf::string_value(path, "general.license") {
        Some(text) if !text.trim().is_empty() => cell(text.trim(), 32),
        _ => "-".to_owned(),
    }
}

/// Text from a file or a record, safe on a terminal and at most `max` characters.
fn cell(text: &str, max: usize) -> String {
    let shown = sanitize::line(text);
    if shown.chars().count() <= max {
        return shown.into_owned();
    }
    let mut cut: String = shown.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

type Row = [String; 6];

/// The table of `bosun models list` for the models directory `dir`.
pub fn list(dir: &Path) -> String {
    let mut rows: Vec<Row> = Vec::new();
    let mut claimed: Vec<String> = Vec::new();
    for model in KNOWN {
        let path = dir.join(model.file);
        let status = match (size_of(&path), size_of(&fetch::partial_path(dir, model.file))) {
            (Some(size), _) if size == model.size => "present".to_owned(),
            (Some(size), _) => format!("wrong size ({})", human(size)),
            (None, Some(part)) => format!("partial ({}%)", part.saturating_mul(100) / model.size.max(1)),
            (None, None) => "not pulled".to_owned(),
        };
        let name = if model.name == DEFAULT_MODEL {
            format!("{} (default)", model.name)
        } else {
            model.name.to_owned()
        };
        let origin = match source::read(dir, model.file) {
            Some(record) => cell(&record.reference, 120),
            None => "catalog, sha256 pinned".to_owned(),
        };
        let licence = if size_of(&path).is_some() { licence(&path) } else { "-".to_owned() };
        rows.push([name, human(model.size), status, licence, origin, path.display().to_string()]);
        claimed.push(model.file.to_owned());
    }
    for model in FROM_HUB {
        let Ok(file) = model.file() else { continue };
        let path = dir.join(file.file());
        let record = source::read(dir, file.file()).filter(|record| file.matches(record));
        let (size, status) = match (size_of(&path), &record) {
            (Some(size), Some(record)) if size == record.size => (human(size), "present".to_owned()),
            (Some(size), Some(record)) => (human(record.size), format!("wrong size ({})", human(size))),
            (None, _) => match size_of(&fetch::partial_path(dir, file.file())) {
                Some(part) => ("?".to_owned(), format!("partial ({})", human(part))),
                None => ("?".to_owned(), "on the hub".to_owned()),
            },
            // Someone else's file by the same name: listed below as it is.
            (Some(_), None) => ("?".to_owned(), "on the hub".to_owned()),
        };
        let licence = if record.is_some() { licence(&path) } else { "-".to_owned() };
        let origin = format!("{} ({FROM_THE_HUB})", model.reference);
        rows.push([model.name.to_owned(), size, status, licence, origin, path.display().to_string()]);
        if record.is_some() {
            claimed.push(file.file().to_owned());
        }
    }
    let mut others = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            if !file.ends_with(".gguf") || claimed.contains(&file) {
                continue;
            }
            let Some(size) = size_of(&entry.path()) else { continue };
            let (status, origin) = match source::read(dir, &file) {
                Some(record) if record.size == size => ("present".to_owned(), cell(&record.reference, 120)),
                Some(record) => (format!("wrong size ({})", human(size)), cell(&record.reference, 120)),
                None => ("other".to_owned(), "unknown".to_owned()),
            };
            let path = cell(&entry.path().display().to_string(), usize::MAX);
            others.push([cell(&file, usize::MAX), human(size), status, licence(&entry.path()), origin, path]);
        }
    }
    others.sort();
    rows.extend(others);
    table(&rows)
}

fn table(rows: &[Row]) -> String {
    let header: Row = ["NAME", "SIZE", "STATUS", "LICENCE", "SOURCE", "PATH"].map(str::to_owned);
    let mut widths = [0; 5];
    for row in std::iter::once(&header).chain(rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for [name, size, status, licence, origin, path] in std::iter::once(&header).chain(rows) {
        let [w0, w1, w2, w3, w4] = widths;
        out.push_str(&format!(
            "{name:<w0$}  {size:>w1$}  {status:<w2$}  {licence:<w3$}  {origin:<w4$}  {path}\n"
        ));
    }
    out
}

/// `bosun models devices`: one line per device llama.cpp found, its
/// description sanitised (it comes from the driver).
pub fn devices(devices: &[bosun_local::Device]) -> String {
    let mut out = String::new();
    for device in devices {
        let kind = if device.accelerator { "gpu" } else { "cpu" };
        let module = device.module.as_deref().map(|m| format!("  ({})", cell(m, 40))).unwrap_or_default();
        let line =
            format!("{kind}  {}  {}{module}", cell(&device.backend, 16), cell(&device.description, 60));
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if !devices.iter().any(|d| d.accelerator) {
        out.push_str("no GPU: this build runs local models on the CPU\n");
    }
    out
}
