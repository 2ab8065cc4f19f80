//! Kubernetes resource quantities (`500m`, `2`, `1.5Gi`, `1e3`) as exact integers of
//! milli-units, the unit the scheduler compares requests and allocatable in.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Quantities by resource name in milli-units; unreadable ones (the API server refuses them)
/// are left out.
pub fn milli_values(list: &BTreeMap<String, Quantity>) -> BTreeMap<String, i128> {
    list.iter().filter_map(|(k, v)| Some((k.clone(), parse(&v.0).ok()?))).collect()
}

/// Adds `more` into `total`, resource by resource.
pub fn add(total: &mut BTreeMap<String, i128>, more: &BTreeMap<String, i128>) {
    for (resource, value) in more {
        *total.entry(resource.clone()).or_default() += value;
    }
}

/// Why a quantity could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The text is empty.
    #[error("quantity is empty; expected a number such as 500m, 2 or 1.5Gi")]
    Empty,
    /// No digits where the number should be.
    #[error("quantity {0:?} does not start with a number; expected e.g. 500m, 2 or 1.5Gi")]
    NoNumber(String),
    /// What follows the number is not a known suffix.
    #[error(
        "quantity {quantity:?} has an unknown suffix {suffix:?}; expected one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e3"
    )]
    Suffix {
        /// The whole quantity.
        quantity: String,
        /// The part after the number.
        suffix: String,
    },
    /// The value does not fit in 128 bits of milli-units.
    #[error("quantity {0:?} is too large")]
    TooLarge(String),
}

/// The value of a quantity in milli-units: `"500m"` is 500, `"2"` is 2000, `"1Ki"` is
/// 1_024_000. A fraction of a milli-unit rounds away from zero, as a Kubernetes
/// `Quantity`'s `MilliValue` does (`"1n"` is 1, `"-1n"` is -1).
///
/// The syntax is Kubernetes': an optional sign, digits with an optional fraction (`1`, `1.5`,
/// `.5`, `1.`), then nothing, a decimal suffix (`n u m k M G T P E`), a binary suffix
/// (`Ki Mi Gi Ti Pi Ei`), or a decimal exponent (`e3`, `E-2`).
pub fn parse(q: &str) -> Result<i128, QuantityError> {
    if q.is_empty() {
        return Err(QuantityError::Empty);
    }
    let (negative, unsigned) = match q.as_bytes()[0] {
        b'-' => (true, &q[1..]),
        b'+' => (false, &q[1..]),
        _ => (false, q),
    };
    let integer_len = unsigned.bytes().take_while(u8::is_ascii_digit).count();
    let (integer, rest) = unsigned.split_at(integer_len);
    let (fraction, suffix) = match rest.strip_prefix('.') {
        Some(after_dot) => {
            let len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            after_dot.split_at(len)
        }
        None => ("", rest),
    };
    if integer.is_empty() && fraction.is_empty() {
        return Err(QuantityError::NoNumber(q.to_owned()));
    }
    let (power_of_two, power_of_ten) = interpret_suffix(suffix).ok_or_else(|| {
        QuantityError::Suffix { quantity: q.to_owned(), suffix: suffix.to_owned() }
    })?;
    let too_large = || QuantityError::TooLarge(q.to_owned());
    // The digits as one integer, trailing zeros moved into the exponent so that long
    // fractions like 0.50000000000000000000000000000000000000 still fit.
    let digits = format!("{integer}{fraction}");
    let significant = digits.trim_start_matches('0').trim_end_matches('0');
    if significant.is_empty() {
        return Ok(0);
    }
    let trailing_zeros = digits.len() - digits.trim_end_matches('0').len();
    let mantissa: i128 = significant.parse().map_err(|_| too_large())?;
    let scaled = mantissa.checked_mul(1i128 << power_of_two).ok_or_else(too_large)?;
    // value = scaled * 10^(exponent); milli-units add 3.
    let exponent = i64::from(power_of_ten) + 3 + trailing_zeros as i64 - fraction.len() as i64;
    let magnitude = if exponent >= 0 {
        let factor = u32::try_from(exponent).ok().and_then(|e| 10i128.checked_pow(e));
        factor.and_then(|f| scaled.checked_mul(f)).ok_or_else(too_large)?
    } else {
        divide_rounding_up(scaled, exponent.unsigned_abs())
    };
    Ok(if negative { -magnitude } else { magnitude })
}

/// `value / 10^digits`, rounded up (`value` is positive).
fn divide_rounding_up(value: i128, digits: u64) -> i128 {
    match u32::try_from(digits).ok().and_then(|d| 10i128.checked_pow(d)) {
        Some(divisor) => (value + divisor - 1) / divisor,
        // The divisor exceeds any i128, so the quotient is a positive fraction below one.
        None => 1,
    }
}

