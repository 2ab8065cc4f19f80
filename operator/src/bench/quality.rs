//! The quality probes of `--quality-repeats`: decode speed per workload class, which the
//! autotune quality guard compares with the baseline's.
//!
//! Aggregate throughput can rise while one kind of work gets slower (n-gram speculation speeds
//! up text that copies the prompt and can slow down text that does not), so each class is
//! measured on its own: `lookup` asks for the prompt back verbatim, `novel` for new prose.
//! Requests are streamed at temperature 0; a class's figure is the median over its repeats.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::BenchError;
use super::client::{Target, timed_request};

/// The workload classes, with what each asks for and its `max_tokens`.
pub fn classes() -> [(&'static str, String, u32); 2] {
    [("lookup", lookup_prompt(), 256), ("novel", NOVEL_PROMPT.to_owned(), 384)]
}

/// A prompt whose answer is 40 inventory lines copied back verbatim.
fn lookup_prompt() -> String {
    let mut prompt = String::from(
        "Repeat the following inventory list exactly, line by line, with no other text:\n",
    );
    for i in 1..=40u32 {
        let bin = char::from(b'A' + (i % 6) as u8);
        let _ =
            writeln!(prompt, "SKU-{i:03}: qty {}, bin {bin}{}, status ACTIVE", i * 7 % 50, i % 9);
    }
    prompt
}

/// A prompt whose answer shares little with it: an open-ended essay.
const NOVEL_PROMPT: &str = "Write an original reflective essay of about three hundred words on \
what a lighthouse keeper might learn about patience over a winter alone on a small island. \
Describe the weather, the routines of the light, the letters that arrive late, and how the \
keeper's sense of time changes. Do not use lists or headings; write continuous prose.";

/// Decode tokens per second of each class on `target`: the median of `repeats` requests each.
pub async fn probe(target: &Target, repeats: u32) -> Result<BTreeMap<String, f64>, BenchError> {
    let mut speeds = BTreeMap::new();
    for (class, prompt, max_tokens) in classes() {
        let probe = Target { prompt, max_tokens, temperature: Some(0.0), ..target.clone() };
        let mut samples = Vec::new();
        for _ in 0..repeats {
            let sample = timed_request(&probe).await?;
            if sample.decode_seconds > 0.0 {
                samples.push(sample.decode_tokens / sample.decode_seconds);
            }
        }
        let median = median(&mut samples).ok_or(BenchError::NothingMeasured)?;
        eprintln!("quality probe {class}: {median:.1} decode tokens/s");
        speeds.insert(class.to_owned(), median);
    }
    Ok(speeds)
}

/// The median of `values` (the mean of the middle two for an even count).
fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0]), Some(3.0));
        assert_eq!(median(&mut [5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&mut [4.0, 1.0]), Some(2.5));
    }

    #[test]
    fn lookup_prompt_lists_forty_skus() {
        let prompt = lookup_prompt();
        assert_eq!(prompt.matches(", status ACTIVE").count(), 40);
        assert!(prompt.contains("SKU-001: qty 7, bin B1, status ACTIVE"), "{prompt}");
        assert!(prompt.contains("SKU-040:"));
    }
}
