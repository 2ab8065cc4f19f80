//! The `format` checks the API server applies (go-openapi `strfmt`), for the
//! formats that are cheap to check. Unknown formats are accepted, as in Kubernetes.

use std::net::IpAddr;

use serde_json::{Number, Value};

/// Whether `value` satisfies `format`; `None` when the format does not apply to
/// this value (unknown format, or a string format on a non-string).
pub(crate) fn check(format: &str, value: &Value) -> Option<bool> {
    match value {
        Value::String(s) => check_string(format, s),
        Value::Number(n) => check_number(format, n),
        _ => None,
    }
}

fn check_string(format: &str, s: &str) -> Option<bool> {
    Some(match format {
        "date-time" | "datetime" => is_date_time(s),
        "date" => is_date(s),
        "byte" => is_base64(s),
        "uuid" => is_uuid(s, None),
        "uuid3" => is_uuid(s, Some(b'3')),
        "uuid4" => is_uuid(s, Some(b'4')),
        "uuid5" => is_uuid(s, Some(b'5')),
        "ipv4" => s.contains('.') && s.parse::<IpAddr>().is_ok(),
        "ipv6" => s.contains(':') && s.parse::<IpAddr>().is_ok(),
        "cidr" => is_cidr(s),
        _ => return None,
    })
}

fn check_number(format: &str, n: &Number) -> Option<bool> {
    let fits = |min: f64, max: f64| match (n.as_i64(), n.as_u64(), n.as_f64()) {
        (Some(i), _, _) => (min..=max).contains(&(i as f64)),
        (None, Some(_), _) => false, // above i64::MAX
        (None, None, Some(f)) => f.fract() == 0.0 && f >= min && f <= max,
        _ => false,
    };
    Some(match format {
        "int32" => fits(f64::from(i32::MIN), f64::from(i32::MAX)),
        "int64" => fits(i64::MIN as f64, i64::MAX as f64),
        _ => return None,
    })
}

fn digits(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `YYYY-MM-DD`, a real calendar date.
fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return false;
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(y), digits(m), digits(d)) else {
        return false;
    };
    let leap = (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339 date-time as strfmt accepts it: a date, `T` (any case), then
/// `hh:mm:ss`, optional fraction, and `Z` or `±hh:mm`.
fn is_date_time(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    let Some((date, time)) = lower.split_once('t') else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let (Some(hms), Some(mut rest)) = (time.get(..8), time.get(8..)) else {
        return false;
    };
    let hms: Vec<&str> = hms.split(':').collect();
    let [h, m, sec] = hms.as_slice() else {
        return false;
    };
    if h.len() != 2 || m.len() != 2 || sec.len() != 2 {
        return false;
    }
    let (Some(h), Some(m), Some(sec)) = (digits(h), digits(m), digits(sec)) else {
        return false;
    };
    if h > 23 || m > 59 || sec > 59 {
        return false;
    }
    if let Some(fraction) = rest.strip_prefix('.') {
        let n = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &fraction[n..];
    }
    if rest == "z" {
        return true;
    }
    let Some(offset) = rest.strip_prefix('+').or_else(|| rest.strip_prefix('-')) else {
        return false;
    };
    match offset.split_once(':') {
        Some((oh, om)) if oh.len() == 2 && om.len() == 2 => {
            digits(oh).is_some_and(|h| h <= 23) && digits(om).is_some_and(|m| m <= 59)
        }
        _ => false,
    }
}

/// Standard base64 with padding (Go's `base64.StdEncoding`, which skips newlines).
fn is_base64(s: &str) -> bool {
    let bytes: Vec<u8> = s.bytes().filter(|b| *b != b'\n' && *b != b'\r').collect();
    if !bytes.len().is_multiple_of(4) {
        return false;
    }
    let padding = bytes.iter().rev().take_while(|b| **b == b'=').count();
    if padding > 2 {
        return false;
    }
    bytes[..bytes.len() - padding]
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
}

fn is_uuid(s: &str, version: Option<u8>) -> bool {
    let b = s.as_bytes();
    let hex = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_hexdigit);
    let shape = match b.len() {
        36 => {
            [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
                && hex(0..8)
                && hex(9..13)
                && hex(14..18)
                && hex(19..23)
                && hex(24..36)
        }
        32 if version.is_none() => hex(0..32),
        _ => false,
    };
    let version_ok = version.is_none_or(|v| b.get(14) == Some(&v));
    let variant_ok =
        version.is_none() || matches!(b.get(19), Some(b'8' | b'9' | b'a' | b'b' | b'A' | b'B'));
    shape && version_ok && variant_ok
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, prefix)) = s.split_once('/') else {
        return false;
    };
    let Some(prefix) = digits(prefix) else {
        return false;
    };
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => prefix <= 32,
        Ok(IpAddr::V6(_)) => prefix <= 128,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_formats() {
        for ok in
            ["2024-02-29T10:00:00Z", "2024-01-01t23:59:59.123+02:00", "1999-12-31T00:00:00-05:30"]
        {
            assert_eq!(check("date-time", &json!(ok)), Some(true), "{ok}");
        }
        for bad in [
            "2023-02-29T10:00:00Z",
            "2024-01-01",
            "2024-01-01T24:00:00Z",
            "2024-01-01T10:00:00",
            "yesterday",
        ] {
            assert_eq!(check("date-time", &json!(bad)), Some(false), "{bad}");
        }
        assert_eq!(check("date", &json!("2024-12-31")), Some(true));
        assert_eq!(check("date", &json!("2024-13-01")), Some(false));
        assert_eq!(check("byte", &json!("aGVsbG8=")), Some(true));
        assert_eq!(check("byte", &json!("aGVsbG8")), Some(false));
        assert_eq!(check("byte", &json!("a*==")), Some(false));
        assert_eq!(check("uuid", &json!("123e4567-e89b-12d3-a456-426614174000")), Some(true));
        assert_eq!(check("uuid4", &json!("123e4567-e89b-12d3-a456-426614174000")), Some(false));
        assert_eq!(check("ipv4", &json!("10.0.0.1")), Some(true));
        assert_eq!(check("ipv4", &json!("::1")), Some(false));
        assert_eq!(check("cidr", &json!("10.0.0.0/33")), Some(false));
        assert_eq!(check("hostname", &json!("whatever")), None);
        assert_eq!(check("date-time", &json!(5)), None);
    }

    #[test]
    fn integer_formats() {
        assert_eq!(check("int32", &json!(2_147_483_647)), Some(true));
        assert_eq!(check("int32", &json!(2_147_483_648_i64)), Some(false));
        assert_eq!(check("int64", &json!(u64::MAX)), Some(false));
        assert_eq!(check("int64", &json!(-5)), Some(true));
    }
}
