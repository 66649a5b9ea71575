//! Counting the API requests that change something (every method but GET/HEAD/OPTIONS), as a
//! tower layer on the kube client: the operator exports the count as a metric, and the tests
//! use it to prove that a reconcile with nothing to do writes nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use http::Method;
use tower::{Layer, Service};

/// A shared counter of write requests; clone it to read the count elsewhere.
#[derive(Clone, Debug, Default)]
pub struct ApiWriteCounter(Arc<AtomicU64>);

impl ApiWriteCounter {
    /// Writes counted so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// A kube client for `config` whose write requests this counter counts.
    pub fn client(&self, config: kube::Config) -> kube::Result<kube::Client> {
        Ok(kube::client::ClientBuilder::try_from(config)?
            .with_layer(self)
            .build())
    }
}

impl<S> Layer<S> for ApiWriteCounter {
    type Service = CountWrites<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CountWrites {
            inner,
            counter: self.0.clone(),
        }
    }
}

/// The service [`ApiWriteCounter`] wraps the client's stack in.
#[derive(Clone, Debug)]
pub struct CountWrites<S> {
    inner: S,
    counter: Arc<AtomicU64>,
}

impl<S, B> Service<http::Request<B>> for CountWrites<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if !matches!(
            *request.method(),
            Method::GET | Method::HEAD | Method::OPTIONS
        ) {
            self.counter.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.call(request)
    }
}
