//! `web_fetch`: one http(s) URL, read within the bounds, HTML as Markdown.

use bosun_core::{
    CallEffects, CancellationPolicy, Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput,
};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use crate::convert::{CONVERT_STACK_BYTES, Reading, reading, to_text};
use crate::http::{Client, Fetched};
use crate::network;
use crate::{WebError, WebLimits, checked_url};

/// What `web_fetch` asks for: HTML first, then Markdown, text and JSON.
const ACCEPT: &str = "text/html, application/xhtml+xml, text/markdown;q=0.9, text/plain;q=0.8, \
                      application/json;q=0.8, */*;q=0.1";

/// The `web_fetch` tool.
#[derive(Debug)]
pub struct WebFetch {
    definition: ToolDefinition,
    client: Client,
}

impl WebFetch {
    /// The tool with these bounds.
    pub fn new(limits: WebLimits) -> Result<Self, WebError> {
        let definition = ToolDefinition::new(
            "web_fetch",
            "Fetch one http(s) URL and return its content: HTML as Markdown, text and JSON as they are. Every \
             call asks the user first. Redirects within the site are followed and listed; one to another site \
             is told, not followed (fetch that URL in a new call). The response is bounded in size and time.",
            json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "minLength": 1, "maxLength": 2048,
                        "description": "The http or https URL to fetch"}
                },
                "required": ["url"],
                "additionalProperties": false
            }),
        );
        Ok(Self { definition, client: Client::new(limits)? })
    }
}

impl Tool for WebFetch {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Network
    }

    fn cancellation(&self) -> CancellationPolicy {
        CancellationPolicy::Interruptible
    }

    fn effects(&self, arguments: &Value) -> CallEffects {
        let url = arguments.get("url").and_then(Value::as_str).unwrap_or_default();
        network::effects(&format!("`web_fetch` reads {url}"))
    }

    fn execute<'a>(&'a self, arguments: Value, context: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let text = arguments.get("url").and_then(Value::as_str).unwrap_or_default();
            network::cancellable(&context, self.fetch(text)).await
        })
    }
}

impl WebFetch {
    async fn fetch(&self, text: &str) -> ToolOutput {
        let url = match checked_url(text) {
            Ok(url) => url,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        match self.client.get(url, ACCEPT, &HeaderMap::new()).await {
            Ok(fetched) => self.render(fetched).await,
            Err(error) => ToolOutput::error(error.to_string()),
        }
    }

    async fn render(&self, fetched: Fetched) -> ToolOutput {
        let mut head = fetched.redirect_lines();
        if let Some(target) = &fetched.elsewhere {
            head.push_str(&format!(
                "redirected: {} → {target} (another site, or http after https: not followed; call web_fetch \
                 with that URL to read it, which asks again)\n",
                fetched.url
            ));
            return ToolOutput::text(head);
        }
        let status = fetched.status;
        head.push_str(&format!("URL: {}\nstatus: {status}\n", fetched.url));
        let reading = match reading(fetched.media_type.as_deref(), &fetched.body) {
            Ok(reading) => reading,
            Err(why) => return ToolOutput::error(format!("{head}{why}")),
        };
        let shown = fetched.media_type.as_deref().unwrap_or("unnamed");
        let as_markdown = if reading == Reading::Html { " (shown as Markdown)" } else { "" };
        head.push_str(&format!("content-type: {shown}{as_markdown}\n"));
        if fetched.cut {
            let max = self.client.limits.max_response_bytes;
            head.push_str(&format!("[the response was cut at {max} bytes; the rest was not read]\n"));
        }
        let body = fetched.body;
        // CPU work off the async threads, on a stack sized for the
        // converter's recursion (`convert::CONVERT_STACK_BYTES`).
        let (sender, converted) = tokio::sync::oneshot::channel();
        let started = std::thread::Builder::new()
            .name("bosun-web-convert".into())
            .stack_size(CONVERT_STACK_BYTES)
            .spawn(move || sender.send(to_text(reading, &body)));
        let text = match started {
            Ok(_) => converted.await.unwrap_or_else(|_| "(the page could not be converted)".to_owned()),
            Err(error) => return ToolOutput::error(format!("{head}cannot start the conversion: {error}")),
        };
        let output = bosun_tools::limits::cap(
            format!("{head}\n{text}"),
            self.client.limits.max_output_bytes,
            "output",
        );
        if status.is_success() { ToolOutput::text(output) } else { ToolOutput::error(output) }
    }
}
