//! A `Bundle` message as the pieces it is sent in.
//!
//! An answer is mostly bytes the index already holds: the bundle's stored base, its CSV, its
//! manifests. Written as pieces, those are shared (`Bytes` reference counts) instead of copied
//! into one buffer per request, and a CSV that is both `csvJson` and the one object is held
//! once and sent twice. Only the small glue between them (channel fields, field keys and
//! lengths) is written per request.

use bytes::Bytes;

use crate::serve::encoded::EncodedBundle;

/// Shared pieces shorter than this are copied into the glue. A piece is sent as an HTTP/2
/// frame of its own, and a frame costs both ends more than copying a few kilobytes: with
/// pieces from 512 bytes on, the generated catalog's 2.2 KB answers went out as five frames
/// and GetBundle cost the server 30 µs instead of 20.
pub const SHARE_FROM: usize = 8 << 10;

/// An encoded `api.Bundle` as pieces whose concatenation is the message.
#[derive(Debug, Default)]
pub struct BundleAnswer {
    pieces: Vec<Bytes>,
}

impl BundleAnswer {
    /// An answer made of these pieces.
    pub fn from_pieces(pieces: Vec<Bytes>) -> Self {
        BundleAnswer { pieces }
    }

    /// Its pieces, in order.
    pub fn into_pieces(self) -> Vec<Bytes> {
        self.pieces
    }

    /// The message's size in bytes.
    pub fn len(&self) -> usize {
        self.pieces.iter().map(Bytes::len).sum()
    }

    /// Whether the message is empty (every field at its default).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The message in one buffer (a copy unless it is one piece).
    pub fn into_encoded(mut self) -> EncodedBundle {
        if self.pieces.len() <= 1 {
            return EncodedBundle::new(self.pieces.pop().unwrap_or_default());
        }
        let mut bytes = Vec::with_capacity(self.len());
        for piece in &self.pieces {
            bytes.extend_from_slice(piece);
        }
        EncodedBundle::new(bytes.into())
    }
}

/// Writes an answer: glue bytes are appended to an open buffer, shared pieces close it.
#[derive(Default)]
pub(super) struct AnswerWriter {
    pieces: Vec<Bytes>,
    glue: Vec<u8>,
}

impl AnswerWriter {
    /// A writer whose first glue is `start` (read from the spill file into a fresh buffer:
    /// appending to it copies nothing).
    pub(super) fn starting_with(start: Vec<u8>) -> Self {
        AnswerWriter {
            pieces: Vec::with_capacity(6),
            glue: start,
        }
    }

    /// The open buffer, to append glue to.
    pub(super) fn glue(&mut self) -> &mut Vec<u8> {
        &mut self.glue
    }

    /// Appends bytes that the index holds, without copying them (unless they are short).
    pub(super) fn share(&mut self, piece: &Bytes) {
        if piece.len() < SHARE_FROM {
            self.glue.extend_from_slice(piece);
            return;
        }
        if !self.glue.is_empty() {
            self.pieces.push(std::mem::take(&mut self.glue).into());
        }
        self.pieces.push(piece.clone());
    }

    /// Appends a length-delimited field whose value is `piece`; an empty one only if
    /// `repeated` (proto3 leaves an empty scalar out, but every element of a list is sent).
    pub(super) fn share_field(&mut self, tag: u32, piece: &Bytes, repeated: bool) {
        if piece.is_empty() && !repeated {
            return;
        }
        prost::encoding::encode_key(
            tag,
            prost::encoding::WireType::LengthDelimited,
            &mut self.glue,
        );
        prost::encoding::encode_varint(piece.len() as u64, &mut self.glue);
        self.share(piece);
    }

    /// The answer written.
    pub(super) fn finish(mut self) -> BundleAnswer {
        if !self.glue.is_empty() || self.pieces.is_empty() {
            self.pieces.push(self.glue.into());
        }
        BundleAnswer {
            pieces: self.pieces,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_concatenate_to_the_message() {
        let large = Bytes::from(vec![b'c'; SHARE_FROM]);
        let mut writer = AnswerWriter::starting_with(b"base".to_vec());
        writer.share_field(4, &large, false);
        writer.share_field(5, &large, true);
        writer.share_field(5, &Bytes::new(), true);
        writer.share_field(4, &Bytes::new(), false);
        writer.share(&Bytes::from_static(b"tail"));
        let answer = writer.finish();
        let mut expected = b"base".to_vec();
        for tag in [0x22, 0x2a] {
            expected.push(tag);
            prost::encoding::encode_varint(SHARE_FROM as u64, &mut expected);
            expected.extend_from_slice(&large);
        }
        expected.extend_from_slice(&[0x2a, 0]);
        expected.extend_from_slice(b"tail");
        assert_eq!(answer.len(), expected.len());
        let pieces = answer.into_pieces();
        // The large value is shared twice, not copied.
        assert_eq!(
            pieces
                .iter()
                .filter(|p| p.as_ptr() == large.as_ptr())
                .count(),
            2
        );
        assert_eq!(pieces.concat(), expected);
        let one = AnswerWriter::starting_with(b"only".to_vec()).finish();
        assert_eq!(one.into_encoded().bytes().as_ref(), b"only");
        assert!(AnswerWriter::default().finish().is_empty());
    }
}
