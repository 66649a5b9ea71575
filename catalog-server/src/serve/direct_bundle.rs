//! `GetBundle` and `GetBundleForChannel` answered with the kept answer's bytes as the
//! response body, not a copy of them.
//!
//! tonic encodes every message into a frame buffer of its own, so an answer kept encoded
//! (see [`super::index`]) was still copied once per request: 7.5 % of the server's CPU on the
//! corpus catalog, whose answers average tens of kilobytes. These two RPCs are what
//! packageserver and a resolution repeat, so they are routed here before tonic's service:
//! the request is read and decoded as tonic would, and the response body is the 5-byte gRPC
//! prefix, then the answer's `Bytes` (shared with the index, not copied; hyper writes it from
//! there), then the `grpc-status` trailer. Every other RPC, and any request that is not plain
//! gRPC (a compressed message), goes to the generated service unchanged.

use std::convert::Infallible;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, Limited, StreamBody};
use prost::Message;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::{BoxFuture, Service, tokio_stream};
use tonic::server::NamedService;

use super::api;
use super::encoded::registry_server::RegistryServer;
use super::index::{BundleAnswer, SHARE_FROM};
use super::registry::{self, RegistryService};
use super::state::CatalogHandle;

/// The largest request accepted, as tonic's default decoding limit.
const MAX_REQUEST_BYTES: usize = 4 << 20;

/// `api.Registry`: the two single-bundle RPCs served here, the rest by `inner`.
#[derive(Clone)]
pub struct RegistryRoutes {
    inner: RegistryServer<RegistryService>,
    catalog: CatalogHandle,
}

impl RegistryRoutes {
    /// The registry over `catalog`.
    pub fn new(catalog: CatalogHandle) -> Self {
        RegistryRoutes {
            inner: RegistryServer::new(RegistryService::new(catalog.clone())),
            catalog,
        }
    }
}

impl NamedService for RegistryRoutes {
    const NAME: &'static str = "api.Registry";
}

/// The RPCs answered here.
#[derive(Clone, Copy)]
enum Direct {
    GetBundle,
    GetBundleForChannel,
}

impl Service<http::Request<Body>> for RegistryRoutes {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Service::<http::Request<Body>>::poll_ready(&mut self.inner, cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let direct = match request.uri().path() {
            "/api.Registry/GetBundle" => Direct::GetBundle,
            "/api.Registry/GetBundleForChannel" => Direct::GetBundleForChannel,
            _ => return self.inner.call(request),
        };
        if !is_plain_grpc(request.headers()) {
            return self.inner.call(request);
        }
        let catalog = self.catalog.clone();
        Box::pin(async move {
            let answer = match read_message(request.into_body()).await {
                Ok(message) => answer(&catalog, direct, message),
                Err(status) => Err(status),
            };
            Ok(match answer {
                Ok(bundle) => respond(bundle),
                Err(status) => status.into_http(),
            })
        })
    }
}

/// Whether the request's message is sent uncompressed (tonic's service handles the rest,
/// with its own errors).
fn is_plain_grpc(headers: &http::HeaderMap) -> bool {
    headers
        .get("grpc-encoding")
        .is_none_or(|encoding| encoding == "identity")
}

/// The one message of a unary request, without its 5-byte prefix.
async fn read_message(body: Body) -> Result<Bytes, Status> {
    let bytes = Limited::new(body, MAX_REQUEST_BYTES + 5)
        .collect()
        .await
        .map_err(|e| match e.downcast::<http_body_util::LengthLimitError>() {
            Ok(_) => Status::resource_exhausted(format!(
                "request larger than the limit of {MAX_REQUEST_BYTES} bytes"
            )),
            Err(e) => Status::internal(format!("reading the request: {e}")),
        })?
        .to_bytes();
    message_of_frame(bytes)
}

/// The message of one gRPC length-prefixed frame (public for the request-decoding fuzz
/// target).
pub fn message_of_frame(mut frame: Bytes) -> Result<Bytes, Status> {
    if frame.len() < 5 {
        return Err(Status::internal("missing request message"));
    }
    if frame[0] != 0 {
        return Err(Status::internal(
            "protocol error: compressed message without grpc-encoding",
        ));
    }
    let length = u32::from_be_bytes([frame[1], frame[2], frame[3], frame[4]]) as usize;
    if frame.len() - 5 != length {
        return Err(Status::internal(format!(
            "protocol error: a request frame of {length} bytes carries {}",
            frame.len() - 5
        )));
    }
    Ok(frame.split_off(5))
}

