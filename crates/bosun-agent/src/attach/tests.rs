//! Attachments read from real files: `@path` through the handles, images
//! told by their bytes, written-out paths inside and outside the
//! workspace, and every limit.

use std::path::Path;

use super::*;

/// The smallest PNG header: enough for the format to be told.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";

fn png(size: usize) -> Vec<u8> {
    let mut bytes = PNG.to_vec();
    bytes.resize(size.max(PNG.len()), 0);
    bytes
}

struct Fixture {
    ws: tempfile::TempDir,
    outside: tempfile::TempDir,
    workspace: Workspace,
}

fn fixture() -> Fixture {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let workspace = Workspace::open(ws.path()).unwrap();
    Fixture { ws, outside, workspace }
}

impl Fixture {
    fn write(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.ws.path().join(name), bytes).unwrap();
    }

    fn outside(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.outside.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    }

    fn conversation(&self, text: &str) -> Result<Attached, AttachError> {
        let typed = Typed { home: Some(self.outside.path().to_path_buf()) };
        attach(&self.workspace, text, &Reading { text_files: true, typed: Some(typed) })
    }

    fn exec(&self, text: &str) -> Result<Attached, AttachError> {
        attach(&self.workspace, text, &Reading { text_files: false, typed: None })
    }
}

fn names(attached: &Attached) -> Vec<&str> {
    attached.images.iter().map(|i| i.name.as_str()).collect()
}

#[test]
fn an_at_path_attaches_an_image_as_an_image_and_text_as_text() {
    let f = fixture();
    f.write("shot.png", &png(2048));
    f.write("notes.md", b"remember the milk\n");
    let attached = f.conversation("what is in @shot.png, and see @notes.md.").unwrap();
    assert_eq!(names(&attached), ["shot.png"]);
    assert_eq!(attached.images[0].bytes, png(2048), "whole");
    assert!(
        attached.text.ends_with("<file path=\"notes.md\">\nremember the milk\n</file>"),
        "{}",
        attached.text
    );
    assert!(!attached.text.contains("PNG"), "the image is not inlined as text");
    let content = attached.into_content();
    assert!(
        matches!(&content[..], [ContentPart::Text { .. }, ContentPart::Image { media_type, .. }] if media_type == "image/png")
    );
}

#[test]
fn the_bytes_decide_not_the_name() {
    let f = fixture();
    f.write("screenshot", &png(100));
    f.write("fake.png", b"just words");
    f.write("old.bmp", b"BM\x36\0\0\0\0\0\0\0\x36\0\0\0");
    assert_eq!(names(&f.conversation("@screenshot").unwrap()), ["screenshot"], "no extension, PNG bytes");
    let fake = f.conversation("look at @fake.png").unwrap_err();
    assert_eq!(fake.to_string(), "fake.png is not a PNG, JPEG, GIF or WebP image");
    let bmp = f.conversation("and @old.bmp").unwrap_err();
    assert_eq!(
        bmp.to_string(),
        "old.bmp is a BMP image; images are sent as PNG, JPEG, GIF or WebP (convert it first)"
    );
}

#[test]
fn an_image_over_the_limit_is_refused_naming_it_and_one_at_the_limit_goes_whole() {
    let f = fixture();
    f.write("big.png", &png(MAX_IMAGE_BYTES as usize + 1));
    f.write("edge.png", &png(MAX_IMAGE_BYTES as usize));
    let error = f.conversation("@big.png").unwrap_err();
    assert!(
        matches!(error, AttachError::ImageTooLarge { ref name, size } if name == "big.png" && size == MAX_IMAGE_BYTES + 1)
    );
    assert!(
        error.to_string().starts_with("big.png is 3.75 MiB, over the 3.75 MiB an image may have"),
        "{error}"
    );
    let edge = f.conversation("@edge.png").unwrap();
    assert_eq!(edge.images[0].bytes.len() as u64, MAX_IMAGE_BYTES);
}

#[test]
fn more_images_than_a_message_takes_are_refused() {
    let f = fixture();
    let mut text = String::new();
    for i in 0..=MAX_IMAGES {
        f.write(&format!("{i}.png"), &png(64));
        text.push_str(&format!("@{i}.png "));
    }
    let error = f.conversation(&text).unwrap_err();
    assert_eq!(error.to_string(), "the message has 21 images; at most 20 go in one message");
    let mut twenty = f.conversation(&text.replace("@20.png", "")).unwrap();
    let extra = image_file(&f.workspace, Path::new("20.png"), f.ws.path()).unwrap();
    assert!(matches!(twenty.push_image(extra), Err(AttachError::TooManyImages { count: 21 })));
}

#[test]
fn invariant_16_an_at_path_through_a_symlink_stops_an_image_and_warns_for_text() {
    let f = fixture();
    let target = f.outside("secret.png", &png(64));
    std::os::unix::fs::symlink(&target, f.ws.path().join("link.png")).unwrap();
    std::os::unix::fs::symlink(&target, f.ws.path().join("link")).unwrap();
    let link = f.conversation("@link.png").unwrap_err();
    assert!(link.to_string().contains("symlink"), "through the handles: {link}");
    assert!(f.conversation("@typo.png").unwrap_err().to_string().contains("does not exist"));
    let warned = f.conversation("@link and @nothing and @../x").unwrap();
    assert!(warned.images.is_empty());
    assert_eq!(warned.warnings.len(), 3, "{:?}", warned.warnings);
}

