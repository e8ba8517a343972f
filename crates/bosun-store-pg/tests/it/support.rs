//! The store's tests' helpers beside the Postgres server they share with
//! other crates' tests ([`bosun_testing::postgres`]). A child process of
//! the crash harness is handed the parent's database in `BOSUN_PG_URL` and
//! starts no server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

pub use bosun_testing::postgres::{BIN, SKIP, database, server, server_with_small_disk};

/// Runs `future` on a runtime of its own (for the synchronous tests).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(future)
}

/// A plain connection to `url`, for looking at or changing the database
/// behind the store's back.
pub async fn sql(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// Polls `check` until it holds, for at most `limit`.
pub async fn eventually<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A child's exit status, stdout and stderr, for assertion messages.
pub fn describe(output: &std::process::Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
