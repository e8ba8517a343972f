//! What the credential endpoints share: reading a bounded answer with
//! errors classified as the transport classifies them, and the expiry
//! times they give.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bosun_core::ModelError;

use super::AwsCredentials;

/// How long before expiry cached keys are replaced: long enough that keys
/// handed out sign any request while it is sent.
pub(crate) const REFRESH_MARGIN: Duration = Duration::from_secs(300);

/// Fetched keys and when they expire (never, when the answer said not).
#[derive(Default)]
pub(crate) struct Cache(tokio::sync::Mutex<Option<(AwsCredentials, Option<Instant>)>>);

impl Cache {
    /// The cached keys while they are good for five more minutes, else
    /// those `fetch` gets. The lock is held across the fetch, so concurrent
    /// requests wait for one answer.
    pub(crate) async fn get(
        &self,
        fetch: impl Future<Output = Result<(AwsCredentials, Option<Instant>), ModelError>>,
    ) -> Result<AwsCredentials, ModelError> {
        let mut cache = self.0.lock().await;
        if let Some((credentials, expires)) = cache.as_ref()
            && expires.is_none_or(|at| Instant::now() + REFRESH_MARGIN < at)
        {
            return Ok(credentials.clone());
        }
        let (credentials, expires) = fetch.await?;
        *cache = Some((credentials.clone(), expires));
        Ok(credentials)
    }
}

/// The body of a successful answer to `request`. A refused request is an
/// authentication error (retrying will not change it); an unreachable
/// endpoint or a server in trouble is a network error.
pub(crate) async fn read(
    request: reqwest::RequestBuilder,
    url: &str,
    what: &str,
    max: usize,
) -> Result<Vec<u8>, ModelError> {
    body(request.send().await, url, what, max).await
}

/// The body of a request already sent, classified as [`read`] says.
pub(crate) async fn body(
    sent: Result<reqwest::Response, reqwest::Error>,
    url: &str,
    what: &str,
    max: usize,
) -> Result<Vec<u8>, ModelError> {
    let (status, body) = response(sent, url, what, max).await?;
    if !status.is_success() {
        let code = status.as_u16();
        let text: String = String::from_utf8_lossy(&body).chars().take(200).collect();
        let message = format!("{url} refused {what}: HTTP {code} {text}");
        return Err(if code == 429 || code >= 500 {
            ModelError::Network(message)
        } else {
            ModelError::Authentication(message)
        });
    }
    Ok(body)
}

/// The status and bounded body of a request already sent, whatever the
/// status (the caller reads the endpoint's own error shape); not reaching
/// the endpoint is a network error.
pub(crate) async fn response(
    sent: Result<reqwest::Response, reqwest::Error>,
    url: &str,
    what: &str,
    max: usize,
) -> Result<(reqwest::StatusCode, Vec<u8>), ModelError> {
    let mut response = sent.map_err(|error| {
        let (message, _) = crate::network::describe(&error, url);
        ModelError::Network(format!("getting {what} from {url}: {message}"))
    })?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) =
        response.chunk().await.map_err(|e| ModelError::Network(format!("reading {what} from {url}: {e}")))?
    {
        body.extend_from_slice(&chunk);
        if body.len() > max {
            return Err(ModelError::Protocol(format!("the answer with {what} from {url} is too large")));
        }
    }
    Ok((status, body))
}

/// Seconds since the epoch of an RFC 3339 UTC time as AWS writes it
/// (`2026-12-04T19:00:00Z`, fractions ignored).
pub(crate) fn epoch_seconds(text: &str) -> Option<i64> {
    let text = text.trim().strip_suffix('Z').or_else(|| text.trim().strip_suffix("+00:00"))?;
    let (date, time) = text.split_once('T')?;
    let mut date = date.split('-').map(str::parse::<i64>);
    let (year, month, day) = (date.next()?.ok()?, date.next()?.ok()?, date.next()?.ok()?);
    let time = time.split('.').next()?;
    let mut time = time.split(':').map(str::parse::<i64>);
    let (hour, minute, second) = (time.next()?.ok()?, time.next()?.ok()?, time.next()?.ok()?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm, public domain).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second)
}

/// The monotonic instant a wall-clock expiry corresponds to; one already
/// past is now.
pub(crate) fn instant_at_epoch(seconds: i64) -> Instant {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let left = u64::try_from(seconds).unwrap_or(0).saturating_sub(now);
    Instant::now() + Duration::from_secs(left)
}

/// The instant of an RFC 3339 expiry.
pub(crate) fn instant_of(text: &str) -> Option<Instant> {
    epoch_seconds(text).map(instant_at_epoch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_expiry_times_are_read() {
        assert_eq!(epoch_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(epoch_seconds("2026-12-04T19:00:00Z"), Some(1_796_410_800));
        assert_eq!(epoch_seconds("2024-02-29T12:30:15.123Z"), Some(1_709_209_815));
        assert_eq!(epoch_seconds("not a time"), None);
    }
}
