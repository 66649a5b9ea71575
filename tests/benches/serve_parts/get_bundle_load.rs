//! The serve benchmark's GetBundle load, shared by `tests/benches/serve.rs` and
//! `bundle-tool/examples/serve_load.rs` (which includes this file by path): requests encoded
//! once, a stride of 7919 through the listed bundles so that no cache sees only one, 64
//! concurrent clients on one HTTP/2 connection, answers only checked for status and size.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bundle_tool::serve::api;
use bytes::{Buf, BufMut, Bytes};
use prost::Message;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;

/// Concurrent GetBundle clients.
pub const CLIENTS: usize = 64;

/// `requests` GetBundle requests, encoded, striding through `keys` (package, channel, CSV).
pub fn encoded_requests(keys: &[(String, String, String)], requests: usize) -> Arc<Vec<Bytes>> {
    Arc::new(
        (0..requests)
            .map(|i| {
                let (package, channel, name) = &keys[(i * 7919) % keys.len()];
                let request = api::GetBundleRequest {
                    pkg_name: package.clone(),
                    channel_name: channel.clone(),
                    csv_name: name.clone(),
                };
                Bytes::from(request.encode_to_vec())
            })
            .collect(),
    )
}

/// Sends every request from [`CLIENTS`] clients on `channel`; the answers' total size.
pub async fn send_all(channel: &Channel, bodies: Arc<Vec<Bytes>>) -> usize {
    let next = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..CLIENTS {
        let mut grpc =
            tonic::client::Grpc::new(channel.clone()).max_decoding_message_size(64 * 1024 * 1024);
        let (bodies, next, answered) = (bodies.clone(), next.clone(), answered.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(body) = bodies.get(i) else {
                    break;
                };
                grpc.ready().await.expect("ready");
                let answer = grpc
                    .unary(
                        tonic::Request::new(body.clone()),
                        PathAndQuery::from_static("/api.Registry/GetBundle"),
                        RawCodec,
                    )
                    .await
                    .expect("GetBundle");
                assert!(*answer.get_ref() > 0, "empty GetBundle answer");
                answered.fetch_add(*answer.get_ref(), Ordering::Relaxed);
            }
        }));
    }
    for worker in workers {
        worker.await.expect("worker");
    }
    answered.load(Ordering::Relaxed)
}

/// Sends pre-encoded request bytes and reads an answer as its length only.
#[derive(Clone, Copy, Default)]
struct RawCodec;

struct RawEncoder;
struct RawDecoder;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = usize;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }

    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

impl Encoder for RawEncoder {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = usize;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<usize>, Status> {
        let length = src.remaining();
        src.advance(length);
        Ok(Some(length))
    }
}
