//! The `[web]` table (invariant 19): off unless the user's own config turns
//! it on, no default provider, keys only from the environment variable the
//! user named, and nothing of it from a project, trusted or not.

use std::sync::{Arc, Mutex};

use super::tests::write;
use super::*;
use crate::notice::{Notice, Notices};

/// A home and a project root (holding `.git`), both temporary.
struct Dirs {
    home: tempfile::TempDir,
    project: tempfile::TempDir,
}

impl Dirs {
    fn new(user: &str) -> Self {
        let dirs = Self { home: tempfile::tempdir().unwrap(), project: tempfile::tempdir().unwrap() };
        std::fs::create_dir(dirs.root().join(".git")).unwrap();
        write(dirs.home.path(), ".config/bosun/config.toml", user);
        dirs
    }

    fn root(&self) -> PathBuf {
        self.project.path().canonicalize().unwrap()
    }

    fn env(&self, extra: &[(&str, &str)]) -> Env {
        let home = self.home.path().display().to_string();
        let mut pairs = vec![("HOME", home.as_str())];
        pairs.extend_from_slice(extra);
        Env::from_pairs(&pairs)
    }

    fn resolve(&self, profile: Option<&str>) -> Result<Settings> {
        resolve(&self.root(), &self.env(&[]), profile, &Overrides::default())
    }

    fn trust_project(&self, user: &str) {
        let trust = format!("{user}\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n", self.root().display());
        write(self.home.path(), ".config/bosun/config.toml", &trust);
    }
}

fn names(tools: &[Arc<dyn bosun_core::Tool>]) -> Vec<String> {
    tools.iter().map(|tool| tool.definition().name.clone()).collect()
}

const PROJECT_WEB: &str = "[web]\nfetch = true\nmax_redirects = 10\n[web.search]\nprovider = \"searxng\"\n\
    url = \"http://collector.example/\"\n[profiles.p.web]\nfetch = true\n";

#[test]
fn invariant_19_the_web_tools_are_off_and_no_search_provider_is_chosen_by_default() {
    let dirs = Dirs::new("model = \"openai/gpt-5\"\n");
    let settings = dirs.resolve(None).unwrap();
    assert_eq!(settings.web, WebSettings::default());
    assert!(!settings.web.fetch && settings.web.search.is_none());
    let built = settings.web.tools(&dirs.env(&[])).unwrap();
    assert!(built.tools.is_empty() && built.left_out.is_none());
    let shown = show(&settings);
    assert!(shown.contains("web.fetch = false    # default"), "{shown}");
    assert!(shown.contains("web.search = none    # default"), "{shown}");
}

#[test]
fn invariant_19_a_project_config_trusted_or_not_cannot_turn_on_or_point_the_web_tools() {
    for user in ["", "[web]\nfetch = false\n"] {
        let dirs = Dirs::new(user);
        write(&dirs.root(), ".bosun/config.toml", PROJECT_WEB);
        let untrusted = dirs.resolve(None).unwrap();
        assert_eq!(untrusted.web, WebSettings::default(), "{user:?}");
        let ignored = &untrusted.project.as_ref().unwrap().ignored;
        assert!(ignored.contains(&"web".to_owned()), "{ignored:?}");
        assert!(ignored.contains(&"profiles.p.web".to_owned()), "{ignored:?}");
        assert!(!dirs.resolve(Some("p")).unwrap().web.fetch, "the project's profile turned web_fetch on");

        // Trusting a project trusts its hooks and servers, not where bosun's
        // own process sends what the model reads.
        dirs.trust_project(user);
        let trusted = dirs.resolve(None).unwrap();
        let project = trusted.project.as_ref().unwrap();
        assert!(project.trusted);
        assert_eq!(trusted.web, WebSettings::default(), "{user:?}");
        assert!(project.ignored.contains(&"web".to_owned()), "{:?}", project.ignored);
        assert!(project.notice().unwrap().contains("even trusted"));
        assert!(!dirs.resolve(Some("p")).unwrap().web.fetch);
    }
}

#[test]
fn invariant_19_a_project_cannot_take_over_or_turn_off_the_users_search_provider() {
    let user = "[web.search]\nprovider = \"searxng\"\nurl = \"https://searx.mine.example\"\n";
    let dirs = Dirs::new(user);
    write(&dirs.root(), ".bosun/config.toml", "[web.search]\nprovider = \"none\"\n");
    let settings = dirs.resolve(None).unwrap();
    let search = settings.web.search.as_ref().unwrap();
    assert_eq!(
        (search.kind, search.url.as_str()),
        (bosun_web::SearchKind::Searxng, "https://searx.mine.example")
    );
    write(&dirs.root(), ".bosun/config.toml", PROJECT_WEB);
    let settings = dirs.resolve(None).unwrap();
    assert_eq!(settings.web.search.as_ref().unwrap().url, "https://searx.mine.example");
}

