//! `paths` of a group-version document: one path item per collection, object
//! and subresource, with upstream-style operations.

use serde_json::{Map, Value, json};

use crate::catalog::{ResourceInfo, Subresource};

use super::{META, ref_to, schema_name};

/// Content types accepted by PATCH (strategic merge only for built-ins).
pub(crate) fn patch_content_types(builtin: bool) -> Vec<&'static str> {
    let mut types = vec![
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    if builtin {
        types.push("application/strategic-merge-patch+json");
    }
    types
}

fn query(name: &str, type_: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": type_, "uniqueItems": true}})
}

fn path_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "description": description, "required": true, "schema": {"type": "string", "uniqueItems": true}})
}

fn pretty() -> Value {
    query("pretty", "string", "If 'true', then the output is pretty printed.")
}

fn dry_run() -> Value {
    query(
        "dryRun",
        "string",
        "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed",
    )
}

fn field_manager() -> Value {
    query(
        "fieldManager",
        "string",
        "fieldManager is a name associated with the actor or entity that is making these changes.",
    )
}

fn field_validation() -> Value {
    query(
        "fieldValidation",
        "string",
        "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: silently drops unknown fields. - Warn: sends a warning for each unknown field. - Strict: fails the request on unknown fields.",
    )
}

fn list_params() -> Vec<Value> {
    vec![
        query(
            "allowWatchBookmarks",
            "boolean",
            "allowWatchBookmarks requests watch events with type \"BOOKMARK\".",
        ),
        query(
            "continue",
            "string",
            "The continue option should be set when retrieving more results from the server.",
        ),
        query(
            "fieldSelector",
            "string",
            "A selector to restrict the list of returned objects by their fields.",
        ),
        query(
            "labelSelector",
            "string",
            "A selector to restrict the list of returned objects by their labels.",
        ),
        query(
            "limit",
            "integer",
            "limit is a maximum number of responses to return for a list call.",
        ),
        query(
            "resourceVersion",
            "string",
            "resourceVersion sets a constraint on what resource versions a request may be served from.",
        ),
        query(
            "resourceVersionMatch",
            "string",
            "resourceVersionMatch determines how resourceVersion is applied to list calls.",
        ),
        query(
            "sendInitialEvents",
            "boolean",
            "`sendInitialEvents=true` may be set together with `watch=true`.",
        ),
        query("timeoutSeconds", "integer", "Timeout for the list/watch call."),
        query(
            "watch",
            "boolean",
            "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
        ),
    ]
}

fn delete_params() -> Vec<Value> {
    vec![
        dry_run(),
        query(
            "gracePeriodSeconds",
            "integer",
            "The duration in seconds before the object should be deleted.",
        ),
        query("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy."),
        query(
            "propagationPolicy",
            "string",
            "Whether and how garbage collection will be performed: 'Orphan', 'Background' or 'Foreground'.",
        ),
    ]
}

fn json_content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema.clone()}, "application/yaml": {"schema": schema}})
}

fn responses(codes: &[&str], schema: &Value) -> Value {
    let mut map = Map::new();
    for code in codes {
        map.insert(
            (*code).into(),
            json!({"description": status_text(code), "content": json_content(schema.clone())}),
        );
    }
    map.insert("401".into(), json!({"description": "Unauthorized"}));
    Value::Object(map)
}

fn status_text(code: &str) -> &'static str {
    match code {
        "201" => "Created",
        "202" => "Accepted",
        _ => "OK",
    }
}

/// Upstream's operationId group part: `Core` for `""`, `.k8s.io` dropped,
/// camel-cased (`ServingKeelsonDev`).
fn group_camel(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    let group = group.strip_suffix(".k8s.io").unwrap_or(group);
    group
        .split(['.', '-'])
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

struct Ctx<'a> {
    info: &'a ResourceInfo,
    op_prefix: String,
    tag: String,
}

