//! A real PostgreSQL server for the tests, started once per test process
//! from Debian's binaries (`postgresql`: `/usr/lib/postgresql/*/bin`, or
//! `initdb` and `postgres` on `PATH`), in a temporary data directory, on
//! loopback at a free port; one database per test.
//!
//! Postgres refuses to run as root, and the tests run as root on CI: then
//! `initdb` and `postgres` run as `nobody` through `setpriv --reuid=nobody
//! --regid=nogroup --clear-groups`, in a directory `nobody` owns. The server
//! runs under a small `sh` that holds the read end of a pipe from this
//! process: when the test process ends, however it ends, the pipe closes
//! and the shell stops the server (fast shutdown) and deletes the data
//! directory. `fsync` is off: the tests kill clients, never the server.
//!
//! A missing Postgres FAILS every test here, unless `BOSUN_SKIP_POSTGRES=1`
//! says to skip (`scripts/test` installs `postgresql` when it is missing).
//! `BOSUN_POSTGRES_BIN` names another directory of binaries.
//!
//! Test support: a server that cannot start fails the calling test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The variable that lets the tests skip when Postgres is missing.
pub const SKIP: &str = "BOSUN_SKIP_POSTGRES";

/// The running server.
#[derive(Debug)]
pub struct Server {
    port: u16,
    bin: PathBuf,
    dir: PathBuf,
    // Held so that the pipe closes only when this process ends.
    _stdin: ChildStdin,
    _shell: Child,
}

/// Why there is no server.
enum Missing {
    /// Not installed: a test may skip (with `BOSUN_SKIP_POSTGRES=1`).
    NotInstalled(String),
    /// Installed but would not start: always a failure.
    Failed(String),
}

static SERVER: OnceLock<Result<Server, Missing>> = OnceLock::new();

/// The variable that lets the full-disk test skip where no small file
/// system can be mounted (the same as bosun-store's).
pub const SKIP_FULL_DISK: &str = "BOSUN_SKIP_FULL_DISK";

/// A server of its own whose directory `small` (for a tablespace) is a
/// 2 MiB tmpfs, mounted in a private mount namespace (`unshare`, as root)
/// that the server runs in; stopped when dropped. `None` as [`server`], or
/// when no such file system can be mounted and `BOSUN_SKIP_FULL_DISK=1`.
pub fn server_with_small_disk() -> Option<Server> {
    server()?;
    if !is_root() {
        crate::skip_or_fail(SKIP_FULL_DISK, "mounting a small tmpfs for the server needs root");
        return None;
    }
    match start(true) {
        Ok(server) => Some(server),
        Err(Missing::NotInstalled(why) | Missing::Failed(why)) => {
            crate::skip_or_fail(SKIP_FULL_DISK, &format!("no server on a small disk: {why}"));
            None
        }
    }
}

/// The shared server, started by the first test that asks; `None` when
/// Postgres is not installed and `BOSUN_SKIP_POSTGRES=1` (the calling test
/// then returns, having said it skipped).
///
/// # Panics
/// When Postgres is not installed and skipping was not asked for, or when
/// it would not start.
pub fn server() -> Option<&'static Server> {
    match SERVER.get_or_init(|| start(false)) {
        Ok(server) => Some(server),
        Err(Missing::NotInstalled(what)) => {
            crate::skip_or_fail(SKIP, what);
            None
        }
        Err(Missing::Failed(why)) => panic!("Postgres would not start: {why}"),
    }
}

/// A fresh, empty database on the shared server: its URL. `None` as
/// [`server`].
pub async fn database() -> Option<String> {
    let server = server()?;
    Some(server.create_database().await)
}

impl Server {
    /// The URL of `database` on this server.
    pub fn url_of(&self, database: &str) -> String {
        format!("postgres://bosun@127.0.0.1:{}/{database}", self.port)
    }

    /// Its temporary directory (the data directory is `data` in it).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates a database of its own for the calling test.
    pub async fn create_database(&self) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("t{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
        let (client, connection) =
            tokio_postgres::connect(&self.url_of("postgres"), tokio_postgres::NoTls).await.unwrap();
        let driver = tokio::spawn(connection);
        client.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
        drop(client);
        let _ = driver.await;
        self.url_of(&name)
    }
}

/// Names the directory of `initdb`, `postgres` and `pg_isready` to use
/// instead of looking for them (a Postgres installed elsewhere).
pub const BIN: &str = "BOSUN_POSTGRES_BIN";

