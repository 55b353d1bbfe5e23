//! [`FaultStore`]: an object store that wraps another and makes its requests
//! fail on a fixed-seed schedule, for the bucket's fault sweeps
//! (`fault_tests.rs`; docs/design.md, "Testing").
//!
//! A [`Plan`] names a [`Kind`] of fault, the requests it may hit, and when:
//! the `nth` such request, or each with a fixed chance drawn from a seeded
//! sequence. The kinds are what a real S3 endpoint does to a client:
//! a failed request (a 500, a reset connection), a 503 SlowDown, a request
//! that hangs past its deadline and then fails, added latency, and a PUT
//! whose bytes were stored but whose answer was lost.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

use crate::workload::SplitMix64;

/// The requests a fault can hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Request {
    /// A PUT of a whole object.
    Put,
    /// A GET (ranged or whole) or a HEAD.
    Get,
    /// A LIST (one page).
    List,
    /// A DELETE.
    Delete,
    /// A server-side copy.
    Copy,
    /// The start of a multipart upload.
    Multipart,
}

/// What a fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// The request fails at once.
    Error,
    /// The request fails as S3's `503 SlowDown`.
    SlowDown,
    /// The request hangs for [`Plan::delay`], then fails as timed out.
    Timeout,
    /// The request waits [`Plan::delay`], then runs.
    Latency,
    /// A PUT stores its bytes, then fails (the answer is lost); any other
    /// request fails at once.
    StoredThenFail,
    /// The request is refused as S3's `403 AccessDenied` (credentials
    /// that do not allow it).
    Forbidden,
}

/// When a fault strikes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum When {
    /// The request numbered `n` (from 0) among those the plan may hit.
    Nth(u64),
    /// Each request the plan may hit, with chance `per_1024`/1024, drawn
    /// from a sequence seeded with `seed`.
    Chance { per_1024: u64, seed: u64 },
}

/// One fault schedule.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub kind: Kind,
    /// The requests it may hit; empty: every request.
    pub requests: Vec<Request>,
    pub when: When,
    /// How long a [`Kind::Timeout`] hangs or a [`Kind::Latency`] waits.
    pub delay: Duration,
}

#[derive(Debug, Default)]
struct State {
    plan: Option<Plan>,
    rng: Option<SplitMix64>,
    /// Requests the plan may hit, counted since it was armed.
    eligible: u64,
    /// Requests seen since construction, by kind.
    seen: HashMap<Request, u64>,
    /// Faults injected since construction, by kind.
    injected: HashMap<Kind, u64>,
}

/// The schedule and its counts, shared by the store and the streams it
/// hands out.
#[derive(Clone, Debug, Default)]
struct Faults(Arc<Mutex<State>>);

impl Faults {
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts request `r` and decides its fault, with the plan's delay.
    fn decide(&self, r: Request) -> Option<(Kind, Duration)> {
        let mut s = self.state();
        *s.seen.entry(r).or_insert(0) += 1;
        let plan = s.plan.clone()?;
        if !plan.requests.is_empty() && !plan.requests.contains(&r) {
            return None;
        }
        let n = s.eligible;
        s.eligible += 1;
        let hit = match plan.when {
            When::Nth(k) => n == k,
            When::Chance { per_1024, .. } => {
                s.rng.as_mut().is_some_and(|g| g.below(1024) < per_1024)
            }
        };
        if !hit {
            return None;
        }
        *s.injected.entry(plan.kind).or_insert(0) += 1;
        Some((plan.kind, plan.delay))
    }

    /// Runs `op` (request `r` on `what`) through the fault it draws.
    async fn guard<T>(
        &self,
        r: Request,
        what: &Path,
        op: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let Some((kind, delay)) = self.decide(r) else {
            return op.await;
        };
        match kind {
            Kind::Latency => {
                tokio::time::sleep(delay).await;
                op.await
            }
            Kind::Timeout => {
                tokio::time::sleep(delay).await;
                Err(injected(format!(
                    "{r:?} {what}: timed out after {delay:?} (injected)"
                )))
            }
            Kind::SlowDown => Err(injected(format!(
                "{r:?} {what}: 503 SlowDown: Please reduce your request rate (injected)"
            ))),
            Kind::StoredThenFail if r == Request::Put => {
                op.await?;
                Err(injected(format!(
                    "{r:?} {what}: connection reset after the object was stored (injected)"
                )))
            }
            Kind::Forbidden => Err(object_store::Error::PermissionDenied {
                path: what.to_string(),
                source: format!("{r:?} {what}: 403 AccessDenied (injected)").into(),
            }),
            Kind::Error | Kind::StoredThenFail => Err(injected(format!(
                "{r:?} {what}: 500 InternalError (injected)"
            ))),
        }
    }
}

/// An object store that fails on command; see the module docs.
#[derive(Debug)]
pub(crate) struct FaultStore {
    inner: Arc<dyn ObjectStore>,
    faults: Faults,
}

impl fmt::Display for FaultStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultStore({})", self.inner)
    }
}

fn injected(what: String) -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultStore",
        source: what.into(),
    }
}

impl FaultStore {
    pub(crate) fn new(inner: Arc<dyn ObjectStore>) -> FaultStore {
        FaultStore {
            inner,
            faults: Faults::default(),
        }
    }

    /// Starts failing requests as `plan` says.
    pub(crate) fn arm(&self, plan: Plan) {
        let mut s = self.faults.state();
        s.rng = match plan.when {
            When::Chance { seed, .. } => Some(SplitMix64::new(seed)),
            When::Nth(_) => None,
        };
        s.eligible = 0;
        s.plan = Some(plan);
    }

    /// Stops failing requests.
    pub(crate) fn disarm(&self) {
        self.faults.state().plan = None;
    }

    /// Faults injected so far.
    pub(crate) fn injected(&self) -> u64 {
        self.faults.state().injected.values().sum()
    }

    /// Requests of kind `r` seen so far.
    pub(crate) fn seen(&self, r: Request) -> u64 {
        self.faults.state().seen.get(&r).copied().unwrap_or(0)
    }
}

#[async_trait]
impl ObjectStore for FaultStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.faults
            .guard(
                Request::Put,
                location,
                self.inner.put_opts(location, payload, opts),
            )
            .await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.faults
            .guard(
                Request::Multipart,
                location,
                self.inner.put_multipart_opts(location, opts),
            )
            .await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.faults
            .guard(
                Request::Get,
                location,
                self.inner.get_opts(location, options),
            )
            .await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.faults
            .guard(
                Request::Get,
                location,
                self.inner.get_ranges(location, ranges),
            )
            .await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        // Each location is one DELETE, its fault decided as it comes.
        let (inner, faults) = (self.inner.clone(), self.faults.clone());
        locations
            .then(move |loc| {
                let (inner, faults) = (inner.clone(), faults.clone());
                async move {
                    let loc = loc?;
                    let one = futures_util::stream::once(std::future::ready(Ok(loc.clone())));
                    let delete = async {
                        match inner.delete_stream(one.boxed()).next().await {
                            Some(r) => r,
                            None => Ok(loc.clone()),
                        }
                    };
                    faults.guard(Request::Delete, &loc, delete).await
                }
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let root = Path::default();
        self.faults
            .guard(
                Request::List,
                prefix.unwrap_or(&root),
                self.inner.list_with_delimiter(prefix),
            )
            .await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.faults
            .guard(Request::Copy, from, self.inner.copy_opts(from, to, options))
            .await
    }
}
