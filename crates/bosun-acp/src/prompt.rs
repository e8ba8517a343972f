//! A prompt's content blocks as bosun's message: text, linked and
//! embedded text resources, and images (base64, held to bosun's limits,
//! refused for a model that takes none).

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use bosun_core::ContentPart;
use bosun_core::model::Support;

/// Whether the settings' model takes images (unknown when the model table
/// cannot tell).
pub(crate) fn images(settings: &bosun_agent::config::Settings) -> Support {
    bosun_agent::config::models::session_model(settings).map(|m| m.images).unwrap_or_default()
}

/// The prompt as a message: its text blocks, linked resources by their URI
/// and embedded text resources with their URI, then its images (refused for
/// a model that takes none, and held to bosun's size and count limits).
pub(crate) fn parts(blocks: &[ContentBlock], images: Support) -> Result<Vec<ContentPart>, String> {
    use base64::Engine as _;
    let mut text = Vec::new();
    let mut pictures = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(block) => text.push(block.text.clone()),
            ContentBlock::ResourceLink(link) => text.push(link.uri.clone()),
            ContentBlock::Resource(embedded) => {
                if let EmbeddedResourceResource::TextResourceContents(resource) = &embedded.resource {
                    text.push(format!("{}:\n```\n{}\n```", resource.uri, resource.text));
                }
            }
            ContentBlock::Image(image) => {
                let data = base64::engine::general_purpose::STANDARD
                    .decode(image.data.as_bytes())
                    .map_err(|e| format!("an image is not base64: {e}"))?;
                if data.len() as u64 > bosun_agent::attach::MAX_IMAGE_BYTES {
                    return Err(format!(
                        "an image is larger than {} bytes",
                        bosun_agent::attach::MAX_IMAGE_BYTES
                    ));
                }
                pictures.push(ContentPart::Image { media_type: image.mime_type.clone(), data });
            }
            _ => {}
        }
    }
    let text = text.join("\n");
    if text.trim().is_empty() && pictures.is_empty() {
        return Err("the prompt is empty".into());
    }
    if !pictures.is_empty() && images == Support::No {
        return Err("the session's model does not take images".into());
    }
    if pictures.len() > bosun_agent::attach::MAX_IMAGES {
        return Err(format!("at most {} images a message", bosun_agent::attach::MAX_IMAGES));
    }
    let words = (!text.trim().is_empty()).then(|| ContentPart::text(text));
    Ok(words.into_iter().chain(pictures).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{ImageContent, TextContent};

    #[test]
    fn a_prompt_carries_its_text_and_images_and_a_text_only_model_refuses_images() {
        let blocks = vec![
            ContentBlock::Text(TextContent::new("what is this")),
            ContentBlock::Image(ImageContent::new("iVBORw0K", "image/png")),
        ];
        let made = parts(&blocks, Support::Unknown).unwrap();
        assert_eq!(made.len(), 2);
        assert!(matches!(&made[1], ContentPart::Image { media_type, .. } if media_type == "image/png"));
        assert!(parts(&blocks, Support::No).unwrap_err().contains("does not take images"));
        assert!(parts(&[], Support::Yes).is_err());
    }
}