/// The powers of two and of ten a suffix multiplies by.
fn interpret_suffix(suffix: &str) -> Option<(u32, i32)> {
    let decimal = |e: i32| Some((0, e));
    let binary = |e: u32| Some((e, 0));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Anything beyond a few hundred overflows or rounds to one milli-unit anyway.
            let exponent: i64 = exponent.parse().ok()?;
            decimal(i32::try_from(exponent.clamp(-1000, 1000)).ok()?)
        }
    }
}

/// A byte count as a kubelet reports memory: `"<n>Ki"` (`16318412Ki`); a count that is not a
/// whole number of KiB is written in plain bytes, which is still exact.
pub fn format_bytes(bytes: u64) -> String {
    if bytes.is_multiple_of(1024) { format!("{}Ki", bytes / 1024) } else { bytes.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_milli_and_decimal_suffixes() {
        assert_eq!(parse("500m"), Ok(500));
        assert_eq!(parse("2"), Ok(2000));
        assert_eq!(parse("0.5"), Ok(500));
        assert_eq!(parse(".5"), Ok(500));
        assert_eq!(parse("1."), Ok(1000));
        assert_eq!(parse("+3"), Ok(3000));
        assert_eq!(parse("1k"), Ok(1_000_000));
        assert_eq!(parse("2M"), Ok(2_000_000_000));
        assert_eq!(parse("1G"), Ok(1_000_000_000_000));
        assert_eq!(parse("1E"), Ok(1_000_000_000_000_000_000_000));
        assert_eq!(parse("250000u"), Ok(250));
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("000.000"), Ok(0));
    }

    #[test]
    fn binary_suffixes_are_powers_of_1024() {
        assert_eq!(parse("1Gi"), Ok(1_073_741_824_000));
        assert_eq!(parse("1Ki"), Ok(1_024_000));
        assert_eq!(parse("1.5Ki"), Ok(1_536_000));
        assert_eq!(parse("64Mi"), Ok(64 * 1024 * 1024 * 1000));
        assert_eq!(parse("1Ei"), Ok((1i128 << 60) * 1000));
    }

    #[test]
    fn exponents() {
        assert_eq!(parse("1e3"), Ok(1_000_000));
        assert_eq!(parse("1E3"), Ok(1_000_000));
        assert_eq!(parse("12e-3"), Ok(12));
        assert_eq!(parse("1.5e+2"), Ok(150_000));
    }

    #[test]
    fn fractions_of_a_milli_unit_round_away_from_zero() {
        assert_eq!(parse("1n"), Ok(1));
        assert_eq!(parse("1001u"), Ok(2));
        assert_eq!(parse("0.0001"), Ok(1));
        assert_eq!(parse("-1n"), Ok(-1));
        assert_eq!(parse("-0.5"), Ok(-500));
        assert_eq!(parse("1e-400"), Ok(1));
        assert_eq!(parse("0.5000000000000000000000000000000000000000000000"), Ok(500));
    }

    #[test]
    fn malformed_quantities_say_what_is_wrong() {
        assert_eq!(parse(""), Err(QuantityError::Empty));
        assert!(matches!(parse("Gi"), Err(QuantityError::NoNumber(_))));
        assert!(matches!(parse("-"), Err(QuantityError::NoNumber(_))));
        assert!(matches!(parse(" 1"), Err(QuantityError::NoNumber(_))));
        for bad in ["1K", "1gi", "1 Gi", "1e", "1e1.5", "1.2.3", "1Gib", "--1", "1e+"] {
            let err = parse(bad).unwrap_err();
            assert!(
                matches!(err, QuantityError::Suffix { .. } | QuantityError::NoNumber(_)),
                "{bad}: {err}"
            );
        }
        let message = parse("8GB").unwrap_err().to_string();
        assert!(message.contains("\"GB\"") && message.contains("Gi"), "{message}");
        assert!(matches!(parse("1e40"), Err(QuantityError::TooLarge(_))));
        assert!(matches!(parse("1e999999999999"), Err(QuantityError::TooLarge(_))));
    }

    #[test]
    fn bytes_are_formatted_in_kibibytes() {
        assert_eq!(format_bytes(16_710_053_888), "16318412Ki");
        assert_eq!(format_bytes(0), "0Ki");
        assert_eq!(format_bytes(1000), "1000");
        assert_eq!(parse(&format_bytes(8 << 30)), Ok((8i128 << 30) * 1000));
    }
}
