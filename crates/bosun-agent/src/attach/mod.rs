//! What a person's message carries besides its words: workspace files
//! named `@path` (text inlined, images as image parts), image files whose
//! paths the person typed or pasted (a terminal's drag and drop), and image
//! files given by a front end's option (`exec --image FILE`).
//!
//! Where a file is read:
//! - a path beneath the workspace (every `@path`, and a typed or given path
//!   that lies there) goes through the workspace's handles: no `..`, no
//!   symlink followed (invariant 16);
//! - a typed or given path outside the workspace is the person's own
//!   choice of file, read as the operating system opens it for them. Only
//!   words the person wrote count: text a file supplied (a custom command)
//!   reaches no file outside the workspace, and nothing read here widens
//!   what the model's tools may touch.
//!
//! An image is told by its bytes (PNG, JPEG, GIF, WebP); one over
//! [`MAX_IMAGE_BYTES`], a message with more than [`MAX_IMAGES`], a file
//! named like an image that is not one of those, or an image for a model
//! that takes none is refused with the file's name, and nothing is sent.
//! An image is never cut.

mod image;
mod written;

use std::fs::File;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use bosun_core::{ContentPart, Support};
use bosun_tools::Workspace;
use bosun_tools::workspace::RelPath;

pub use image::{Image, ImageFormat, MAX_IMAGE_BYTES, MAX_IMAGES};

/// The most bytes of a text file an `@path` inlines.
pub const MAX_TEXT_BYTES: u64 = 256 * 1024;

/// Why a message's attachments stop it from being sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttachError {
    /// An image over [`MAX_IMAGE_BYTES`].
    #[error(
        "{name} is {}, over the {} an image may have (5 MiB once encoded, the most Anthropic takes); \
         make it smaller (scale it down, or save it as JPEG)",
        size_of(*size),
        size_of(MAX_IMAGE_BYTES)
    )]
    ImageTooLarge {
        /// The image, as the person named it.
        name: String,
        /// Its size in bytes.
        size: u64,
    },
    /// More than [`MAX_IMAGES`] images in one message.
    #[error("the message has {count} images; at most {MAX_IMAGES} go in one message")]
    TooManyImages {
        /// How many it had.
        count: usize,
    },
    /// An image in a format bosun does not send.
    #[error("{name} is a {format} image; images are sent as PNG, JPEG, GIF or WebP (convert it first)")]
    Unsupported {
        /// The file.
        name: String,
        /// Its format.
        format: &'static str,
    },
    /// A file given as an image (by its name, or as `--image`) whose bytes
    /// are no image bosun knows.
    #[error("{name} is not a PNG, JPEG, GIF or WebP image")]
    NotAnImage {
        /// The file.
        name: String,
    },
    /// Images for a model that takes none.
    #[error(
        "{model} does not take images{why}, so the message was not sent ({names}); remove them, or switch \
         to a model that takes images (/model, --model)"
    )]
    NoImages {
        /// The model.
        model: String,
        /// Why, when known.
        why: &'static str,
        /// The images.
        names: String,
    },
    /// A file that could not be read.
    #[error("{name} cannot be read: {reason}")]
    Unreadable {
        /// The file.
        name: String,
        /// What went wrong.
        reason: String,
    },
    /// A text file over [`MAX_TEXT_BYTES`].
    #[error("{name} is {}, over the {} a file attached as text may have", size_of(*size), size_of(MAX_TEXT_BYTES))]
    TextTooLarge {
        /// The file.
        name: String,
        /// Its size in bytes.
        size: u64,
    },
    /// A file that is neither an image nor UTF-8 text.
    #[error("{name} is neither text nor an image")]
    NotText {
        /// The file.
        name: String,
    },
}

impl AttachError {
    /// Whether the message must not go: an image that cannot be sent as
    /// asked. A text file that cannot be inlined only warns (the model can
    /// read it with its tools).
    pub fn stops_the_message(&self) -> bool {
        !matches!(self, Self::Unreadable { .. } | Self::TextTooLarge { .. } | Self::NotText { .. })
    }
}

fn size_of(bytes: u64) -> String {
    bosun_core::message::byte_size(usize::try_from(bytes).unwrap_or(usize::MAX))
}

