//! Pagination of lists: newest first, `limit` items a page, and an opaque cursor that stays
//! valid while items are added or removed.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;

/// Items a page holds when the client does not say.
pub const DEFAULT_LIMIT: usize = 50;
/// The most items a page holds.
pub const MAX_LIMIT: usize = 500;

/// Where a page starts and how long it is.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Items on the page, 1 to 500; 50 when absent.
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// One page of a list.
#[derive(Debug, Serialize, ToSchema)]
pub struct Page<T> {
    /// The items, newest first.
    pub items: Vec<T>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Where an item sorts: newer first, then by id, descending.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SortKey {
    /// Creation time, seconds since the epoch.
    pub created: i64,
    /// The item's id.
    pub id: String,
}

impl SortKey {
    fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("{}:{}", self.created, self.id))
    }

    fn decode(cursor: &str) -> Option<Self> {
        let text = String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).ok()?).ok()?;
        let (created, id) = text.split_once(':')?;
        Some(Self { created: created.parse().ok()?, id: id.to_owned() })
    }
}

/// The page of `items` that `query` asks for; `items` need not be sorted.
pub fn page<T>(mut items: Vec<(SortKey, T)>, query: &PageQuery) -> Result<Page<T>, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit must be between 1 and {MAX_LIMIT}, not {limit}"
        )));
    }
    let after = match &query.cursor {
        Some(cursor) => Some(SortKey::decode(cursor).ok_or_else(|| {
            ApiError::bad_request("cursor is not one this API gave; start again without it")
        })?),
        None => None,
    };
    if let Some(after) = &after {
        items.retain(|(key, _)| key < after);
    }
    items.sort_unstable_by(|(a, _), (b, _)| b.cmp(a));
    let more = items.len() > limit;
    items.truncate(limit);
    let next_cursor = more.then(|| items.last().map(|(key, _)| key.encode())).flatten();
    Ok(Page { items: items.into_iter().map(|(_, item)| item).collect(), next_cursor })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: i64) -> Vec<(SortKey, i64)> {
        (0..n).map(|i| (SortKey { created: i / 2, id: format!("r{i:03}") }, i)).collect()
    }

    fn query(limit: usize, cursor: Option<String>) -> PageQuery {
        PageQuery { limit: Some(limit), cursor }
    }

    #[test]
    fn pages_walk_every_item_once_newest_first() {
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let page = page(items(11), &query(4, cursor)).unwrap();
            seen.extend(page.items);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, (0..11).rev().collect::<Vec<_>>());
    }

    #[test]
    fn a_cursor_stays_valid_when_items_come_and_go() {
        let first = page(items(6), &query(2, None)).unwrap();
        assert_eq!(first.items, vec![5, 4]);
        let mut changed = items(8); // two newer items arrived
        changed.retain(|(_, i)| *i != 3); // and one on the next page went away
        let second = page(changed, &query(2, first.next_cursor)).unwrap();
        assert_eq!(second.items, vec![2, 1]);
    }

    #[test]
    fn bad_limits_and_cursors_are_refused() {
        assert!(page(items(1), &query(0, None)).is_err());
        assert!(page(items(1), &query(501, None)).is_err());
        assert!(page(items(1), &query(1, Some("not a cursor!".into()))).is_err());
        let default = page(items(60), &PageQuery::default()).unwrap();
        assert_eq!(default.items.len(), DEFAULT_LIMIT);
        assert!(page(items(3), &query(3, None)).unwrap().next_cursor.is_none());
    }
}
