//! `hf:` pulls against the local test server playing the Hugging Face Hub
//! (`POST /api/models/OWNER/REPO/paths-info/REV`, `GET …/resolve/REV/PATH`
//! redirecting to a second server playing its CDN): the hub's LFS oid
//! checked, a cut download resumed with a `Range`, lies refused with nothing
//! moved into place, `HF_TOKEN` only at the hub, `list` and the resolution
//! of pulled names and `local_model`.

use std::path::{Path, PathBuf};

use bosun_core::env::Env;
use bosun_testing::{Gguf, GgufValue};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::fetch::{hex, partial_path};
use crate::*;
use bosun_testing::http::{Route, Server};

const TOKEN: &str = "hf_test_token_not_for_anyone_else";

/// A small GGUF with `general.license` and a tensor to give it some size.
fn model_bytes(license: &str, seed: f32) -> Vec<u8> {
    let mut file = Gguf::new();
    file.set("general.architecture", GgufValue::Str("llama".into()))
        .set("general.license", GgufValue::Str(license.into()))
        .tensor("pad", &[60_000], (0..60_000).map(|i| i as f32 * seed).collect())
        .unwrap();
    file.to_bytes().unwrap()
}

fn sha(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// The hub at `hub` says `path` in `repo` is `size` bytes with `oid`
/// (`lfs: None` for a file outside LFS), and serves it by redirecting to
/// `cdn`, which holds `data`.
fn publish(hub: &Server, cdn: &Server, repo: &str, path: &str, lfs: Option<(&str, u64)>, data: &[u8]) {
    let mut entry = json!({"type": "file", "path": path, "size": data.len(), "oid": "0123abcd"});
    if let Some((oid, size)) = lfs {
        entry["lfs"] = json!({"oid": oid, "size": size, "pointerSize": 134});
        entry["size"] = json!(size);
    }
    hub.route(&format!("/api/models/{repo}/paths-info/main"), Route::json(&json!([entry])));
    let blob = format!("/blobs/{}", sha(data));
    hub.route(&format!("/{repo}/resolve/main/{path}"), Route::redirect(&cdn.url(&blob)));
    cdn.route(&blob, Route::file(data));
}

fn hub_for(server: &Server, token: bool) -> Hub {
    let mut pairs = vec![("HF_ENDPOINT", server.url.as_str())];
    if token {
        pairs.push(("HF_TOKEN", TOKEN));
    }
    Hub::from_env(&Env::from_pairs(&pairs)).unwrap()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map(|entries| entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// A data dir (`BOSUN_HOME`) and its models directory.
fn home() -> (tempfile::TempDir, Env, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let env = Env::from_pairs(&[("BOSUN_HOME", home.path().to_str().unwrap())]);
    let dir = models_dir(&env).unwrap();
    (home, env, dir)
}

#[tokio::test]
async fn pulls_from_the_hub_checked_against_the_lfs_oid_with_the_token_only_at_the_hub() {
    let (hub, cdn) = (Server::start().await.unwrap(), Server::start().await.unwrap());
    let data = model_bytes("apache-2.0", 1.0);
    publish(&hub, &cdn, "o/r", "sub/m.gguf", Some((&sha(&data), data.len() as u64)), &data);
    let (_home, env, dir) = home();
    let file = HfRef::parse("hf:o/r/sub/m.gguf").unwrap();
    let path = hf::pull(&file, &hub_for(&hub, true), &dir, &Progress::quiet()).await.unwrap();
    assert_eq!(path, dir.join("m.gguf"));
    assert_eq!(std::fs::read(&path).unwrap(), data);
    assert_eq!(files_in(&dir), ["m.gguf", "m.gguf.source.json"]);

    let asked = hub.requests();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(
        (asked[0].method.as_str(), asked[0].path.as_str()),
        ("POST", "/api/models/o/r/paths-info/main")
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&asked[0].body).unwrap(),
        json!({"paths": ["sub/m.gguf"]})
    );
    assert_eq!((asked[1].method.as_str(), asked[1].path.as_str()), ("GET", "/o/r/resolve/main/sub/m.gguf"));
    let bearer = format!("Bearer {TOKEN}");
    assert!(asked.iter().all(|r| r.authorization.as_deref() == Some(bearer.as_str())), "{asked:?}");
    let fetched = cdn.requests();
    assert_eq!(fetched.len(), 1, "{fetched:?}");
    assert_eq!(fetched[0].authorization, None, "the token went to the CDN's host");

    let record = source::read(&dir, "m.gguf").unwrap();
    assert_eq!(
        (record.reference.as_str(), record.repo.as_str(), record.revision.as_str(), record.path.as_str()),
        ("hf:o/r/sub/m.gguf", "o/r", "main", "sub/m.gguf")
    );
    assert_eq!((record.sha256, record.size), (sha(&data), data.len() as u64));
    assert!(record.pulled_at.ends_with('Z') && record.pulled_at.len() == 20, "{}", record.pulled_at);

    let shown = list(&dir);
    let line = shown.lines().find(|line| line.starts_with("m.gguf")).unwrap_or_else(|| panic!("{shown}"));
    for part in [human(data.len() as u64).as_str(), "present", "apache-2.0", "hf:o/r/sub/m.gguf"] {
        assert!(line.contains(part), "{part} not in {line}");
    }
    assert_eq!(local_path(&env, Some("hf:o/r/sub/m.gguf")).unwrap(), path);
    assert_eq!(resolve_local(&env, Some("hf:o/r@main/sub/m.gguf")).unwrap(), path);
    let other_revision = local_path(&env, Some("hf:o/r@v2/sub/m.gguf")).unwrap_err().to_string();
    assert!(other_revision.contains("was pulled from hf:o/r/sub/m.gguf"), "{other_revision}");

    // Present and checked: only the hub is asked again, nothing is fetched.
    hf::pull(&file, &hub_for(&hub, false), &dir, &Progress::quiet()).await.unwrap();
    assert_eq!(cdn.requests().len(), 1);
    let last = hub.requests().pop().unwrap();
    assert_eq!((last.path.as_str(), last.authorization), ("/api/models/o/r/paths-info/main", None));

    let caches = tempfile::tempdir().unwrap();
    let removed = remove(&dir, caches.path(), "hf:o/r/sub/m.gguf").unwrap();
    assert_eq!(removed, [dir.join("m.gguf"), dir.join("m.gguf.source.json")]);
}

#[tokio::test]
async fn a_cut_download_from_the_hub_resumes_with_a_range() {
    let (hub, cdn) = (Server::start().await.unwrap(), Server::start().await.unwrap());
    let data = model_bytes("mit", 2.0);
    publish(&hub, &cdn, "o/r", "m.gguf", Some((&sha(&data), data.len() as u64)), &data);
    let blob = format!("/blobs/{}", sha(&data));
    cdn.route(&blob, Route { cut_at: Some(100_000), ..Route::file(&data) });
    let (_home, _env, dir) = home();
    let file = HfRef::parse("hf:o/r/m.gguf").unwrap();
    let error = hf::pull(&file, &hub_for(&hub, false), &dir, &Progress::quiet()).await.unwrap_err();
    assert!(format!("{error:#}").contains("broke off"), "{error:#}");
    assert_eq!(files_in(&dir), ["m.gguf.part"], "nothing unverified takes the name");
    let kept = std::fs::read(partial_path(&dir, "m.gguf")).unwrap();
    assert!(!kept.is_empty() && kept.len() <= 100_000 && kept[..] == data[..kept.len()], "{}", kept.len());

    cdn.route(&blob, Route::file(&data));
    let path = hf::pull(&file, &hub_for(&hub, false), &dir, &Progress::quiet()).await.unwrap();
    assert_eq!(std::fs::read(path).unwrap(), data);
    let resumed = cdn.requests().pop().unwrap();
    assert_eq!(resumed.range, Some(format!("bytes={}-", kept.len())), "the Range survives the redirect");
    let asked = hub.requests().pop().unwrap();
    assert_eq!(asked.range, Some(format!("bytes={}-", kept.len())));
    assert_eq!(files_in(&dir), ["m.gguf", "m.gguf.source.json"]);
}

#[tokio::test]
async fn a_wrong_oid_is_refused_and_the_file_in_place_stays() {
    let (hub, cdn) = (Server::start().await.unwrap(), Server::start().await.unwrap());
    let old = model_bytes("apache-2.0", 3.0);
    let new = model_bytes("apache-2.0", 4.0);
    let (_home, _env, dir) = home();
    let file = HfRef::parse("hf:o/r/m.gguf").unwrap();
    publish(&hub, &cdn, "o/r", "m.gguf", Some((&sha(&old), old.len() as u64)), &old);
    hf::pull(&file, &hub_for(&hub, false), &dir, &Progress::quiet()).await.unwrap();
    let record = std::fs::read(source::sidecar_path(&dir, "m.gguf")).unwrap();

    // A new revision whose bytes do not match the oid the hub reports.
    let lie = "ab".repeat(32);
    publish(&hub, &cdn, "o/r", "m.gguf", Some((&lie, new.len() as u64)), &new);
    let error = hf::pull(&file, &hub_for(&hub, false), &dir, &Progress::quiet()).await.unwrap_err();
    let text = format!("{error:#}");
    assert!(text.contains(&format!("expected {lie}")) && text.contains("deleted the download"), "{text}");
    assert_eq!(files_in(&dir), ["m.gguf", "m.gguf.source.json"], "no .part is left");
    assert_eq!(std::fs::read(dir.join("m.gguf")).unwrap(), old, "the checked file stays");
    assert_eq!(std::fs::read(source::sidecar_path(&dir, "m.gguf")).unwrap(), record);

    // The hub lying about the size: the body is longer than it said.
    publish(&hub, &cdn, "o/r", "m.gguf", Some((&sha(&new), new.len() as u64 - 10)), &new);
    let error = hf::pull(&file, &hub_for(&hub, false), &dir, &Progress::quiet()).await.unwrap_err();
    assert!(format!("{error:#}").contains("expected"), "{error:#}");
    assert_eq!(std::fs::read(dir.join("m.gguf")).unwrap(), old);

    // The new revision, told truly, replaces the old one.
    publish(&hub, &cdn, "o/r", "m.gguf", Some((&sha(&new), new.len() as u64)), &new);
    hf::pull(&file, &hub_for(&hub, false), &dir, &Progress::quiet()).await.unwrap();
    assert_eq!(std::fs::read(dir.join("m.gguf")).unwrap(), new);
}

#[tokio::test]
async fn a_file_without_an_lfs_sha256_is_refused_unfetched() {
    let (hub, cdn) = (Server::start().await.unwrap(), Server::start().await.unwrap());
    let data = model_bytes("apache-2.0", 5.0);
    publish(&hub, &cdn, "o/r", "m.gguf", None, &data);
    let (_home, _env, dir) = home();
    let file = HfRef::parse("hf:o/r/m.gguf").unwrap();
    let error = hf::pull(&file, &hub_for(&hub, false), &dir, &Progress::quiet()).await.unwrap_err();
    let text = error.to_string();
    assert!(text.contains("no sha256") && text.contains("not stored with Git LFS"), "{text}");
    assert_eq!(hub.requests().len(), 1, "only paths-info was asked");
    assert!(cdn.requests().is_empty());
    assert!(files_in(&dir).is_empty(), "{:?}", files_in(&dir));
}

#[tokio::test]
async fn hostile_names_and_answers_are_refused() {
    let (hub, cdn) = (Server::start().await.unwrap(), Server::start().await.unwrap());
    let data = model_bytes("apache-2.0", 6.0);
    let (home, env, dir) = home();
    // An answer about another path than the one asked for.
    hub.route("/api/models/o/r/paths-info/main", {
        let entry =
            json!({"path": "../x.gguf", "size": data.len(), "lfs": {"oid": sha(&data), "size": data.len()}});
        Route::json(&json!([entry]))
    });
    let file = HfRef::parse("hf:o/r/x.gguf").unwrap();
    let error = hf::pull(&file, &hub_for(&hub, false), &dir, &Progress::quiet()).await.unwrap_err();
    assert!(error.to_string().contains("lists no file `x.gguf`"), "{error}");
    assert!(cdn.requests().is_empty());
    // Names that climb out of the models directory never reach the hub.
    for bad in ["hf:o/r/../x.gguf", "hf:o/r/a/../../x.gguf", "hf:o/r/a\\..\\x.gguf", "hf:o/r/.x.gguf"] {
        assert!(HfRef::parse(bad).is_err(), "{bad}");
        assert!(local_path(&env, Some(bad)).is_err(), "{bad}");
        assert!(remove(&dir, home.path(), bad).is_err(), "{bad}");
    }
    assert!(!home.path().join("x.gguf").exists() && files_in(&dir).is_empty());
}

#[tokio::test]
async fn the_hub_refusing_access_names_hf_token_without_showing_it() {
    let hub = Server::start().await.unwrap();
    hub.route("/api/models/o/gated/paths-info/main", Route::status(401));
    let (_home, _env, dir) = home();
    let file = HfRef::parse("hf:o/gated/m.gguf").unwrap();
    for token in [false, true] {
        let error = hf::pull(&file, &hub_for(&hub, token), &dir, &Progress::quiet()).await.unwrap_err();
        let text = format!("{error:#}");
        assert!(text.contains("HF_TOKEN") && text.contains("401") && !text.contains(TOKEN), "{text}");
    }
}

#[tokio::test]
async fn a_hub_catalog_entry_is_pulled_through_the_hub_and_listed_as_such() {
    let (hub, cdn) = (Server::start().await.unwrap(), Server::start().await.unwrap());
    let model = find_hub("qwen3-4b-q4_k_m").unwrap();
    let file = model.file().unwrap();
    let data = model_bytes("apache-2.0", 7.0);
    publish(&hub, &cdn, &file.repo_id(), &file.path, Some((&sha(&data), data.len() as u64)), &data);
    let (_home, env, dir) = home();
    let before = list(&dir);
    let row = before.lines().find(|line| line.starts_with(model.name)).unwrap_or_else(|| panic!("{before}"));
    assert!(row.contains("on the hub") && row.contains(list::FROM_THE_HUB), "{row}");
    assert!(local_path(&env, Some(model.name)).unwrap_err().to_string().contains("not downloaded"));

    let path = hf::pull(&file, &hub_for(&hub, false), &dir, &Progress::quiet()).await.unwrap();
    let after = list(&dir);
    let row = after.lines().find(|line| line.starts_with(model.name)).unwrap_or_else(|| panic!("{after}"));
    for part in ["present", "apache-2.0", model.reference, list::FROM_THE_HUB] {
        assert!(row.contains(part), "{part} not in {row}");
    }
    assert!(!after.lines().any(|line| line.starts_with(file.file())), "listed once: {after}");
    assert_eq!(resolve_local(&env, Some(model.name)).unwrap(), path);
}

#[test]
fn local_model_picks_a_catalog_name_a_pulled_file_or_an_absolute_path() {
    let (_home, env, dir) = home();
    std::fs::create_dir_all(&dir).unwrap();
    let error = resolve_local(&env, None).unwrap_err().to_string();
    assert!(error.contains(&format!("bosun models pull {DEFAULT_MODEL}")), "{error}");
    let default = find(DEFAULT_MODEL).unwrap();
    std::fs::File::create(dir.join(default.file)).unwrap().set_len(default.size).unwrap();
    assert_eq!(resolve_local(&env, None).unwrap(), dir.join(default.file));

    let smol = find("smollm2-135m").unwrap();
    std::fs::File::create(dir.join(smol.file)).unwrap().set_len(smol.size).unwrap();
    assert_eq!(resolve_local(&env, Some(smol.name)).unwrap(), dir.join(smol.file));
    std::fs::write(dir.join("mine.gguf"), model_bytes("mit", 8.0)).unwrap();
    assert_eq!(resolve_local(&env, Some("mine.gguf")).unwrap(), dir.join("mine.gguf"));

    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().join("far.gguf");
    std::fs::write(&outside, b"GGUF").unwrap();
    assert_eq!(resolve_local(&env, Some(outside.to_str().unwrap())).unwrap(), outside);
    let missing = elsewhere.path().join("missing.gguf");
    assert!(
        resolve_local(&env, Some(missing.to_str().unwrap())).unwrap_err().to_string().contains("no file")
    );
    let relative = resolve_local(&env, Some("models/mine.gguf")).unwrap_err().to_string();
    assert!(relative.contains("must be absolute"), "{relative}");

    // A hub catalog file someone else put there is not taken for the entry.
    let hub_model = &FROM_HUB[0];
    let name = hub_model.file().unwrap().file().to_owned();
    std::fs::write(dir.join(&name), b"GGUF").unwrap();
    let error = resolve_local(&env, Some(hub_model.name)).unwrap_err().to_string();
    assert!(error.contains("no record of being pulled"), "{error}");
    let unknown = resolve_local(&env, Some("nope")).unwrap_err().to_string();
    assert!(unknown.contains("unknown model `nope`") && unknown.contains(hub_model.name), "{unknown}");
}

#[test]
fn the_licence_is_read_from_the_header_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.gguf");
    std::fs::write(&path, model_bytes("apache-2.0", 9.0)).unwrap();
    assert_eq!(gguf::string_value(&path, "general.license").as_deref(), Some("apache-2.0"));
    assert_eq!(gguf::string_value(&path, "general.nope"), None);
    assert_eq!(gguf::string_value(&path, "general.architecture").as_deref(), Some("llama"));
    // A header that claims a key longer than any file: not read, no licence.
    let mut lying = b"GGUF".to_vec();
    lying.extend(3u32.to_le_bytes());
    lying.extend(0u64.to_le_bytes());
    lying.extend(1u64.to_le_bytes());
    lying.extend(u64::MAX.to_le_bytes());
    std::fs::write(&path, &lying).unwrap();
    assert_eq!(gguf::string_value(&path, "general.license"), None);
    std::fs::write(&path, b"not a gguf at all").unwrap();
    assert_eq!(gguf::string_value(&path, "general.license"), None);
    // Terminal escapes in a licence are shown, not obeyed.
    let mut file = Gguf::new();
    file.set("general.license", GgufValue::Str("mit\u{1b}[2J".into()));
    std::fs::write(&path, file.to_bytes().unwrap()).unwrap();
    let shown = list(dir.path());
    let line = shown.lines().find(|line| line.starts_with("m.gguf")).unwrap_or_else(|| panic!("{shown}"));
    assert!(line.contains("mit") && !line.contains('\u{1b}'), "{line:?}");
}

#[test]
fn the_hub_catalog_is_well_formed() {
    for model in FROM_HUB {
        let file = model.file().unwrap();
        assert!(file.owner == "Qwen" && file.revision.is_none(), "{}", model.reference);
        assert!(find(model.name).is_none(), "{} is also pinned", model.name);
        assert!(KNOWN.iter().all(|known| known.file != file.file()), "{}", model.name);
    }
    let mut names: Vec<_> = FROM_HUB.iter().map(|m| m.name).chain(KNOWN.iter().map(|m| m.name)).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), FROM_HUB.len() + KNOWN.len());
}

