//! HL7 date/time values (DTM, and the first component of TS) as ISO 8601 / RFC 3339 text.
//!
//! Grammar: `YYYY[MM[DD[HH[MM[SS[.S[S[S[S]]]]]]]]][+/-ZZZZ]`, surrounding whitespace ignored.
//! The calendar and clock are checked with `jiff` (no 30 February, no hour 24), the offset
//! must be at most 14 hours with minutes below 60, and the year at least 1.
//!
//! Output, by precision:
//! - year `YYYY`, month `YYYY-MM`, day `YYYY-MM-DD` (an offset on a date is dropped: a
//!   calendar date has no instant);
//! - hour, minute or second: RFC 3339 `YYYY-MM-DDTHH:MM:SS[.fff]` followed by the offset as
//!   `+HH:MM` when the value gives one, and by `Z` when it does not. HL7 leaves a value
//!   without offset in the sender's local time, which this crate cannot know; it is read
//!   as UTC so that every timestamp is an unambiguous RFC 3339 instant (the choice of the
//!   shared event shape). Missing minutes and seconds are zero.
//!
//! ```
//! use keelson_hl7v2::dtm_to_iso;
//!
//! assert_eq!(dtm_to_iso("20240101120000").unwrap(), "2024-01-01T12:00:00Z");
//! assert_eq!(dtm_to_iso("198808181126+0215").unwrap(), "1988-08-18T11:26:00+02:15");
//! assert_eq!(dtm_to_iso("20210817151943.4-0500").unwrap(), "2021-08-17T15:19:43.4-05:00");
//! assert_eq!(dtm_to_iso("19800315").unwrap(), "1980-03-15");
//! assert!(dtm_to_iso("20240230").is_err());
//! ```

use std::fmt;

use jiff::civil::{Date, DateTime, Time};
use thiserror::Error;

/// How much of a date/time a value gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Precision {
    /// `YYYY`.
    Year,
    /// `YYYYMM`.
    Month,
    /// `YYYYMMDD`.
    Day,
    /// `YYYYMMDDHH`.
    Hour,
    /// `YYYYMMDDHHMM`.
    Minute,
    /// `YYYYMMDDHHMMSS`, with or without a fraction.
    Second,
}

/// Why a value is not an HL7 DTM; never quotes the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("not an HL7 date/time: {reason}")]
pub struct DtmError {
    /// What is wrong.
    pub reason: &'static str,
}

/// A parsed HL7 date/time: civil date and time, precision and optional UTC offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dtm {
    datetime: DateTime,
    precision: Precision,
    offset_minutes: Option<i16>,
}

impl Dtm {
    /// The civil date and time (missing parts are the first month, day, or zero).
    #[must_use]
    pub fn datetime(&self) -> DateTime {
        self.datetime
    }

    /// How much the value gave.
    #[must_use]
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The offset from UTC in minutes, when the value gives one.
    #[must_use]
    pub fn offset_minutes(&self) -> Option<i16> {
        self.offset_minutes
    }

    /// ISO text as described in the module docs.
    #[must_use]
    pub fn to_iso(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Dtm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let date = self.datetime.date();
        match self.precision {
            Precision::Year => write!(f, "{:04}", date.year()),
            Precision::Month => write!(f, "{:04}-{:02}", date.year(), date.month()),
            Precision::Day => write!(f, "{date}"),
            Precision::Hour | Precision::Minute | Precision::Second => {
                write!(f, "{}", self.datetime)?;
                match self.offset_minutes {
                    None => f.write_str("Z"),
                    Some(minutes) => {
                        let sign = if minutes < 0 { '-' } else { '+' };
                        let minutes = minutes.unsigned_abs();
                        write!(f, "{sign}{:02}:{:02}", minutes / 60, minutes % 60)
                    }
                }
            }
        }
    }
}

fn error(reason: &'static str) -> DtmError {
    DtmError { reason }
}

