//! Structural parse throughput over the public corpus, with criterion, and as ratios against
//! python-hl7 (PyPI `hl7`, timed by `benches/python_hl7_throughput.py` in the same run) and the
//! `hl7-parser` crate. Every parser gets the same inputs: each corpus message with CR segment
//! terminators and no byte order mark.
//!
//! Run: `cargo bench -p keelson-hl7v2 --bench parse` (python-hl7: `pip install hl7`).

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use keelson_hl7v2::Message;

#[path = "../tests/corpus_dir.rs"]
mod location;
use location::corpus_dir;

/// Every corpus message, normalised as described in the module doc.
fn corpus() -> Vec<String> {
    let mut paths: Vec<_> = std::fs::read_dir(corpus_dir())
        .expect("corpus")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "hl7"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).expect("UTF-8 corpus file");
            let text = text.trim_start_matches('\u{feff}');
            let lines: Vec<&str> =
                text.split(['\r', '\n']).filter(|line| !line.trim().is_empty()).collect();
            lines.join("\r") + "\r"
        })
        .collect()
}

/// Parses and visits every subcomponent: the whole structure, as the other parsers build it.
fn walk(message: &Message<'_>) -> usize {
    let mut leaves = 0;
    for segment in message.segments() {
        for field in segment.fields() {
            for repetition in field.repetitions() {
                for component in repetition.components() {
                    leaves += component.subcomponents().count();
                }
            }
        }
    }
    leaves
}

/// Bytes per second of `parse` over the corpus: the best of 7 passes of at least 200 ms.
fn throughput(corpus: &[String], parse: impl Fn(&str)) -> f64 {
    let bytes: usize = corpus.iter().map(String::len).sum();
    let mut best = 0f64;
    for _ in 0..7 {
        let started = Instant::now();
        let mut passes = 0;
        while started.elapsed() < Duration::from_millis(200) {
            for message in corpus {
                parse(message);
            }
            passes += 1;
        }
        best = best.max((bytes * passes) as f64 / started.elapsed().as_secs_f64());
    }
    best
}

fn python_hl7(corpus_bytes: usize) -> Option<f64> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/python_hl7_throughput.py");
    let output = Command::new("python3").arg(script).arg(corpus_dir()).output().ok()?;
    if !output.status.success() {
        eprintln!("python-hl7 not measured: {}", String::from_utf8_lossy(&output.stderr));
        return None;
    }
    let (bytes, rate): (usize, f64) = {
        let text = String::from_utf8_lossy(&output.stdout);
        let mut parts = text.split_whitespace();
        (parts.next()?.parse().ok()?, parts.next()?.parse().ok()?)
    };
    assert_eq!(bytes, corpus_bytes, "python-hl7 must parse the same bytes");
    Some(rate)
}

fn main() {
    let corpus = corpus();
    let bytes: usize = corpus.iter().map(String::len).sum();
    let ours = |m: &str| {
        black_box(Message::parse(m.as_bytes()).expect("corpus message parses"));
    };
    let ours_walked = |m: &str| {
        black_box(walk(&Message::parse(m.as_bytes()).expect("corpus message parses")));
    };
    let theirs = |m: &str| {
        black_box(hl7_parser::parse_message(m).expect("hl7-parser parses the corpus message"));
    };

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("corpus");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("keelson-hl7v2 parse", |b| b.iter(|| corpus.iter().for_each(|m| ours(m))));
    group.bench_function("keelson-hl7v2 parse + every subcomponent", |b| {
        b.iter(|| corpus.iter().for_each(|m| ours_walked(m)))
    });
    group.bench_function("hl7-parser 0.3 parse", |b| {
        b.iter(|| corpus.iter().for_each(|m| theirs(m)))
    });
    group.finish();

    let mb = |rate: f64| rate / 1e6;
    let (ours_rate, walked_rate, theirs_rate) =
        (throughput(&corpus, ours), throughput(&corpus, ours_walked), throughput(&corpus, theirs));
    let messages = |rate: f64| rate / bytes as f64 * corpus.len() as f64;
    println!("\n{} messages, {bytes} bytes, one core:", corpus.len());
    println!(
        "  keelson-hl7v2 parse                      {:>7.1} MB/s {:>9.0} messages/s",
        mb(ours_rate),
        messages(ours_rate)
    );
    println!(
        "  keelson-hl7v2 parse + every subcomponent {:>7.1} MB/s {:>9.0} messages/s",
        mb(walked_rate),
        messages(walked_rate)
    );
    println!(
        "  hl7-parser 0.3 parse                     {:>7.1} MB/s: keelson parse + walk is {:.1}x",
        mb(theirs_rate),
        walked_rate / theirs_rate
    );
    if let Some(python) = python_hl7(bytes) {
        println!(
            "  python-hl7 parse                         {:>7.2} MB/s: keelson parse + walk is {:.0}x",
            mb(python),
            walked_rate / python
        );
    }
}