#[tokio::test]
async fn a_pull_by_name_takes_hf_references_and_catalog_names() {
    let (hub, cdn) = (Server::start().await.unwrap(), Server::start().await.unwrap());
    let data = model_bytes("apache-2.0", 10.0);
    publish(&hub, &cdn, "o/r", "m.gguf", Some((&sha(&data), data.len() as u64)), &data);
    let home = tempfile::tempdir().unwrap();
    let pairs = [("BOSUN_HOME", home.path().to_str().unwrap()), ("HF_ENDPOINT", hub.url.as_str())];
    let env = Env::from_pairs(&pairs);
    let quiet = Progress::quiet();
    let path = pull_named(&env, "hf:o/r@main/m.gguf", &quiet).await.unwrap();
    assert_eq!(path, home.path().join("models/m.gguf"));
    assert_eq!(std::fs::read(&path).unwrap(), data);
    let record = source::read(&home.path().join("models"), "m.gguf").unwrap();
    assert_eq!((record.reference.as_str(), record.revision.as_str()), ("hf:o/r@main/m.gguf", "main"));
    let error = pull_named(&env, "nope", &quiet).await.unwrap_err();
    assert!(matches!(error, Error::UnknownModel { .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("unknown model `nope`") && text.contains("hf:OWNER/REPO"), "{text}");
    let bad = Env::from_pairs(&[pairs[0], ("HF_ENDPOINT", "ftp://mirror")]);
    let error = pull_named(&bad, "qwen3-4b-q4_k_m", &quiet).await.unwrap_err();
    assert!(error.to_string().contains("HF_ENDPOINT"), "{error}");
    assert_eq!(hub.requests().len(), 2, "neither failure asked the hub");
}
