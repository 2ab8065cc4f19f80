//! `document` from TXA and the OBX segments holding its content (MDM).

use serde::{Deserialize, Serialize};

use super::context::{Ctx, Seg};
use super::values::{Coded, Person, non_empty};

/// The clinical document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// TXA-12, the unique document number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// TXA-2, the document type code, e.g. `DS`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// TXA-17, the completion status, e.g. `AU`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// TXA-6 (origination date/time), else TXA-4 (activity date/time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// TXA-9, the first originator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<Person>,
    /// The OBX-5 values (as in `results[].result`) that are not empty, one per line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// `document` from the first TXA and every OBX.
pub(crate) fn build(ctx: &mut Ctx<'_, '_>) -> Option<Document> {
    let txa = ctx.first("TXA");
    let lines: Vec<String> = ctx.all("OBX").filter_map(|obx| obx.text(5)).collect();
    let mut created_at = None;
    for n in [6, 4] {
        if let Some(txa) = txa {
            created_at = ctx.datetime(txa, n, 1);
        }
        if created_at.is_some() {
            break;
        }
    }
    let code = |seg: Option<Seg<'_, '_>>, n: usize| {
        seg.and_then(|s| s.rep(n)).and_then(|rep| Coded::code_or_display(&rep))
    };
    non_empty(Document {
        id: txa.and_then(|s| s.value(12, 1)),
        kind: code(txa, 2),
        status: txa.and_then(|s| s.value(17, 1)),
        created_at,
        author: txa.and_then(|s| s.rep(9)).and_then(|rep| Person::from_xcn(&rep)),
        content: (!lines.is_empty()).then(|| lines.join("\n")),
    })
}
