//! The server side of `api.Registry` with `Bundle` answers sent as bytes encoded once.
//!
//! A single-bundle answer is built (decoded base, channel fields, `csvJson`, `object`) on its
//! first request and then kept encoded; later requests only copy those bytes into the
//! response. The generated server normally takes an `api::Bundle` and encodes it on every
//! call, so this module compiles the service a second time with `.api.Bundle` mapped to
//! [`EncodedBundle`] (see `build.rs`); clients and every other message keep the plain
//! generated types of [`super::api`].

use bytes::{Buf, BufMut, Bytes};
use prost::DecodeError;
use prost::encoding::{DecodeContext, WireType};

#[allow(missing_docs, clippy::doc_markdown, clippy::all)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/encoded/api.rs"));
}

pub use generated::registry_server;

/// An `api.Bundle` already encoded: its `prost::Message` impl writes the bytes as they are.
///
/// It is only ever sent. Decoding one (which a server never does) keeps nothing, so a
/// malformed peer cannot make it hold data it did not validate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EncodedBundle(Bytes);

impl EncodedBundle {
    /// Wraps the encoding of an `api::Bundle` (without a length prefix).
    pub fn new(bytes: Bytes) -> Self {
        EncodedBundle(bytes)
    }

    /// Encodes a message once.
    pub fn encode(bundle: &super::api::Bundle) -> Self {
        EncodedBundle(Bytes::from(prost::Message::encode_to_vec(bundle)))
    }

    /// The encoded bytes.
    pub fn bytes(&self) -> &Bytes {
        &self.0
    }

    /// The encoded bytes, by value (a reference count, not a copy).
    pub fn into_bytes(self) -> Bytes {
        self.0
    }
}

impl prost::Message for EncodedBundle {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.0);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        prost::encoding::skip_field(wire_type, tag, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        self.0.len()
    }

    fn clear(&mut self) {
        self.0 = Bytes::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::api;
    use prost::Message;

    #[test]
    fn writes_the_bytes_it_was_given() {
        let bundle = api::Bundle {
            csv_name: "etcd.v0.9.4".into(),
            package_name: "etcd".into(),
            channel_name: "alpha".into(),
            csv_json: "{\"kind\":\"ClusterServiceVersion\"}".into(),
            object: vec!["{}".into(), "{\"a\":1}".into()],
            ..Default::default()
        };
        let encoded = EncodedBundle::encode(&bundle);
        let mut framed = Vec::new();
        encoded.encode(&mut framed).unwrap();
        assert_eq!(framed, bundle.encode_to_vec());
        assert_eq!(encoded.encoded_len(), bundle.encoded_len());
        assert_eq!(api::Bundle::decode(framed.as_slice()).unwrap(), bundle);
    }

    #[test]
    fn decoding_skips_every_field() {
        let bundle = api::Bundle {
            csv_name: "x".into(),
            ..Default::default()
        };
        let decoded = EncodedBundle::decode(bundle.encode_to_vec().as_slice()).unwrap();
        assert!(decoded.bytes().is_empty());
        assert!(EncodedBundle::decode(&[0x0a, 0x05, b'x'][..]).is_err());
    }
}