/// How a message's text is read for attachments.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    /// `@path` of a text file inlines it (the conversation); without, an
    /// `@path` attaches only images and leaves other words as they are
    /// (`exec`, whose prompt may be a script's).
    pub text_files: bool,
    /// The person wrote the text: image paths written out in it are
    /// attached, `~/` from this home folder. `None` for text a file
    /// supplied, and for `exec`, which has `--image`.
    pub typed: Option<Typed>,
}

/// Where a person's written-out paths start from.
#[derive(Clone, Debug, Default)]
pub struct Typed {
    /// The home folder, for `~/`.
    pub home: Option<PathBuf>,
}

/// A message with its attachments read.
#[derive(Debug, Default)]
pub struct Attached {
    /// The text, with each inlined file appended as `<file path="…">`.
    pub text: String,
    /// The images, in the order the text names them.
    pub images: Vec<Image>,
    /// What could not be attached but does not stop the message.
    pub warnings: Vec<String>,
}

impl Attached {
    /// The message's parts: its text, then its images.
    pub fn into_content(self) -> Vec<ContentPart> {
        let mut content = vec![ContentPart::text(self.text)];
        content.extend(self.images.into_iter().map(Image::into_part));
        content
    }

    /// Adds an image the front end was given apart from the text
    /// (`--image FILE`), keeping to [`MAX_IMAGES`].
    pub fn push_image(&mut self, image: Image) -> Result<(), AttachError> {
        self.images.push(image);
        check_count(self.images.len())
    }

    /// Refuses the images for a model whose `images` support is `No`, naming
    /// the model (`model`) and why when it is a local one.
    pub fn check_model(&self, images: Support, model: &str) -> Result<(), AttachError> {
        if images != Support::No || self.images.is_empty() {
            return Ok(());
        }
        let local = crate::config::models::is_local_spec(model);
        let names: Vec<&str> = self.images.iter().map(|i| i.name.as_str()).collect();
        Err(AttachError::NoImages {
            model: model.to_owned(),
            why: if local { " (a local model reads text only)" } else { "" },
            names: names.join(", "),
        })
    }
}

/// Reads the attachments of `text` as `reading` says. An image problem is
/// an error; a text file that cannot be inlined is a warning.
pub fn attach(workspace: &Workspace, text: &str, reading: &Reading) -> Result<Attached, AttachError> {
    let mut attached = Attached { text: text.to_owned(), ..Attached::default() };
    let mut files: Vec<(String, String)> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let Some(name) = word.strip_prefix('@') else { continue };
        let name = name.trim_end_matches([',', '.', ';', ':', ')', '?', '!']);
        if name.is_empty() || seen.iter().any(|n| n == name) {
            continue;
        }
        seen.push(name.to_owned());
        let read = RelPath::parse(name)
            .map_err(|e| unreadable(name, e))
            .and_then(|path| read_in(workspace, &path, name, reading.text_files));
        match read {
            Ok(Some(Loaded::Image(image))) => attached.images.push(image),
            Ok(Some(Loaded::Text(content))) => files.push((name.to_owned(), content)),
            Ok(None) => {}
            // A name that says image: the person wanted it seen, so a
            // typo or a refused link stops the message rather than send it
            // without.
            Err(error) if error.stops_the_message() || image::named_like_image(name) => return Err(error),
            // A script's `@word` that names nothing is its own business.
            Err(_) if !reading.text_files && !image::named_like_image(name) => {}
            Err(error) => attached.warnings.push(format!("@{name} not attached: {error}")),
        }
    }
    if let Some(typed) = &reading.typed {
        for path in written::image_paths(text, typed.home.as_deref(), workspace.root_path()) {
            // A path in a sentence that names no file is words.
            if !path.path.is_file() || seen.contains(&path.shown) {
                continue;
            }
            seen.push(path.shown.clone());
            attached.images.push(image_at(workspace, &path.path, &path.shown)?);
        }
    }
    for (name, content) in files {
        attached
            .text
            .push_str(&format!("\n\n<file path=\"{name}\">\n{}\n</file>", content.trim_end_matches('\n')));
    }
    check_count(attached.images.len())?;
    Ok(attached)
}

/// The image at `path` (relative to `base`), which the person named apart
/// from the text (`--image FILE`): through the workspace's handles when it
/// lies beneath it, as the system opens it for them otherwise.
pub fn image_file(workspace: &Workspace, path: &Path, base: &Path) -> Result<Image, AttachError> {
    let name = path.display().to_string();
    image_at(workspace, &base.join(path), &name)
}

