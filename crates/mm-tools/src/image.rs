//! Pictures for models that can see: a PNG, JPEG, GIF or WebP file read
//! into an [`Image`] part, downscaled when larger than the providers take.
//!
//! Decoding untrusted files is bounded: the file's size first
//! ([`MAX_FILE`]), then the decoder's own limits (dimensions and memory).
//! An image within [`MAX_SIDE`] pixels a side and [`MAX_SEND`] bytes is sent
//! as its own bytes, undecoded; a larger one is decoded, scaled to fit and
//! encoded again (PNG, or JPEG for photographs).

use std::io::Cursor;
use std::path::Path;

use base64::Engine as _;
use image::{ImageFormat, ImageReader, Limits};
use mm_types::Image;

/// The largest image file read.
pub const MAX_FILE: u64 = 20 << 20;

/// The longest side sent, in pixels (Anthropic's advice; OpenAI and Gemini
/// scale larger ones down themselves).
pub const MAX_SIDE: u32 = 1568;

/// The most bytes of one image sent (Anthropic refuses past 5 MB of
/// base64, which is 3.75 MB of bytes).
pub const MAX_SEND: usize = 3_750_000;

/// The media type of a path that names a picture by its extension
/// (`png`, `jpg`/`jpeg`, `gif`, `webp`); `None` for anything else.
pub fn media_type(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

/// Read the picture at `path` (shown as `shown` in messages), bounded and
/// downscaled; `Err` is one line saying why not.
pub fn load(path: &Path, shown: &str) -> Result<Image, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a regular file"));
    }
    if meta.len() > MAX_FILE {
        return Err(format!(
            "{shown} is {} MiB; images over {} MiB are not sent",
            meta.len() >> 20,
            MAX_FILE >> 20
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    from_bytes(&bytes, shown)
}

/// [`load`] of bytes already read.
pub fn from_bytes(bytes: &[u8], shown: &str) -> Result<Image, String> {
    let format = image::guess_format(bytes)
        .map_err(|_| format!("{shown} is not a PNG, JPEG, GIF or WebP image"))?;
    let media_type = match format {
        ImageFormat::Png => "image/png",
        ImageFormat::Jpeg => "image/jpeg",
        ImageFormat::Gif => "image/gif",
        ImageFormat::WebP => "image/webp",
        _ => return Err(format!("{shown} is not a PNG, JPEG, GIF or WebP image")),
    };
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits());
    let (w, h) = reader
        .into_dimensions()
        .map_err(|e| format!("{shown} cannot be read as an image: {e}"))?;
    let b64 = |data: &[u8]| base64::engine::general_purpose::STANDARD.encode(data);
    if w <= MAX_SIDE && h <= MAX_SIDE && bytes.len() <= MAX_SEND {
        return Ok(Image {
            media_type: media_type.to_owned(),
            data: b64(bytes),
            source: shown.to_owned(),
        });
    }
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits());
    let picture = reader
        .decode()
        .map_err(|e| format!("{shown} cannot be decoded: {e}"))?;
    let picture = if w > MAX_SIDE || h > MAX_SIDE {
        picture.resize(MAX_SIDE, MAX_SIDE, image::imageops::FilterType::Triangle)
    } else {
        picture
    };
    // Screenshots stay PNG (sharp text); photographs become JPEG.
    let photo = matches!(format, ImageFormat::Jpeg | ImageFormat::WebP);
    let mut out = Vec::new();
    let (encoded_as, result) = if photo {
        let rgb = image::DynamicImage::ImageRgb8(picture.to_rgb8());
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85);
        ("image/jpeg", rgb.write_with_encoder(encoder))
    } else {
        (
            "image/png",
            picture.write_to(&mut Cursor::new(&mut out), ImageFormat::Png),
        )
    };
    result.map_err(|e| format!("{shown} cannot be scaled down: {e}"))?;
    if out.len() > MAX_SEND {
        return Err(format!(
            "{shown} is still {} bytes scaled down; images over {MAX_SEND} bytes are not sent",
            out.len()
        ));
    }
    Ok(Image {
        media_type: encoded_as.to_owned(),
        data: b64(&out),
        source: shown.to_owned(),
    })
}

/// What a decoder may take of an untrusted file.
fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(16_384);
    limits.max_image_height = Some(16_384);
    limits.max_alloc = Some(512 << 20);
    limits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let picture = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 7]));
        let mut out = Vec::new();
        picture
            .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .unwrap();
        out
    }

    #[test]
    fn a_small_picture_is_sent_as_it_is() {
        let bytes = png(4, 3);
        let img = from_bytes(&bytes, "shot.png").unwrap();
        assert_eq!(img.media_type, "image/png");
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&img.data)
                .unwrap(),
            bytes
        );
        assert_eq!(img.source, "shot.png");
    }

    #[test]
    fn a_large_picture_is_scaled_to_fit() {
        let img = from_bytes(&png(3000, 1000), "big.png").unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&img.data)
            .unwrap();
        let (w, h) = image::load_from_memory(&bytes)
            .unwrap()
            .to_rgb8()
            .dimensions();
        assert_eq!((w, h), (MAX_SIDE, 523));
    }

    #[test]
    fn other_files_are_refused_in_one_line() {
        let e = from_bytes(b"hello", "notes.png").unwrap_err();
        assert_eq!(e, "notes.png is not a PNG, JPEG, GIF or WebP image");
        assert_eq!(media_type(Path::new("a/B.JPG")), Some("image/jpeg"));
        assert_eq!(media_type(Path::new("a.txt")), None);
    }
}