#[test]
fn a_written_path_outside_the_workspace_is_the_persons_own_and_attaches() {
    let f = fixture();
    let shot = f.outside("my shot.png", &png(300));
    let quoted = format!("what is wrong here? '{shot}'");
    let attached = f.conversation(&quoted).unwrap();
    assert_eq!(names(&attached), [shot.as_str()]);
    assert_eq!(attached.images[0].line(), format!("[image: {shot}, 300 B]"));
    let escaped = shot.replace(' ', "\\ ");
    assert_eq!(f.conversation(&escaped).unwrap().images.len(), 1, "backslash-escaped");
    assert_eq!(f.conversation("~/my\\ shot.png").unwrap().images.len(), 1, "from the home folder");
    assert!(f.conversation("rename /nowhere/x.png").unwrap().images.is_empty(), "no file: words");
    let notes = f.outside("notes.png", b"words");
    assert!(matches!(f.conversation(&notes), Err(AttachError::NotAnImage { .. })));
    assert!(f.exec(&shot).unwrap().images.is_empty(), "exec reads no written paths");
    let from_a_file = attach(&f.workspace, &quoted, &Reading { text_files: true, typed: None }).unwrap();
    assert!(from_a_file.images.is_empty(), "text a file supplied reaches nothing outside");
}

#[test]
fn invariant_16_a_written_path_inside_the_workspace_goes_through_the_handles() {
    let f = fixture();
    f.write("shot.png", &png(64));
    let inside = f.ws.path().join("shot.png").display().to_string();
    assert_eq!(names(&f.conversation(&inside).unwrap()), [inside.as_str()]);
    assert_eq!(f.conversation("./shot.png").unwrap().images.len(), 1);
    let target = f.outside("secret.png", &png(64));
    std::os::unix::fs::symlink(&target, f.ws.path().join("link.png")).unwrap();
    let link = f.ws.path().join("link.png").display().to_string();
    assert!(f.conversation(&link).unwrap_err().to_string().contains("symlink"));
    let through = f.ws.path().join("sub/../link.png").display().to_string();
    std::fs::create_dir(f.ws.path().join("sub")).unwrap();
    assert!(f.conversation(&through).unwrap_err().to_string().contains("symlink"), "`..` taken away first");
}

#[test]
fn exec_attaches_only_images_and_leaves_other_words() {
    let f = fixture();
    f.write("shot.png", &png(64));
    f.write("notes.md", b"text");
    let attached = f.exec("compare @shot.png with @notes.md, email @someone").unwrap();
    assert_eq!(names(&attached), ["shot.png"]);
    assert_eq!(attached.text, "compare @shot.png with @notes.md, email @someone");
    assert!(attached.warnings.is_empty(), "{:?}", attached.warnings);
    assert!(f.exec("@missing.png").is_err(), "a missing image is named");
}

#[test]
fn a_given_image_file_is_read_from_its_base_or_where_it_lies() {
    let f = fixture();
    f.write("in.png", &png(64));
    let outside = f.outside("out.jpg", b"\xff\xd8\xff\xe0rest");
    let inside = image_file(&f.workspace, Path::new("in.png"), f.ws.path()).unwrap();
    assert_eq!((inside.name.as_str(), inside.format), ("in.png", ImageFormat::Png));
    let out = image_file(&f.workspace, Path::new(&outside), f.ws.path()).unwrap();
    assert_eq!(out.format, ImageFormat::Jpeg);
    let text = f.outside("a.txt", b"hello");
    assert!(matches!(
        image_file(&f.workspace, Path::new(&text), f.ws.path()),
        Err(AttachError::NotAnImage { .. })
    ));
    let fifo = f.outside.path().join("pipe.png");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
    let error = image_file(&f.workspace, &fifo, f.ws.path()).unwrap_err();
    assert!(error.to_string().contains("not a regular file"), "no hang: {error}");
}

#[test]
fn a_model_without_images_is_refused_naming_it_and_the_images() {
    let f = fixture();
    f.write("shot.png", &png(64));
    let attached = f.conversation("@shot.png").unwrap();
    attached.check_model(Support::Yes, "anthropic/claude-opus-5-5").unwrap();
    attached.check_model(Support::Unknown, "ollama/llava").unwrap();
    let local = attached.check_model(Support::No, "local/qwen2.5-coder-1.5b").unwrap_err();
    assert_eq!(
        local.to_string(),
        "local/qwen2.5-coder-1.5b does not take images (a local model reads text only), so the message was not \
         sent (shot.png); remove them, or switch to a model that takes images (/model, --model)"
    );
    let hosted = attached.check_model(Support::No, "deepseek/deepseek-chat").unwrap_err();
    assert!(hosted.to_string().starts_with("deepseek/deepseek-chat does not take images, so"), "{hosted}");
    Attached::default().check_model(Support::No, "local/x").unwrap();
}
