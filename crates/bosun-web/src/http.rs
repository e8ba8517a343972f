//! One bounded GET: redirects followed by hand (same site only, each
//! recorded), the body read up to a cap, the whole under one deadline; and
//! one bounded request of any method, redirects not followed (an OpenAPI
//! operation's).

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, LOCATION};
use reqwest::{StatusCode, Url};

use crate::url::{check, same_site};
use crate::{USER_AGENT, WebError, WebLimits};

/// What a GET brought back.
#[derive(Debug)]
pub(crate) struct Fetched {
    /// The URL that answered.
    pub url: Url,
    /// Each redirect followed, in order.
    pub redirects: Vec<(Url, Url)>,
    /// A redirect to another site (or down to http), not followed.
    pub elsewhere: Option<Url>,
    pub status: StatusCode,
    /// The media type, lower case, without parameters.
    pub media_type: Option<String>,
    pub body: Vec<u8>,
    /// Whether the body was cut at the cap.
    pub cut: bool,
}

impl Fetched {
    /// `redirected: a → b` lines, one per redirect.
    pub fn redirect_lines(&self) -> String {
        self.redirects.iter().map(|(from, to)| format!("redirected: {from} → {to}\n")).collect()
    }
}

/// What one request brought back.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: StatusCode,
    /// The media type, lower case, without parameters.
    pub media_type: Option<String>,
    /// A redirect's target, as the server wrote it.
    pub location: Option<String>,
    pub body: Vec<u8>,
    /// Whether the body was cut at the cap.
    pub cut: bool,
}

/// An HTTP client with the tools' settings: no redirects of its own, no
/// cookie store (reqwest keeps none unless asked), bosun's `User-Agent`.
#[derive(Clone, Debug)]
pub(crate) struct Client {
    inner: reqwest::Client,
    pub limits: WebLimits,
}

impl Client {
    pub fn new(limits: WebLimits) -> Result<Self, WebError> {
        bosun_providers::tls::install_default_provider();
        let inner = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT)
            .build()
            .map_err(|error| WebError::Client(error.to_string()))?;
        Ok(Self { inner, limits })
    }

    /// GETs `url` with `headers` (and `accept`), within the deadline.
    pub async fn get(&self, url: Url, accept: &str, headers: &HeaderMap) -> Result<Fetched, WebError> {
        let deadline = self.limits.timeout;
        tokio::time::timeout(deadline, self.follow(url, accept, headers))
            .await
            .map_err(|_| WebError::TimedOut { after: deadline })?
    }

    async fn follow(&self, mut url: Url, accept: &str, headers: &HeaderMap) -> Result<Fetched, WebError> {
        let mut redirects: Vec<(Url, Url)> = Vec::new();
        loop {
            let response = self
                .inner
                .get(url.clone())
                .header(ACCEPT, accept)
                .headers(headers.clone())
                .send()
                .await
                .map_err(|error| WebError::request(&url, &error))?;
            let status = response.status();
            if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
                let bad = || WebError::BadRedirect { status: status.as_u16(), from: url.to_string() };
                let location = response.headers().get(LOCATION).ok_or_else(bad)?;
                let target = location.to_str().ok().and_then(|to| url.join(to).ok()).ok_or_else(bad)?;
                let target = check(target)?;
                if !same_site(&url, &target) {
                    return Ok(Fetched {
                        url,
                        redirects,
                        elsewhere: Some(target),
                        status,
                        media_type: None,
                        body: Vec::new(),
                        cut: false,
                    });
                }
                redirects.push((url, target.clone()));
                if redirects.len() > self.limits.max_redirects {
                    let mut chain = redirects.first().map(|(from, _)| from.to_string()).unwrap_or_default();
                    for (_, to) in &redirects {
                        chain.push_str(&format!(" → {to}"));
                    }
                    return Err(WebError::TooManyRedirects { max: self.limits.max_redirects, chain });
                }
                url = target;
                continue;
            }
            let media_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.split(';').next())
                .map(|value| value.trim().to_ascii_lowercase());
            let (body, cut) = self.read_body(&url, response).await?;
            return Ok(Fetched { url, redirects, elsewhere: None, status, media_type, body, cut });
        }
    }

    /// Sends one request, within the deadline; a redirect is returned as
    /// it is, not followed.
    pub async fn send(
        &self,
        method: reqwest::Method,
        url: Url,
        headers: HeaderMap,
        body: Option<String>,
        basic: Option<(&str, &str)>,
    ) -> Result<Answer, WebError> {
        let deadline = self.limits.timeout;
        let sending = async {
            let mut request = self.inner.request(method, url.clone()).headers(headers);
            if let Some(body) = body {
                request = request.body(body);
            }
            if let Some((username, password)) = basic {
                request = request.basic_auth(username, Some(password));
            }
            let response = request.send().await.map_err(|error| WebError::request(&url, &error))?;
            let status = response.status();
            let header = |name| {
                response.headers().get(name).and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
            };
            let media_type = header(CONTENT_TYPE)
                .and_then(|value| value.split(';').next())
                .map(|value| value.trim().to_ascii_lowercase());
            let location = header(LOCATION).map(str::to_owned);
            let (body, cut) = self.read_body(&url, response).await?;
            Ok(Answer { status, media_type, location, body, cut })
        };
        tokio::time::timeout(deadline, sending).await.map_err(|_| WebError::TimedOut { after: deadline })?
    }

    async fn read_body(
        &self,
        url: &Url,
        mut response: reqwest::Response,
    ) -> Result<(Vec<u8>, bool), WebError> {
        let cap = self.limits.max_response_bytes;
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|error| WebError::request(url, &error))? {
            let room = cap - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                // The rest is left unread; dropping the response closes it.
                return Ok((body, true));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, false))
    }
}
