//! Durability: every create acknowledged with 201 survives `kill -9` of `keelson up`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};

use crate::support::Keelson;

#[test]
fn every_acknowledged_create_survives_sigkill() {
    let mut k = Keelson::up();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    runtime.block_on(async {
        let api: Api<ConfigMap> =
            Api::namespaced(keelson_e2e::client(&k.data_dir()).await, "default");
        let writers: Vec<_> = (0..16)
            .map(|writer| {
                let api = api.clone();
                let acknowledged = acknowledged.clone();
                tokio::spawn(async move {
                    for i in 0.. {
                        let name = format!("w{writer}-{i}");
                        let cm = ConfigMap {
                            metadata: ObjectMeta { name: Some(name.clone()), ..Default::default() },
                            ..Default::default()
                        };
                        match api.create(&PostParams::default(), &cm).await {
                            Ok(_) => acknowledged.lock().unwrap().push(name),
                            Err(_) => return,
                        }
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        k.kill();
        for writer in writers {
            let _ = writer.await;
        }
    });
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.len() > 100, "the writers got going ({} creates)", acknowledged.len());

    k.start();
    runtime.block_on(async {
        let api: Api<ConfigMap> =
            Api::namespaced(keelson_e2e::client(&k.data_dir()).await, "default");
        let stored: std::collections::HashSet<String> = api
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        let lost: Vec<&String> = acknowledged.iter().filter(|n| !stored.contains(*n)).collect();
        assert!(
            lost.is_empty(),
            "{} of {} acknowledged creates were lost: {:?}",
            lost.len(),
            acknowledged.len(),
            &lost[..lost.len().min(5)]
        );
    });
}
