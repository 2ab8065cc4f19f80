//! Watch-fed caches of the resources the API reads, with read-your-writes: a handler that
//! wrote an object waits until the cache has seen that write before it answers, so the
//! client's next read finds it.

use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

/// How long a handler waits for the cache to see its own write before answering anyway.
const READ_YOUR_WRITES: Duration = Duration::from_secs(5);

/// A change a cache saw.
pub enum Change<'a, K> {
    /// Created or modified (or listed).
    Applied(&'a K),
    /// Deleted.
    Deleted(&'a K),
}

/// A watch-fed cache of one kind in one namespace.
pub struct Cache<K: Resource<DynamicType = ()> + 'static> {
    store: Store<K>,
    /// Bumped on every change the watch delivers.
    changes: watch::Receiver<u64>,
    name: &'static str,
    namespace: String,
    /// The watch, stopped when the last clone of the cache goes.
    watch: Arc<Watch>,
}

/// Stops a cache's watch when dropped.
struct Watch(tokio::task::AbortHandle);

impl Drop for Watch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<K: Resource<DynamicType = ()> + 'static> Clone for Cache<K> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            changes: self.changes.clone(),
            name: self.name,
            namespace: self.namespace.clone(),
            watch: self.watch.clone(),
        }
    }
}

impl<K> Cache<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync,
{
    /// Starts watching `namespace` (with `config`'s selectors); the cache fills in the
    /// background.
    pub fn start(
        name: &'static str,
        client: kube::Client,
        namespace: &str,
        config: watcher::Config,
    ) -> Self
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        Self::start_observed(name, client, namespace, config, |_| {})
    }

    /// Like [`Cache::start`], and tells `observe` about every change once the cache has it.
    pub fn start_observed(
        name: &'static str,
        client: kube::Client,
        namespace: &str,
        config: watcher::Config,
        observe: impl Fn(Change<'_, K>) + Send + 'static,
    ) -> Self
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        let api: Api<K> = Api::namespaced(client, namespace);
        let (store, writer) = reflector::store();
        let (bump, changes) = watch::channel(0u64);
        let stream =
            watcher(api, config).default_backoff().reflect(writer).for_each(move |event| {
                match &event {
                    Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => {
                        observe(Change::Applied(object));
                    }
                    Ok(watcher::Event::Delete(object)) => observe(Change::Deleted(object)),
                    Ok(watcher::Event::Init | watcher::Event::InitDone) => {}
                    Err(error) => tracing::debug!(cache = name, %error, "watch failed; retrying"),
                }
                bump.send_modify(|n| *n += 1);
                futures::future::ready(())
            });
        let watch = Arc::new(Watch(tokio::spawn(stream).abort_handle()));
        Self { store, changes, name, namespace: namespace.to_owned(), watch }
    }

    /// What this cache holds, e.g. `runs`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether the first list has arrived.
    pub fn is_ready(&self) -> bool {
        self.store.wait_until_ready().now_or_never().is_some_and(|ready| ready.is_ok())
    }

    /// The object named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.store.get(&reflector::ObjectRef::new(name).within(&self.namespace))
    }

    /// Every object.
    pub fn all(&self) -> Vec<Arc<K>> {
        self.store.state()
    }

    /// Waits until the cache holds `written` (its resourceVersion or a later one).
    pub async fn wait_for(&self, written: &K) {
        let name = written.name_any();
        let version = written.resource_version().unwrap_or_default();
        self.wait_until(READ_YOUR_WRITES, |cache| {
            cache
                .get(&name)
                .is_some_and(|object| same_or_later(object.resource_version().as_deref(), &version))
        })
        .await;
    }

    /// Waits until the cache no longer holds `name`.
    pub async fn wait_gone(&self, name: &str) {
        self.wait_until(READ_YOUR_WRITES, |cache| cache.get(name).is_none()).await;
    }

    /// Waits until `done` holds for the cache, at most `within`.
    pub async fn wait_until(&self, within: Duration, done: impl Fn(&Self) -> bool) {
        let mut changes = self.changes.clone();
        let wait = async {
            while !done(self) {
                if changes.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(within, wait).await.is_err() {
            tracing::debug!(cache = self.name, "the cache did not change as awaited in time");
        }
    }
}

/// Whether `seen` is `written` or later. resourceVersions are opaque to clients, but every
/// Kubernetes storage (etcd, and Keelson's revision log) issues increasing integers; when they
/// do not parse, only equality counts.
fn same_or_later(seen: Option<&str>, written: &str) -> bool {
    let Some(seen) = seen else { return false };
    match (seen.parse::<u64>(), written.parse::<u64>()) {
        (Ok(seen), Ok(written)) => seen >= written,
        _ => seen == written,
    }
}

#[cfg(test)]
mod tests {
    use super::same_or_later;

    #[test]
    fn resource_versions_compare_as_numbers_when_they_are() {
        assert!(same_or_later(Some("10"), "9"));
        assert!(same_or_later(Some("10"), "10"));
        assert!(!same_or_later(Some("9"), "10"));
        assert!(same_or_later(Some("abc"), "abc"));
        assert!(!same_or_later(Some("abc"), "abd"));
        assert!(!same_or_later(None, "1"));
    }
}
