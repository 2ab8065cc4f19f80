//! How the model-serving commands print: aligned tables (coloured on a terminal), JSON and YAML
//! of the resources, ages and throughput figures (pure, but for [`colour`] and [`print()`]).

use std::io::{IsTerminal, Write};

use anyhow::Context;
use serde::Serialize;
use serde_json::{Value, json};

/// How `list`, `status` and `cache status` print.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Columns and fields for people.
    #[default]
    Table,
    /// The resources as JSON (a `List` for the listing commands).
    Json,
    /// The resources as YAML (a `List` for the listing commands).
    Yaml,
}

/// The `-o` flag.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t)]
    pub output: Output,
}

/// A colour of a table cell or a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// As it is.
    Plain,
    /// Good: serving, ready, true.
    Green,
    /// On its way: pending, provisioning.
    Yellow,
    /// Wrong: failed, false.
    Red,
    /// Off on purpose: scaled to zero, idle.
    Dim,
}

impl Style {
    /// `text` in this style, with ANSI escapes when `colour`.
    pub fn paint(self, text: &str, colour: bool) -> String {
        let code = match self {
            Style::Plain => return text.to_owned(),
            Style::Green => "32",
            Style::Yellow => "33",
            Style::Red => "31",
            Style::Dim => "2",
        };
        if colour { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }

    /// The style of a phase or status word: `Running`, `Ready`, `True` green; `Pending`,
    /// `Provisioning`, `Unknown` yellow; `Failed`, `False` red; `Idle`, `Scaled(0)` dim.
    pub fn of(word: &str) -> Style {
        match word {
            "Running" | "Ready" | "True" | "Active" => Style::Green,
            "Pending" | "Provisioning" | "Unknown" | "Swapping" => Style::Yellow,
            "Failed" | "False" => Style::Red,
            "Idle" | "Scaled(0)" => Style::Dim,
            _ => Style::Plain,
        }
    }
}

/// One cell: its text and how it is coloured (alignment counts the text only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// What the cell says.
    pub text: String,
    /// Its colour.
    pub style: Style,
}

impl Cell {
    /// A cell without colour.
    pub fn plain(text: impl Into<String>) -> Cell {
        Cell { text: text.into(), style: Style::Plain }
    }

    /// A cell coloured by [`Style::of`] its text.
    pub fn status(text: impl Into<String>) -> Cell {
        let text = text.into();
        let style = Style::of(&text);
        Cell { text, style }
    }
}

