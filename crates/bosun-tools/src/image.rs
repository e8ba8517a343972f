//! What an image file is, by its first bytes: the four formats every
//! model provider takes (PNG, JPEG, GIF, WebP), others named so a person
//! hears why one is not sent, and the most bytes one image may have.
//! `read_file` returns such a file as an image; bosun-agent's attachments
//! use the same rules.

/// The most bytes one image may have: 3.75 MiB, which is 5 MiB once
/// base64-encoded, the most Anthropic takes for an image (its API measures
/// the encoded string); OpenAI and Gemini take more. An image over it is
/// refused, never cut.
pub const MAX_IMAGE_BYTES: u64 = 3 * 1024 * 1024 + 768 * 1024;

/// How many leading bytes tell a format.
pub const HEAD: usize = 16;

/// An image format every provider takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    /// PNG.
    Png,
    /// JPEG.
    Jpeg,
    /// GIF (a provider looks at its first frame).
    Gif,
    /// WebP.
    Webp,
}

impl ImageFormat {
    /// The format `bytes` start with, if one of these.
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
            Some(Self::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(Self::Gif)
        } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else {
            None
        }
    }

    /// Its name as people write it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Png => "PNG",
            Self::Jpeg => "JPEG",
            Self::Gif => "GIF",
            Self::Webp => "WebP",
        }
    }

    /// Its IANA media type.
    pub fn media_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
        }
    }
}

/// Another image format that `bytes` start with, by name: recognised so the
/// person hears why it was not sent, rather than that it is not text.
pub fn other_format(bytes: &[u8]) -> Option<&'static str> {
    let at = |range: std::ops::Range<usize>| bytes.get(range).unwrap_or_default();
    // "BM" alone starts words; a bitmap's header then holds four zero bytes.
    if bytes.starts_with(b"BM") && at(6..10) == [0, 0, 0, 0] {
        return Some("BMP");
    }
    if bytes.starts_with(b"II*\0") || bytes.starts_with(b"MM\0*") {
        return Some("TIFF");
    }
    if bytes.starts_with(b"8BPS") {
        return Some("Photoshop");
    }
    if bytes.starts_with(&[0, 0, 1, 0]) && at(4..6) != [0, 0] {
        return Some("ICO");
    }
    if at(4..8) == b"ftyp" {
        match at(8..12) {
            b"avif" | b"avis" => return Some("AVIF"),
            b"heic" | b"heix" | b"hevc" | b"heim" | b"heis" | b"mif1" | b"msf1" => return Some("HEIC"),
            _ => {}
        }
    }
    None
}

/// Whether `name` ends like an image file's name (any case).
pub fn named_like_image(name: &str) -> bool {
    let Some((_, extension)) = name.rsplit_once('.') else { return false };
    const IMAGE_EXTENSIONS: [&str; 12] =
        ["png", "jpg", "jpeg", "gif", "webp", "bmp", "tif", "tiff", "heic", "heif", "avif", "ico"];
    IMAGE_EXTENSIONS.iter().any(|known| extension.eq_ignore_ascii_case(known))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_by_their_first_bytes() {
        let webp = b"RIFF\x24\0\0\0WEBPVP8 ";
        for (bytes, format) in [
            (&b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"[..], Some(ImageFormat::Png)),
            (&[0xff, 0xd8, 0xff, 0xe0][..], Some(ImageFormat::Jpeg)),
            (b"GIF89a\x01\0", Some(ImageFormat::Gif)),
            (b"GIF87a", Some(ImageFormat::Gif)),
            (webp, Some(ImageFormat::Webp)),
            (b"RIFF\x24\0\0\0WAVEfmt ", None),
            (b"\x89PNG", None),
            (b"hello", None),
            (b"", None),
        ] {
            assert_eq!(ImageFormat::sniff(bytes), format, "{bytes:?}");
        }
        assert_eq!(ImageFormat::Webp.media_type(), "image/webp");
    }

    #[test]
    fn other_formats_are_named_and_text_that_starts_alike_is_not() {
        let bmp = b"BM\x36\0\0\0\0\0\0\0\x36\0\0\0";
        for (bytes, format) in [
            (&bmp[..], Some("BMP")),
            (b"BMW notes: the car", None),
            (b"II*\0\x08\0\0\0", Some("TIFF")),
            (b"MM\0*\0\0\0\x08", Some("TIFF")),
            (b"\0\0\0\x1cftypheic\0\0", Some("HEIC")),
            (b"\0\0\0\x1cftypavif\0\0", Some("AVIF")),
            (b"\0\0\0\x1cftypisom\0\0", None),
            (b"\0\0\x01\0\x01\0\x10\x10", Some("ICO")),
            (b"8BPS\0\x01", Some("Photoshop")),
        ] {
            assert_eq!(other_format(bytes), format, "{bytes:?}");
        }
    }

    #[test]
    fn image_names_are_told_by_their_extension_in_any_case() {
        for name in ["shot.png", "a/b.JPG", "x.jpeg", "anim.gif", "pic.WebP", "old.bmp", "phone.HEIC"] {
            assert!(named_like_image(name), "{name}");
        }
        for name in ["notes.md", "png", "logo.svg", "archive.png.gz", ""] {
            assert!(!named_like_image(name), "{name}");
        }
    }

    #[test]
    fn the_limit_is_five_mib_once_encoded() {
        assert_eq!(MAX_IMAGE_BYTES, 3_932_160);
        assert_eq!(MAX_IMAGE_BYTES.div_ceil(3) * 4, 5 * 1024 * 1024);
    }
}