impl Ctx<'_> {
    fn op(
        &self,
        verb: &str,
        action: &str,
        suffix: &str,
        gvk: Value,
        parameters: Vec<Value>,
    ) -> Map<String, Value> {
        let scope = if self.info.namespaced && verb != "list_all" { "Namespaced" } else { "" };
        let (verb, scope) =
            if verb == "list_all" { ("list", "ForAllNamespaces") } else { (verb, scope) };
        let id = if scope == "ForAllNamespaces" {
            format!("{verb}{}{}{suffix}{scope}", self.op_prefix, self.info.kind)
        } else {
            format!("{verb}{}{scope}{}{suffix}", self.op_prefix, self.info.kind)
        };
        let mut op = Map::new();
        op.insert("tags".into(), json!([self.tag]));
        op.insert(
            "description".into(),
            json!(format!("{action} {} {}{suffix}", self.info.kind, self.info.resource)),
        );
        op.insert("operationId".into(), json!(id));
        op.insert("parameters".into(), Value::Array(parameters));
        op.insert("x-kubernetes-action".into(), json!(action));
        op.insert("x-kubernetes-group-version-kind".into(), gvk);
        op
    }
}

/// Adds the path items of `info` to `paths`.
pub(crate) fn add_paths(paths: &mut Map<String, Value>, info: &ResourceInfo) {
    let prefix = if info.group.is_empty() {
        format!("/api/{}", info.version)
    } else {
        format!("/apis/{}/{}", info.group, info.version)
    };
    let ctx = Ctx {
        info,
        op_prefix: format!("{}{}", group_camel(&info.group), capitalize(&info.version)),
        tag: format!("{}_{}", lower_first(&group_camel(&info.group)), info.version),
    };
    let gvk = json!({"group": info.group, "version": info.version, "kind": info.kind});
    let kind_ref = ref_to(&schema_name(info));
    let list_ref = ref_to(&format!("{}List", schema_name(info)));
    let status_ref = ref_to(&format!("{META}.Status"));
    let delete_body = json!({"content": {"application/json": {"schema": ref_to(&format!("{META}.DeleteOptions"))}}});
    let collection = if info.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}", info.resource)
    } else {
        format!("{prefix}/{}", info.resource)
    };
    let item = format!("{collection}/{{name}}");
    let mut path_params = vec![];
    if info.namespaced {
        path_params.push(path_param(
            "namespace",
            "object name and auth scope, such as for teams and projects",
        ));
    }

    // Collection: list, create, deletecollection.
    let mut list = ctx.op("list", "list", "", gvk.clone(), list_params());
    list.insert("responses".into(), responses(&["200"], &list_ref));
    let mut create = ctx.op(
        "create",
        "post",
        "",
        gvk.clone(),
        vec![dry_run(), field_manager(), field_validation()],
    );
    create.insert(
        "requestBody".into(),
        json!({"content": json_content(kind_ref.clone()), "required": true}),
    );
    create.insert("responses".into(), responses(&["200", "201", "202"], &kind_ref));
    let mut delete_collection = ctx.op("deletecollection", "deletecollection", "", gvk.clone(), {
        let mut p = list_params();
        p.extend(delete_params());
        p
    });
    delete_collection.insert("requestBody".into(), delete_body.clone());
    delete_collection.insert("responses".into(), responses(&["200"], &status_ref));
    let mut params = path_params.clone();
    params.push(pretty());
    paths.insert(
        collection.clone(),
        json!({"get": list, "post": create, "delete": delete_collection, "parameters": params}),
    );

    if info.namespaced {
        let mut list_all = ctx.op("list_all", "list", "", gvk.clone(), list_params());
        list_all.insert("responses".into(), responses(&["200"], &list_ref));
        paths.insert(
            format!("{prefix}/{}", info.resource),
            json!({"get": list_all, "parameters": [pretty()]}),
        );
    }

    // Object and subresources: get, put, patch (+ delete on the object).
    let mut item_params = vec![path_param("name", &format!("name of the {}", info.kind))];
    item_params.extend(path_params);
    item_params.push(pretty());
    let mut item_ops = |path: String,
                        suffix: &str,
                        gvk: &Value,
                        body_ref: &Value,
                        with_delete: bool| {
        let mut read = ctx.op("read", "get", suffix, gvk.clone(), vec![]);
        read.insert("responses".into(), responses(&["200"], body_ref));
        let mut replace = ctx.op(
            "replace",
            "put",
            suffix,
            gvk.clone(),
            vec![dry_run(), field_manager(), field_validation()],
        );
        replace.insert(
            "requestBody".into(),
            json!({"content": json_content(body_ref.clone()), "required": true}),
        );
        replace.insert("responses".into(), responses(&["200", "201"], body_ref));
        let patch_params = vec![
            dry_run(),
            field_manager(),
            field_validation(),
            query("force", "boolean", "Force is going to \"force\" Apply requests."),
        ];
        let mut patch = ctx.op("patch", "patch", suffix, gvk.clone(), patch_params);
        let content: Map<String, Value> = patch_content_types(info.builtin)
            .into_iter()
            .map(|t| (t.to_owned(), json!({"schema": ref_to(&format!("{META}.Patch"))})))
            .collect();
        patch.insert("requestBody".into(), json!({"content": content, "required": true}));
        patch.insert("responses".into(), responses(&["200", "201"], body_ref));
        let mut item =
            json!({"get": read, "put": replace, "patch": patch, "parameters": item_params.clone()});
        if with_delete {
            let mut delete = ctx.op("delete", "delete", suffix, gvk.clone(), delete_params());
            delete.insert("requestBody".into(), delete_body.clone());
            delete.insert("responses".into(), responses(&["200", "202"], &kind_ref));
            item["delete"] = Value::Object(delete);
        }
        paths.insert(path, item);
    };
    item_ops(item.clone(), "", &gvk, &kind_ref, true);
    for sub in &info.subresources {
        match sub {
            Subresource::Status => {
                item_ops(format!("{item}/status"), "Status", &gvk, &kind_ref, false)
            }
            Subresource::Approval => {
                item_ops(format!("{item}/approval"), "Approval", &gvk, &kind_ref, false)
            }
            Subresource::Scale { .. } => item_ops(
                format!("{item}/scale"),
                "Scale",
                &json!({"group": "autoscaling", "version": "v1", "kind": "Scale"}),
                &ref_to(super::SCALE),
                false,
            ),
            Subresource::Log
            | Subresource::Token
            | Subresource::Eviction
            | Subresource::Attach
            | Subresource::Exec
            | Subresource::PortForward
            | Subresource::Proxy(_)
            | Subresource::EphemeralContainers
            | Subresource::Finalize => {}
        }
    }
    if info.subresource("log").is_some() {
        let mut read = ctx.op(
            "read",
            "get",
            "Log",
            gvk.clone(),
            vec![
                query("container", "string", "The container for which to stream logs."),
                query("follow", "boolean", "Follow the log stream of the pod."),
                query("previous", "boolean", "Return previous terminated container logs."),
                query(
                    "sinceSeconds",
                    "integer",
                    "A relative time in seconds before the current time from which to show logs.",
                ),
                query(
                    "tailLines",
                    "integer",
                    "The number of lines from the end of the logs to show.",
                ),
                query(
                    "timestamps",
                    "boolean",
                    "Add an RFC3339 timestamp at the beginning of every line.",
                ),
            ],
        );
        read.insert(
            "responses".into(),
            json!({"200": {"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}}}),
        );
        paths.insert(format!("{item}/log"), json!({"get": read, "parameters": item_params}));
    }
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map(|c| c.to_lowercase().chain(chars).collect()).unwrap_or_default()
}
