//! `GET /metrics`: the API server's own figures as Prometheus text, as a monitoring system
//! scrapes a cluster's API server (allowed to `cluster-admin` and to the `system:monitoring`
//! group, as upstream allows it). Everything is read when scraped, nothing is counted on the
//! request path: the objects stored of each resource, named and labelled as upstream's
//! `apiserver_storage_objects`, and the store's revisions, writes, commits and compactions.

use std::collections::HashSet;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::ApiState;
use super::paths::resource_prefix;
use crate::storage::{Store, StoreCounts};

/// The content type of the Prometheus text the encoder writes.
pub(super) const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `apiserver_storage_objects`' label: `<resource>.<group>`, or `<resource>` in the core group.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabel {
    resource: String,
}

/// `GET /metrics`.
pub(crate) async fn metrics(State(state): State<ApiState>) -> Response {
    let served = state.registry.served();
    // One snapshot, so that every count is of the same revision.
    let snapshot = state.store.list("");
    // Stored resources are the watchable ones (reviews and resource metrics are not stored);
    // two views of one stored kind (core and `events.k8s.io` events) count once.
    let mut prefixes = HashSet::new();
    let stored = served
        .resources
        .iter()
        .filter(|info| info.verbs.iter().any(|verb| verb == "watch"))
        .map(|info| (info, resource_prefix(info)))
        .filter(|(_, prefix)| prefixes.insert(prefix.clone()))
        .map(|(info, prefix)| {
            let resource = match info.group.as_str() {
                "" => info.resource.clone(),
                group => [info.resource.as_str(), ".", group].concat(),
            };
            (resource, snapshot.scoped(&prefix).len())
        });
    let text = render(stored, &state.store);
    ([(header::CONTENT_TYPE, OPENMETRICS)], text).into_response()
}

/// The Prometheus text of the `stored` objects by resource and of `store`'s figures.
fn render(stored: impl Iterator<Item = (String, usize)>, store: &Store) -> String {
    let mut registry = Registry::default();
    let objects = Family::<ResourceLabel, Gauge>::default();
    for (resource, count) in stored {
        objects.get_or_create(&ResourceLabel { resource }).set(count as i64);
    }
    registry.register("apiserver_storage_objects", "Objects stored, by resource", objects);

    let gauge = |value: u64| {
        let gauge = Gauge::<i64>::default();
        gauge.set(i64::try_from(value).unwrap_or(i64::MAX));
        gauge
    };
    registry.register(
        "keelson_store_revision",
        "The store's latest revision, the resourceVersion of its last write",
        gauge(store.revision()),
    );
    registry.register(
        "keelson_store_oldest_revision",
        "The revision the store's history is compacted to: a watch from before it gets 410 Gone",
        gauge(store.oldest_revision()),
    );
    let StoreCounts { writes, transactions, compactions } = store.counts();
    let counter = |value: u64| {
        let counter = Counter::<u64>::default();
        counter.inc_by(value);
        counter
    };
    registry.register(
        "keelson_store_writes",
        "Writes the store has committed since it opened",
        counter(writes),
    );
    registry.register(
        "keelson_store_transactions",
        "SQLite transactions the store has committed writes in since it opened (writes that \
         arrive together share one)",
        counter(transactions),
    );
    registry.register(
        "keelson_store_compactions",
        "Compactions of the store's history since it opened",
        counter(compactions),
    );
    encode(&registry)
}

/// `registry`'s metrics as Prometheus text.
pub(super) fn encode(registry: &Registry) -> String {
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, registry);
    text
}