fn decode<M: Message + Default>(message: Bytes) -> Result<M, Status> {
    M::decode(message)
        .map_err(|e| Status::internal(format!("failed to decode Protobuf message: {e}")))
}

fn answer(catalog: &CatalogHandle, direct: Direct, message: Bytes) -> Result<BundleAnswer, Status> {
    match direct {
        Direct::GetBundle => {
            let request: api::GetBundleRequest = decode(message)?;
            catalog.count_request("GetBundle");
            registry::get_bundle(&catalog.snapshot(), &request)
        }
        Direct::GetBundleForChannel => {
            let request: api::GetBundleInChannelRequest = decode(message)?;
            catalog.count_request("GetBundleForChannel");
            registry::get_bundle_for_channel(&catalog.snapshot(), &request)
        }
    }
}

/// A successful unary response whose one message is `answer`: its large pieces go out as
/// they are, the prefix and the glue between them as copies.
fn respond(answer: BundleAnswer) -> http::Response<Body> {
    let length = answer.len();
    let mut frames = Vec::with_capacity(4);
    let mut glue = Vec::with_capacity(5 + length.min(SHARE_FROM));
    glue.push(0);
    // Answers are made of the spill file's u32-sized blobs and a little glue.
    glue.extend_from_slice(&(length as u32).to_be_bytes());
    for piece in answer.into_pieces() {
        if piece.len() < SHARE_FROM {
            glue.extend_from_slice(&piece);
            continue;
        }
        if !glue.is_empty() {
            frames.push(Frame::data(Bytes::from(std::mem::take(&mut glue))));
        }
        frames.push(Frame::data(piece));
    }
    if !glue.is_empty() {
        frames.push(Frame::data(Bytes::from(glue)));
    }
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    frames.push(Frame::trailers(trailers));
    let body = StreamBody::new(tokio_stream::iter(
        frames.into_iter().map(Ok::<_, Infallible>),
    ));
    let mut response = http::Response::new(Body::new(body));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/grpc"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_one_uncompressed_frame() {
        let frame = Bytes::from_static(&[0, 0, 0, 0, 3, b'a', b'b', b'c']);
        assert_eq!(message_of_frame(frame).unwrap(), Bytes::from_static(b"abc"));
        assert_eq!(
            message_of_frame(Bytes::from_static(&[0, 0, 0, 0, 0])).unwrap(),
            ""
        );
        for bad in [
            &[][..],
            &[0, 0, 0][..],
            &[1, 0, 0, 0, 1, b'a'][..],
            &[0, 0, 0, 0, 2, b'a'][..],
            &[0, 0, 0, 0, 1, b'a', b'b'][..],
            &[0, 255, 255, 255, 255][..],
        ] {
            let status = message_of_frame(Bytes::from_static(bad)).unwrap_err();
            assert_eq!(status.code(), tonic::Code::Internal, "{bad:?}");
        }
    }

    #[test]
    fn only_uncompressed_requests_are_taken() {
        let mut headers = http::HeaderMap::new();
        assert!(is_plain_grpc(&headers));
        headers.insert("grpc-encoding", http::HeaderValue::from_static("identity"));
        assert!(is_plain_grpc(&headers));
        headers.insert("grpc-encoding", http::HeaderValue::from_static("gzip"));
        assert!(!is_plain_grpc(&headers));
    }

    #[tokio::test]
    async fn a_response_is_prefix_message_and_status() {
        let large = Bytes::from(vec![b'c'; SHARE_FROM]);
        let pieces = vec![
            Bytes::from_static(b"\x0a\x01"),
            large.clone(),
            Bytes::from_static(b"x"),
        ];
        let response = respond(BundleAnswer::from_pieces(pieces));
        assert_eq!(response.headers()["content-type"], "application/grpc");
        let mut body = response.into_body();
        let mut data = Vec::new();
        let mut trailers = None;
        while let Some(frame) = body.frame().await {
            let frame = frame.unwrap();
            match frame.into_data() {
                Ok(bytes) => data.push(bytes),
                Err(frame) => trailers = frame.into_trailers().ok(),
            }
        }
        assert_eq!(trailers.unwrap()["grpc-status"], "0");
        // The large piece is sent as it is, the rest copied around it.
        assert_eq!(data.len(), 3);
        assert_eq!(data[1].as_ptr(), large.as_ptr());
        let mut expected = vec![0, 0, 0, 0x20, 0x03, 0x0a, 0x01];
        expected.extend_from_slice(&large);
        expected.push(b'x');
        assert_eq!(data.concat(), expected);
    }
}