/// Parses an HL7 DTM (see the module docs).
///
/// # Errors
/// [`DtmError`] saying which rule the value breaks.
pub fn parse_dtm(text: &str) -> Result<Dtm, DtmError> {
    let text = text.trim();
    let (main, offset) = match text.find(['+', '-']) {
        Some(at) => {
            let (main, offset) = text.split_at_checked(at).ok_or_else(|| error("bad offset"))?;
            (main, Some(offset))
        }
        None => (text, None),
    };
    let (digits, fraction) = match main.split_once('.') {
        Some((digits, fraction)) => (digits, Some(fraction)),
        None => (main, None),
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(error("only digits may precede the fraction and offset"));
    }
    let precision = match digits.len() {
        4 => Precision::Year,
        6 => Precision::Month,
        8 => Precision::Day,
        10 => Precision::Hour,
        12 => Precision::Minute,
        14 => Precision::Second,
        _ => return Err(error("expected 4, 6, 8, 10, 12 or 14 digits")),
    };
    let part = |from: usize, len: usize, default: i32| -> i32 {
        digits.get(from..from + len).and_then(|d| d.parse().ok()).unwrap_or(default)
    };
    let year = part(0, 4, 0);
    if year < 1 {
        return Err(error("year 0000"));
    }
    let nanos = match fraction {
        None => 0,
        Some(_) if precision != Precision::Second => {
            return Err(error("a fraction needs seconds"));
        }
        Some(fraction) => fraction_nanos(fraction)?,
    };
    let date = Date::new(
        i16::try_from(year).map_err(|_| error("year out of range"))?,
        i8::try_from(part(4, 2, 1)).map_err(|_| error("month out of range"))?,
        i8::try_from(part(6, 2, 1)).map_err(|_| error("day out of range"))?,
    )
    .map_err(|_| error("no such calendar date"))?;
    let time = Time::new(
        i8::try_from(part(8, 2, 0)).map_err(|_| error("hour out of range"))?,
        i8::try_from(part(10, 2, 0)).map_err(|_| error("minute out of range"))?,
        i8::try_from(part(12, 2, 0)).map_err(|_| error("second out of range"))?,
        nanos,
    )
    .map_err(|_| error("no such time of day"))?;
    let offset_minutes = offset.map(parse_offset).transpose()?;
    Ok(Dtm { datetime: DateTime::from_parts(date, time), precision, offset_minutes })
}

/// Parses and formats in one step: `parse_dtm(text)?.to_iso()`.
///
/// # Errors
/// [`DtmError`] when the value is not an HL7 DTM.
pub fn dtm_to_iso(text: &str) -> Result<String, DtmError> {
    parse_dtm(text).map(|dtm| dtm.to_iso())
}

/// One to four fraction digits as nanoseconds.
fn fraction_nanos(fraction: &str) -> Result<i32, DtmError> {
    if fraction.is_empty() || fraction.len() > 4 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return Err(error("the fraction of a second takes 1 to 4 digits"));
    }
    let mut nanos: i32 = 0;
    for (i, b) in fraction.bytes().enumerate() {
        let scale = [100_000_000, 10_000_000, 1_000_000, 100_000].get(i).copied().unwrap_or(0);
        nanos += i32::from(b - b'0') * scale;
    }
    Ok(nanos)
}

/// `+HHMM` or `-HHMM` as signed minutes.
fn parse_offset(offset: &str) -> Result<i16, DtmError> {
    let bad = || error("the offset must be +HHMM or -HHMM, at most 14 hours");
    let (sign, digits) = offset.split_at_checked(1).ok_or_else(bad)?;
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let hours: i16 = digits.get(..2).and_then(|d| d.parse().ok()).ok_or_else(bad)?;
    let minutes: i16 = digits.get(2..).and_then(|d| d.parse().ok()).ok_or_else(bad)?;
    if minutes >= 60 || hours * 60 + minutes > 14 * 60 {
        return Err(bad());
    }
    let total = hours * 60 + minutes;
    Ok(if sign == "-" { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_precision() {
        let cases = [
            ("2024", "2024"),
            ("202402", "2024-02"),
            ("20240229", "2024-02-29"),
            ("20240229+0100", "2024-02-29"),
            ("2024022913", "2024-02-29T13:00:00Z"),
            ("202402291305", "2024-02-29T13:05:00Z"),
            ("20240229130559", "2024-02-29T13:05:59Z"),
            ("20240229130559.1234", "2024-02-29T13:05:59.1234Z"),
            ("20240229130559.5+0530", "2024-02-29T13:05:59.5+05:30"),
            ("202402291305-0000", "2024-02-29T13:05:00+00:00"),
            ("198908181126+0215", "1989-08-18T11:26:00+02:15"),
            (" 20150202 ", "2015-02-02"),
            ("0001", "0001"),
        ];
        for (input, expected) in cases {
            assert_eq!(dtm_to_iso(input).as_deref(), Ok(expected), "{input}");
        }
        let dtm = parse_dtm("20240229130559.5-0530").unwrap();
        assert_eq!(dtm.precision(), Precision::Second);
        assert_eq!(dtm.offset_minutes(), Some(-330));
    }

    #[test]
    fn rejects_what_is_not_a_dtm() {
        for input in [
            "",
            "2024-01-01",
            "20240230",
            "20241301",
            "2024010125",
            "202401011260",
            "20240101120060",
            "0000",
            "202",
            "2024010112000",
            "20240101.5",
            "20240101120000.",
            "20240101120000.12345",
            "20240101120000+01",
            "20240101120000+1500",
            "20240101120000+0160",
            "20240101120000+01a0",
            "2024+",
            "+0100",
            "2024é",
            "1e10",
            "04/24/2007",
        ] {
            assert!(parse_dtm(input).is_err(), "{input:?}");
        }
    }
}
