//! What a failed connection or a cut stream says to a person: built from the
//! error's whole `source()` chain, since reqwest's own text ("error sending
//! request for url (…)", "error decoding response body") names neither the
//! cause nor, for a body, what was being done.

use std::error::Error as _;

/// Layers of reqwest's, hyper's and hyper-util's errors that only name the
/// step the context already says ("connecting to …", "the stream was cut"):
/// left out so that the message is the context and the cause.
const WRAPPERS: &[&str] = &[
    "client error (",
    "error sending request",
    "error decoding response body",
    "error reading a body from connection",
    "request or response body error",
    "tcp connect error",
    "error trying to connect",
    "connection error",
];

/// The message for a failed request or body read, and a short reason for a
/// retry notice: (`connecting to http://127.0.0.1:9/v1/responses: connection
/// refused (os error 111)`, `connection refused`), (`the stream was cut:
/// connection reset by peer (os error 104)`, `connection reset by peer`).
pub(crate) fn describe(error: &reqwest::Error, url: &str) -> (String, String) {
    let context = if error.is_connect() {
        format!("connecting to {}", shown(url))
    } else if error.is_body() || error.is_decode() {
        "the stream was cut".to_owned()
    } else if error.is_timeout() {
        format!("waiting for {}", shown(url))
    } else {
        format!("sending the request to {}", shown(url))
    };
    let causes = causes(error);
    let reason = match causes.last() {
        Some(cause) => without_os_error(cause).to_owned(),
        None => context.clone(),
    };
    let message = if causes.is_empty() { context } else { format!("{context}: {}", causes.join(": ")) };
    (message, reason)
}

/// The chain below the top error, wrappers left out, each cause once (an
/// outer text that already quotes an inner one keeps only the outer).
fn causes(error: &reqwest::Error) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    let mut next = error.source();
    while let Some(cause) = next {
        let text = lower_first(cause.to_string().trim());
        let wrapper = WRAPPERS.iter().any(|w| text.starts_with(w));
        if !text.is_empty() && !wrapper && !kept.iter().any(|k| k.contains(&text)) {
            kept.push(text);
        }
        next = cause.source();
    }
    kept
}

/// `Connection refused` → `connection refused`; `TLS …` is left as it is.
fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(first), Some(second)) if first.is_uppercase() && second.is_lowercase() => {
            first.to_lowercase().chain(text.chars().skip(1)).collect()
        }
        _ => text.to_owned(),
    }
}

/// `connection refused (os error 111)` → `connection refused`.
fn without_os_error(text: &str) -> &str {
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => &text[..at],
        _ => text,
    }
}

/// The URL without credentials or query: what may be printed.
fn shown(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            // Neither can fail on a URL with a host, which one sent to has.
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.to_string()
        }
        Err(_) => url.split('?').next().unwrap_or(url).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_lowered_only_where_it_is_a_sentence() {
        assert_eq!(lower_first("Connection refused (os error 111)"), "connection refused (os error 111)");
        assert_eq!(lower_first("TLS handshake eof"), "TLS handshake eof");
        assert_eq!(without_os_error("connection refused (os error 111)"), "connection refused");
        assert_eq!(without_os_error("broken pipe"), "broken pipe");
    }

    #[test]
    fn printed_urls_hold_no_credentials_or_query() {
        assert_eq!(shown("http://user:secret@127.0.0.1:9/v1/x?key=k"), "http://127.0.0.1:9/v1/x");
        assert_eq!(
            shown("https://g.example/v1beta/models/m:streamGenerateContent?alt=sse"),
            "https://g.example/v1beta/models/m:streamGenerateContent"
        );
    }
}