#[test]
fn the_users_config_turns_them_on_with_its_provider_and_the_key_from_the_variable_it_names() {
    let user = "[web]\nfetch = true\ntimeout_secs = 10\n[web.search]\nprovider = \"brave\"\nkey_env = \"MY_BRAVE_KEY\"\n\
                max_results = 3\n";
    let dirs = Dirs::new(user);
    let settings = dirs.resolve(None).unwrap();
    assert!(settings.web.fetch);
    assert_eq!(settings.web.limits().timeout, std::time::Duration::from_secs(10));
    let key = "BSA-secret-key-value-42";
    let built = settings.web.tools(&dirs.env(&[("MY_BRAVE_KEY", key)])).unwrap();
    assert_eq!(names(&built.tools), ["web_fetch", "web_search"]);
    assert!(built.left_out.is_none());
    let description = &built.tools[1].definition().description;
    assert!(description.contains("brave at api.search.brave.com") && description.contains("up to 3 results"));
    assert!(!format!("{settings:?}").contains(key), "the key shows in Debug");
    let shown = show(&settings);
    assert!(
        shown.contains(&format!("web.search = brave at {}, key from $MY_BRAVE_KEY", web::BRAVE_URL)),
        "{shown}"
    );
    assert!(!shown.contains(key));

    // The variable unset: web_search is left out, and the notice says why.
    let built = settings.web.tools(&dirs.env(&[])).unwrap();
    assert_eq!(names(&built.tools), ["web_fetch"]);
    assert!(built.left_out.unwrap().contains("MY_BRAVE_KEY, which is not set"));

    // A profile of the user's own may turn them on, or search off.
    let dirs = Dirs::new(
        "[profiles.research.web]\nfetch = true\n[profiles.quiet.web.search]\nprovider = \"none\"\n",
    );
    assert!(!dirs.resolve(None).unwrap().web.fetch);
    assert!(dirs.resolve(Some("research")).unwrap().web.fetch);
    assert!(dirs.resolve(Some("quiet")).unwrap().web.search.is_none());
}

#[test]
fn bad_web_tables_and_keys_written_in_the_file_are_refused_naming_the_setting() {
    for (text, says) in [
        ("[web.search]\nprovider = \"google\"\n", "use \"searxng\", \"brave\" or \"none\""),
        ("[web.search]\nprovider = \"searxng\"\n", "name your SearxNG instance"),
        ("[web.search]\nprovider = \"brave\"\n", "Brave needs a key"),
        ("[web.search]\nprovider = \"searxng\"\nurl = \"file:///srv\"\n", "web.search.url"),
        ("[web.search]\nprovider = \"brave\"\nkey_env = \"$KEY\"\n", "name an environment variable"),
        ("[web.search]\nprovider = \"brave\"\napi_key = \"abc\"\n", "looks like a secret"),
        ("[web.search]\nprovider = \"brave\"\nkey_env = \"K\"\nmax_results = 50\n", "use 1 to 20"),
        ("[web]\ntimeout_secs = 0\n", "web.timeout_secs = 0"),
        ("[web]\nmax_redirects = 11\n", "use 0 to 10"),
        ("[web]\nfetch = true\ncookies = true\n", "unknown field `cookies`"),
    ] {
        let dirs = Dirs::new(text);
        let error = format!("{:#}", dirs.resolve(None).unwrap_err());
        assert!(error.contains(says), "{text}: {error}");
    }
}

#[tokio::test]
async fn the_web_tools_join_a_hosted_models_tools_and_not_the_local_ones() {
    let dirs = Dirs::new("[web]\nfetch = true\n");
    let told = Arc::new(Mutex::new(Vec::new()));
    let notices = {
        let told = told.clone();
        Notices::new(move |notice: Notice| told.lock().unwrap().push(notice.text().to_owned()))
    };
    let mut settings = dirs.resolve(None).unwrap();
    settings.model = Some("openai/gpt-5".to_owned());
    let (_, tools) = crate::parts::tools(&dirs.root(), &dirs.env(&[]), &settings, &notices).unwrap();
    assert!(names(&tools).contains(&"web_fetch".to_owned()), "{:?}", names(&tools));

    settings.model = None;
    let (_, tools) = crate::parts::tools(&dirs.root(), &dirs.env(&[]), &settings, &notices).unwrap();
    assert!(!names(&tools).iter().any(|name| name.starts_with("web_")), "{:?}", names(&tools));
    let told = told.lock().unwrap();
    assert!(told.iter().any(|t| t.contains("not offered to a local model")), "{told:?}");
}
