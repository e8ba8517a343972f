//! Images as a message carries them: the name the person gave, the format
//! told by the bytes (`bosun_tools::image`), and the limit on a message's
//! count.

use bosun_core::ContentPart;

pub(super) use bosun_tools::image::{HEAD, named_like_image, other_format};
pub use bosun_tools::image::{ImageFormat, MAX_IMAGE_BYTES};

/// The most images one message may carry. Anthropic shrinks every image of
/// a request holding more than 20 to 2000 pixels a side and refuses larger
/// ones, so 20 keeps the full resolution everywhere.
pub const MAX_IMAGES: usize = 20;

/// An image read for a message.
#[derive(Clone, PartialEq, Eq)]
pub struct Image {
    /// The name the person gave it (`shot.png`, `/home/me/shot.png`).
    pub name: String,
    /// Its format, from its bytes.
    pub format: ImageFormat,
    /// Its bytes, whole.
    pub bytes: Vec<u8>,
}

// The bytes are megabytes: show their count.
impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("name", &self.name)
            .field("format", &self.format)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl Image {
    /// The line a front end shows for it: `[image: shot.png, 120 KiB]`.
    pub fn line(&self) -> String {
        format!("[image: {}, {}]", self.name, bosun_core::message::byte_size(self.bytes.len()))
    }

    /// The message part that carries it.
    pub fn into_part(self) -> ContentPart {
        ContentPart::image(self.format.media_type(), self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_shows_as_a_line_with_its_size_never_its_bytes() {
        let image = Image { name: "shot.png".into(), format: ImageFormat::Png, bytes: vec![0; 120 * 1024] };
        assert_eq!(image.line(), "[image: shot.png, 120 KiB]");
        assert!(!format!("{image:?}").contains("0, 0"), "{image:?}");
        let part = image.into_part();
        assert!(
            matches!(&part, ContentPart::Image { media_type, data } if media_type == "image/png" && data.len() == 122_880)
        );
    }
}