/// Where the binaries are: `BOSUN_POSTGRES_BIN`, else the newest
/// `/usr/lib/postgresql/N/bin`, else the directory of `postgres` on `PATH`.
fn find_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(BIN) {
        let dir = PathBuf::from(dir);
        return (dir.join("postgres").is_file() && dir.join("initdb").is_file()).then_some(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("postgres").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find(|dir| dir.join("postgres").is_file() && dir.join("initdb").is_file())
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// `program` run as `nobody` when this process is root, else as it is.
fn command(program: &Path) -> Command {
    if is_root() {
        let mut command = Command::new("setpriv");
        command.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn free_port() -> Result<u16, Missing> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| Missing::Failed(format!("no free port: {e}")))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| Missing::Failed(e.to_string()))
}

/// Starts a server; with `small`, in a private mount namespace where
/// `DIR/small` is a 2 MiB tmpfs.
fn start(small: bool) -> Result<Server, Missing> {
    let Some(bin) = find_bin() else {
        return Err(Missing::NotInstalled(
            "Postgres is not installed (no postgres in BOSUN_POSTGRES_BIN, /usr/lib/postgresql/*/bin \
             or on PATH): apt-get install postgresql"
                .into(),
        ));
    };
    let failed = |what: &str, e: &dyn std::fmt::Display| Missing::Failed(format!("{what}: {e}"));
    let dir = tempfile::Builder::new()
        .prefix("bosun-pg-")
        .tempdir()
        .map_err(|e| failed("a temporary directory", &e))?;
    // Deleted by the server's shell when this process ends.
    let dir = dir.keep();
    if is_root() {
        let status = Command::new("chown")
            .args(["nobody:nogroup"])
            .arg(&dir)
            .status()
            .map_err(|e| failed("chown", &e))?;
        if !status.success() {
            return Err(Missing::Failed(format!("chown nobody {} failed", dir.display())));
        }
    }
    let data = dir.join("data");
    let initdb = command(&bin.join("initdb"))
        .arg("-D")
        .arg(&data)
        .args(["-U", "bosun", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"])
        .current_dir(&dir)
        .output()
        .map_err(|e| failed("initdb", &e))?;
    if !initdb.status.success() {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(Missing::Failed(format!(
            "initdb failed: {}{}",
            String::from_utf8_lossy(&initdb.stdout),
            String::from_utf8_lossy(&initdb.stderr)
        )));
    }
    let port = free_port()?;
    let script = r#"postgres=$1 dir=$2 port=$3
"$postgres" -D "$dir/data" -k "$dir" -p "$port" -c listen_addresses=127.0.0.1 -c fsync=off \
    -c max_connections=200 -c shared_buffers=16MB >"$dir/log" 2>&1 &
pid=$!
read -r _ignored
kill -INT "$pid" 2>/dev/null
wait "$pid"
rm -rf "$dir" 2>/dev/null"#;
    let mut shell = if small {
        // As root in a namespace of its own: mount, then run the script as
        // `nobody`; unmount and delete once it ends.
        std::fs::create_dir(dir.join("small")).map_err(|e| failed("a mount point", &e))?;
        let outer = r#"mount -t tmpfs -o size=2m,mode=0700 tmpfs "$2/small" || exit 1
chown nobody:nogroup "$2/small" || exit 1
setpriv --reuid=nobody --regid=nogroup --clear-groups -- /bin/sh -c "$BOSUN_PG_SCRIPT" sh "$@"
umount "$2/small"
rm -rf "$2""#;
        let mut command = Command::new("unshare");
        command
            .args(["--mount", "--propagation", "private", "/bin/sh", "-c", outer, "sh"])
            .env("BOSUN_PG_SCRIPT", script);
        command
    } else {
        let mut command = command(Path::new("/bin/sh"));
        command.args(["-c", script, "sh"]);
        command
    };
    let mut shell = shell
        .arg(bin.join("postgres"))
        .arg(&dir)
        .arg(port.to_string())
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| failed("starting postgres", &e))?;
    let stdin = shell.stdin.take().ok_or_else(|| Missing::Failed("no pipe to the server's shell".into()))?;
    let server = Server { port, bin, dir, _stdin: stdin, _shell: shell };
    server.wait_ready()?;
    Ok(server)
}

impl Server {
    /// Polls `pg_isready` until the server accepts connections, for at most
    /// 60 s (two busy cores can be slow).
    fn wait_ready(&self) -> Result<(), Missing> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = Command::new(self.bin.join("pg_isready"))
                .args([
                    "-q",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &self.port.to_string(),
                    "-U",
                    "bosun",
                    "-d",
                    "postgres",
                ])
                .stdin(Stdio::null())
                .status()
                .is_ok_and(|status| status.success());
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                let mut log = String::new();
                if let Ok(mut file) = std::fs::File::open(self.dir.join("log")) {
                    let _ = file.read_to_string(&mut log);
                }
                return Err(Missing::Failed(format!("not ready after 60 s; its log:\n{log}")));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