fn check_count(count: usize) -> Result<(), AttachError> {
    if count > MAX_IMAGES {
        return Err(AttachError::TooManyImages { count });
    }
    Ok(())
}

/// What a file turned out to be.
enum Loaded {
    Image(Image),
    Text(String),
}

/// The image at the absolute or base-joined `path`, named `name`.
fn image_at(workspace: &Workspace, path: &Path, name: &str) -> Result<Image, AttachError> {
    let loaded = match beneath(workspace, path) {
        Some(rel) => read_in(workspace, &rel, name, false)?,
        None => {
            let (file, size) = open_outside(path).map_err(|e| unreadable(name, e))?;
            read_opened(file, size, name, false)?
        }
    };
    match loaded {
        Some(Loaded::Image(image)) => Ok(image),
        _ => Err(AttachError::NotAnImage { name: name.to_owned() }),
    }
}

/// The workspace's file `path`, through its handles.
fn read_in(
    workspace: &Workspace,
    path: &RelPath,
    name: &str,
    text: bool,
) -> Result<Option<Loaded>, AttachError> {
    let (file, stat) = workspace.open_file(path).map_err(|e| unreadable(name, e))?;
    read_opened(file, u64::try_from(stat.st_size).unwrap_or_default(), name, text)
}

/// A file already opened: an image by its first bytes, else (when `text`)
/// UTF-8 text; `None` for a file that is neither wanted.
fn read_opened(mut file: File, size: u64, name: &str, text: bool) -> Result<Option<Loaded>, AttachError> {
    let mut bytes = Vec::new();
    (&mut file).take(image::HEAD as u64).read_to_end(&mut bytes).map_err(|e| unreadable(name, e))?;
    let name = name.to_owned();
    let format = if let Some(format) = ImageFormat::sniff(&bytes) {
        if size > MAX_IMAGE_BYTES {
            return Err(AttachError::ImageTooLarge { name, size });
        }
        Some(format)
    } else if let Some(format) = image::other_format(&bytes) {
        return Err(AttachError::Unsupported { name, format });
    } else if image::named_like_image(&name) {
        return Err(AttachError::NotAnImage { name });
    } else if !text {
        return Ok(None);
    } else if size > MAX_TEXT_BYTES {
        return Err(AttachError::TextTooLarge { name, size });
    } else {
        None
    };
    let cap = if format.is_some() { MAX_IMAGE_BYTES } else { MAX_TEXT_BYTES };
    // `take` bounds a file that grows while it is read: refused, not cut.
    file.take(cap + 1 - bytes.len() as u64).read_to_end(&mut bytes).map_err(|e| unreadable(&name, e))?;
    let read = bytes.len() as u64;
    Ok(Some(match format {
        Some(_) if read > cap => return Err(AttachError::ImageTooLarge { name, size: read }),
        Some(format) => Loaded::Image(Image { name, format, bytes }),
        None if read > cap => return Err(AttachError::TextTooLarge { name, size: read }),
        None => match String::from_utf8(bytes) {
            Ok(content) => Loaded::Text(content),
            Err(_) => return Err(AttachError::NotText { name }),
        },
    }))
}

fn unreadable(name: &str, error: impl std::fmt::Display) -> AttachError {
    AttachError::Unreadable { name: name.to_owned(), reason: error.to_string() }
}

/// `path` as a workspace path when it lies beneath the workspace: lexically
/// (`..` and `.` taken away), or once the folder holding it is resolved
/// (the same folder reached through a link elsewhere). Its last component
/// is never resolved here: the handles refuse a symlink there.
fn beneath(workspace: &Workspace, path: &Path) -> Option<RelPath> {
    let path = lexically_normal(path);
    let root = workspace.root_path();
    let relative = match path.strip_prefix(root) {
        Ok(relative) => relative.to_path_buf(),
        Err(_) => {
            let (parent, name) = (path.parent()?, path.file_name()?);
            let (parent, root) = (parent.canonicalize().ok()?, root.canonicalize().ok()?);
            parent.join(name).strip_prefix(&root).ok()?.to_path_buf()
        }
    };
    RelPath::parse(relative.to_str()?).ok()
}

/// `path` with `.` dropped and each `..` taking away the component before it.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

/// A file outside the workspace, opened for the person: non-blocking, so a
/// FIFO cannot hang the open, and only a regular file is read.
fn open_outside(path: &Path) -> std::io::Result<(File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok((file, metadata.len()))
}

#[cfg(test)]
mod tests;