/// Rows under a header, printed like `kubectl get`: columns padded, three spaces apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// One entry per row, as many cells as the header.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// A table with these columns and no rows.
    pub fn new(header: &[&str]) -> Table {
        Table { header: header.iter().map(|h| (*h).to_owned()).collect(), rows: Vec::new() }
    }

    /// The table as text, one line per row after the header; colours when `colour`.
    pub fn render(&self, colour: bool) -> String {
        let widths: Vec<usize> = (0..self.header.len())
            .map(|i| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .map(|c| c.text.chars().count())
                    .chain([self.header[i].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let header: Vec<Cell> = self.header.iter().map(Cell::plain).collect();
        let mut out = String::new();
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                let last = i + 1 == row.len();
                line.push_str(&cell.style.paint(&cell.text, colour));
                if !last {
                    let pad = widths[i] - cell.text.chars().count() + 3;
                    line.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Whether to colour what goes to stdout: only on a terminal, and not with `NO_COLOR` set.
pub fn colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Writes `text` to stdout.
pub fn print(text: &str) -> anyhow::Result<()> {
    std::io::stdout().lock().write_all(text.as_bytes()).context("writing to stdout")
}

/// A resource as a JSON value without `metadata.managedFields` (as `kubectl get -o` shows it).
pub fn object(resource: &impl Serialize) -> anyhow::Result<Value> {
    let mut value = serde_json::to_value(resource).context("serialising a resource")?;
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    Ok(value)
}

/// Resources as a `v1` `List`, as `kubectl get -o json` prints several.
pub fn list(items: &[impl Serialize]) -> anyhow::Result<Value> {
    let items = items.iter().map(object).collect::<anyhow::Result<Vec<_>>>()?;
    Ok(json!({ "apiVersion": "v1", "kind": "List", "items": items }))
}

/// `value` as JSON or YAML text (`Table` is not a serialisation: JSON then).
pub fn serialise(value: &Value, output: Output) -> anyhow::Result<String> {
    match output {
        Output::Yaml => serde_saphyr::to_string(value).context("serialising to YAML"),
        Output::Json | Output::Table => Ok(serde_json::to_string_pretty(value)? + "\n"),
    }
}

/// A tokens-per-second figure, `12.3/s`, or `-` without one.
pub fn throughput(tps: Option<f64>) -> String {
    tps.map_or_else(|| "-".to_owned(), crate::benchmark::figure)
}

/// How long ago `then` was, like kubectl's AGE: `45s`, `12m`, `5h`, `3d`.
pub fn age(then: jiff::Timestamp, now: jiff::Timestamp) -> String {
    let secs = now.duration_since(then).as_secs().max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 120 * 60 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// The age of an object from its `creationTimestamp`, `<unknown>` without one.
pub fn age_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.creation_timestamp
        .as_ref()
        .map_or_else(|| "<unknown>".to_owned(), |t| age(t.0, jiff::Timestamp::now()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_on_the_text_and_colour_only_when_asked() {
        let mut table = Table::new(&["NAME", "STATUS", "AGE"]);
        table.rows.push(vec![Cell::plain("qwen"), Cell::status("Running"), Cell::plain("5m")]);
        table.rows.push(vec![Cell::plain("a"), Cell::status("Failed"), Cell::plain("12h")]);
        assert_eq!(
            table.render(false),
            "NAME   STATUS    AGE\nqwen   Running   5m\na      Failed    12h\n"
        );
        let coloured = table.render(true);
        assert!(coloured.contains("\x1b[32mRunning\x1b[0m   5m"), "{coloured:?}");
        assert!(coloured.contains("\x1b[31mFailed\x1b[0m    12h"), "{coloured:?}");
    }

    #[test]
    fn styles_of_words() {
        assert_eq!(Style::of("Ready"), Style::Green);
        assert_eq!(Style::of("Failed"), Style::Red);
        assert_eq!(Style::of("Scaled(0)"), Style::Dim);
        assert_eq!(Style::of("Pending"), Style::Yellow);
        assert_eq!(Style::of("SharedPVC"), Style::Plain);
        assert_eq!(Style::Green.paint("x", false), "x");
    }

    #[test]
    fn ages_and_figures() {
        let now: jiff::Timestamp = "2025-01-10T00:00:00Z".parse().unwrap();
        let ago = |secs: i64| age(now - jiff::SignedDuration::from_secs(secs), now);
        assert_eq!(ago(5), "5s");
        assert_eq!(ago(119), "119s");
        assert_eq!(ago(600), "10m");
        assert_eq!(ago(5 * 3600), "5h");
        assert_eq!(ago(3 * 86400), "3d");
        assert_eq!(ago(-10), "0s");
        assert_eq!(throughput(Some(12.34)), "12.3/s");
        assert_eq!(throughput(None), "-");
    }

    #[test]
    fn lists_drop_managed_fields_and_serialise() {
        let items = [json!({"metadata": {"name": "a", "managedFields": [{}]}})];
        let value = list(&items).unwrap();
        assert_eq!(value["kind"], "List");
        assert_eq!(value["items"][0]["metadata"], json!({"name": "a"}));
        let yaml = serialise(&value, Output::Yaml).unwrap();
        assert!(yaml.contains("kind: List"), "{yaml}");
        let text = serialise(&value, Output::Json).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
    }
}
