//! AWS's binary event-stream framing (`application/vnd.amazon.eventstream`),
//! as Bedrock's ConverseStream sends it, read into the same [`SseEvent`]s
//! the SSE reader makes, so the transport and decoders need no second path.
//! Frames (prelude, headers, payload, both CRCs) are decoded and checked by
//! `aws-smithy-eventstream`.
//!
//! An `event` frame becomes an event named by its `:event-type`, its JSON
//! payload the data. An `exception` frame (or an `error` frame) becomes an
//! `exception` event whose data is `{"error": {"type", "code", "message"}}`,
//! with the HTTP status Bedrock documents for that exception as the code,
//! so the shared classifier decides retries and overflow as for any API.

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::BytesMut;
use serde_json::{Value, json};

use crate::sse::SseEvent;

/// A frame that could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A frame's length, headers or checksum was wrong.
    #[error("a broken event-stream frame: {0}")]
    Broken(String),
    /// A frame larger than the event cap.
    #[error("an event-stream frame exceeded the {cap} byte event cap")]
    TooLarge {
        /// The cap, in bytes.
        cap: usize,
    },
}

/// Reads frames from bytes arriving in any pieces.
pub(crate) struct FrameReader {
    decoder: MessageFrameDecoder,
    buffer: BytesMut,
    cap: usize,
    saw_data: bool,
}

impl FrameReader {
    pub(crate) fn new(cap: usize) -> Self {
        Self { decoder: MessageFrameDecoder::new(), buffer: BytesMut::new(), cap, saw_data: false }
    }

    pub(crate) fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), FrameError> {
        self.buffer.extend_from_slice(chunk);
        loop {
            match self.decoder.decode_frame(&mut self.buffer) {
                Ok(DecodedFrame::Complete(message)) => {
                    self.saw_data = true;
                    out.push(event(&message));
                }
                Ok(DecodedFrame::Incomplete) => break,
                Err(error) => return Err(FrameError::Broken(error.to_string())),
            }
        }
        if self.buffer.len() > self.cap {
            return Err(FrameError::TooLarge { cap: self.cap });
        }
        Ok(())
    }

    /// Whether the stream ended inside a frame.
    pub(crate) fn finish(&mut self) -> bool {
        !self.buffer.is_empty()
    }

    /// Whether a frame arrived since the last call.
    pub(crate) fn take_saw_data(&mut self) -> bool {
        std::mem::take(&mut self.saw_data)
    }
}

fn header<'m>(message: &'m Message, name: &str) -> Option<&'m str> {
    let found = message.headers().iter().find(|h| h.name().as_str() == name)?;
    match found.value() {
        HeaderValue::String(value) => Some(value.as_str()),
        _ => None,
    }
}

/// The HTTP status Bedrock documents for an exception, for classification.
fn status(exception: &str) -> u16 {
    match exception {
        "throttlingException" => 429,
        "serviceUnavailableException" => 503,
        "modelTimeoutException" => 408,
        "validationException" => 400,
        "accessDeniedException" => 403,
        "resourceNotFoundException" => 404,
        // modelStreamErrorException, internalServerException, and the rest
        _ => 500,
    }
}

fn event(message: &Message) -> SseEvent {
    let payload = String::from_utf8_lossy(message.payload()).into_owned();
    match header(message, ":message-type").unwrap_or("event") {
        "event" => {
            SseEvent { event: header(message, ":event-type").unwrap_or_default().to_owned(), data: payload }
        }
        _ => {
            let kind = header(message, ":exception-type")
                .or_else(|| header(message, ":error-code"))
                .unwrap_or("error");
            let parsed: Value = serde_json::from_str(&payload).unwrap_or(Value::Null);
            let text = parsed
                .get("message")
                .or_else(|| parsed.get("Message"))
                .and_then(Value::as_str)
                .or_else(|| header(message, ":error-message"))
                .map(str::to_owned)
                .unwrap_or(payload);
            let data = json!({"error": {"type": kind, "code": status(kind), "message": text}});
            SseEvent { event: "exception".to_owned(), data: data.to_string() }
        }
    }
}

/// The reader of a response body: SSE for every API but Bedrock's.
pub(crate) enum Framing {
    Sse(crate::sse::SseParser),
    Frames(FrameReader),
}

impl Framing {
    pub(crate) fn for_config(config: &crate::config::ProviderConfig) -> Self {
        match config.api {
            crate::config::Api::BedrockConverse => Self::Frames(FrameReader::new(config.limits.event)),
            _ => Self::Sse(crate::sse::SseParser::with_limits(crate::sse::SseLimits {
                line: config.limits.line,
                event: config.limits.event,
            })),
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), String> {
        match self {
            Self::Sse(parser) => parser.push(chunk, out).map_err(|e| e.to_string()),
            Self::Frames(reader) => reader.push(chunk, out).map_err(|e| e.to_string()),
        }
    }

    /// Whether the stream ended inside an event.
    pub(crate) fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<bool, String> {
        match self {
            Self::Sse(parser) => parser.finish(out).map_err(|e| e.to_string()),
            Self::Frames(reader) => Ok(reader.finish()),
        }
    }

    pub(crate) fn take_saw_data(&mut self) -> bool {
        match self {
            Self::Sse(parser) => parser.take_saw_data(),
            Self::Frames(reader) => reader.take_saw_data(),
        }
    }
}
