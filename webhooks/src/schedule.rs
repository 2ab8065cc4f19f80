//! Schedules: the cron expression parses and fires, the time zone is a known IANA zone, and
//! parameter keys are C identifiers; and [`CronSchedule`], the parsed form the Schedule
//! controller reuses to compute when runs are due.
//!
//! Cron expressions are parsed by the `croner` crate with seconds and years disallowed: five
//! fields (minute hour day-of-month month day-of-week, with croner's `L`, `W`, `#` and `+`
//! extensions and `JAN`–`DEC`, `SUN`–`SAT` names), or one of the macros `@yearly`,
//! `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight` and `@hourly`.
//!
//! Time zones named in a spec come from jiff's bundled tz database, so the answer does not
//! depend on the host; [`CronSchedule::with_time_zone`] takes a zone the caller already has.
//!
//! Across daylight saving changes, croner follows the wall clock of the zone: a time skipped
//! when clocks go forward (02:30 in Europe/Berlin on 2026-03-29) fires once at the first
//! instant after the gap (03:00 CEST), and a time that happens twice when clocks go back fires
//! once, at its first (summer time) occurrence. Patterns that fire every minute or hour of the
//! wall clock rather than at a fixed time fire in both passes of a repeated hour.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use keelson_api_crds::workflows::ScheduleSpec;

use crate::{Problem, check_parameter_keys};

/// The macros a Schedule's `cron` may be instead of five fields.
pub const CRON_MACROS: &[&str] =
    &["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"];

/// A parsed cron expression in a time zone.
#[derive(Debug, Clone)]
pub struct CronSchedule {
    cron: Cron,
    time_zone: TimeZone,
}

impl CronSchedule {
    /// Parses a Schedule's `cron` and `timeZone`; the error is the problem with the first that is
    /// wrong, at `spec.cron` or `spec.timeZone`. A schedule that parses fires at least once
    /// every 400 years (expressions that match no date, such as `0 0 30 2 *`, are refused).
    pub fn parse(cron: &str, time_zone: &str) -> Result<Self, Problem> {
        Ok(Self { cron: parse_cron(cron)?, time_zone: parse_time_zone(time_zone)? })
    }

    /// Parses a cron expression read in a zone the caller already has, such as the host's
    /// local zone (`TimeZone::system()`), which may have no IANA name; the error is at
    /// `spec.cron`.
    pub fn with_time_zone(cron: &str, time_zone: TimeZone) -> Result<Self, Problem> {
        Ok(Self { cron: parse_cron(cron)?, time_zone })
    }

    /// The first time the schedule fires strictly after `after`; `None` if it never does again
    /// (past the year 5000, croner's search limit).
    pub fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let start = after.to_zoned(self.time_zone.clone());
        self.cron.find_next_occurrence(&start, false).ok().map(|next| next.timestamp())
    }

    /// The time zone the expression is read in.
    pub fn time_zone(&self) -> &TimeZone {
        &self.time_zone
    }
}

/// Problems with a Schedule's spec: `spec.cron` that does not parse or never fires,
/// `spec.timeZone` that is not a known IANA zone, parameter keys that are not C identifiers
/// (`spec.parameters.KEY`).
///
/// `old` is the stored spec on an update (only `suspend` may change): fields the update does
/// not change are not checked again, so a schedule stays suspendable even if a later release
/// refuses its expression or drops its zone.
pub fn check_schedule(spec: &ScheduleSpec, old: Option<&ScheduleSpec>) -> Vec<Problem> {
    let mut problems = Vec::new();
    if old.is_none_or(|old| old.cron != spec.cron) {
        problems.extend(parse_cron(&spec.cron).err());
    }
    if old.is_none_or(|old| old.time_zone != spec.time_zone) {
        problems.extend(parse_time_zone(&spec.time_zone).err());
    }
    problems.extend(check_parameter_keys("spec.parameters", spec.parameters.keys(), |key| {
        old.is_some_and(|old| old.parameters.contains_key(key))
    }));
    problems
}

/// Parses a five-field cron expression or macro; the error is at `spec.cron`.
fn parse_cron(expression: &str) -> Result<Cron, Problem> {
    let refuse = |message: String| Err(Problem::new("spec.cron", message));
    let trimmed = expression.trim();
    let pattern = if trimmed.starts_with('@') {
        let lower = trimmed.to_ascii_lowercase();
        if !CRON_MACROS.contains(&lower.as_str()) {
            return refuse(format!(
                "unknown cron macro \"{trimmed}\"; use five fields or one of {}",
                CRON_MACROS.join(", ")
            ));
        }
        // Vixie cron's @midnight, which croner does not know, is @daily.
        if lower == "@midnight" { "@daily".to_owned() } else { lower }
    } else {
        match trimmed.split_whitespace().count() {
            0 => return refuse("cron expression is empty".to_owned()),
            5 => trimmed.to_owned(),
            n @ (6 | 7) => {
                return refuse(format!(
                    "cron expression \"{trimmed}\" has {n} fields, but a schedule takes five \
                     (minute hour day-of-month month day-of-week): seconds and years are not \
                     supported"
                ));
            }
            n => {
                return refuse(format!(
                    "cron expression \"{trimmed}\" has {n} field{}, but a schedule takes five \
                     (minute hour day-of-month month day-of-week) or a macro such as @daily",
                    if n == 1 { "" } else { "s" }
                ));
            }
        }
    };
    let parser = CronParser::builder().seconds(Seconds::Disallowed).year(Year::Disallowed).build();
    let cron = match parser.parse(&pattern) {
        Ok(cron) => cron,
        Err(error) => {
            return refuse(format!("cron expression \"{trimmed}\" is not valid: {error}"));
        }
    };
    // Every pattern repeats within the 400-year Gregorian cycle, so one that does not fire
    // within croner's search from a fixed start never fires.
    let start = Timestamp::UNIX_EPOCH.to_zoned(TimeZone::UTC);
    if cron.find_next_occurrence(&start, false).is_err() {
        return refuse(format!("cron expression \"{trimmed}\" never fires: no date matches it"));
    }
    Ok(cron)
}

/// Looks up an IANA time zone in jiff's bundled database; the error is at `spec.timeZone`.
fn parse_time_zone(name: &str) -> Result<TimeZone, Problem> {
    jiff::tz::db().get(name).map_err(|_| {
        Problem::new(
            "spec.timeZone",
            format!("unknown time zone \"{name}\"; use an IANA name such as \"Europe/Berlin\" or \"UTC\""),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(cron: &str, time_zone: &str) -> ScheduleSpec {
        ScheduleSpec {
            flow_ref: "nightly".to_owned(),
            cron: cron.to_owned(),
            time_zone: time_zone.to_owned(),
            parameters: [("region".to_owned(), "eu".to_owned())].into(),
            ..Default::default()
        }
    }

    fn cron_problem(cron: &str) -> Option<String> {
        let problems = check_schedule(&spec(cron, "UTC"), None);
        assert!(problems.iter().all(|p| p.field == "spec.cron"), "{problems:?}");
        assert!(problems.len() <= 1, "{problems:?}");
        problems.into_iter().next().map(|p| p.message)
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn a_valid_schedule_has_no_problem() {
        assert_eq!(check_schedule(&spec("0 9 * * 1-5", "Europe/Berlin"), None), vec![]);
    }

    #[test]
    fn five_fields_and_macros_are_accepted() {
        for cron in [
            "* * * * *",
            "*/15 8-18 * * MON-FRI",
            "0 0 L * *",
            "0 12 * JAN,JUL 5#2",
            " 30 2 1 * * ",
            "@yearly",
            "@annually",
            "@monthly",
            "@weekly",
            "@daily",
            "@midnight",
            "@hourly",
            "@Daily",
        ] {
            assert_eq!(cron_problem(cron), None, "{cron}");
        }
    }

    #[test]
    fn seconds_and_years_are_refused_clearly() {
        assert_eq!(
            cron_problem("0 */5 * * * *").as_deref(),
            Some(
                "cron expression \"0 */5 * * * *\" has 6 fields, but a schedule takes five \
                 (minute hour day-of-month month day-of-week): seconds and years are not supported"
            )
        );
        assert!(cron_problem("0 0 12 * * ? 2030").unwrap().contains("has 7 fields"));
    }

    #[test]
    fn garbage_is_refused_with_croners_reason() {
        assert_eq!(
            cron_problem("every day").as_deref(),
            Some(
                "cron expression \"every day\" has 2 fields, but a schedule takes five (minute \
                 hour day-of-month month day-of-week) or a macro such as @daily"
            )
        );
        assert_eq!(cron_problem("   ").as_deref(), Some("cron expression is empty"));
        assert_eq!(
            cron_problem("@reboot").as_deref(),
            Some(
                "unknown cron macro \"@reboot\"; use five fields or one of @yearly, @annually, \
                 @monthly, @weekly, @daily, @midnight, @hourly"
            )
        );
        let message = cron_problem("61 * * * *").unwrap();
        assert!(message.starts_with("cron expression \"61 * * * *\" is not valid: "), "{message}");
        let message = cron_problem("a b c d e").unwrap();
        assert!(message.starts_with("cron expression \"a b c d e\" is not valid: "), "{message}");
        assert!(message.contains("illegal character"), "{message}");
    }

    #[test]
    fn expressions_that_never_fire_are_refused() {
        assert_eq!(
            cron_problem("0 0 30 2 *").as_deref(),
            Some("cron expression \"0 0 30 2 *\" never fires: no date matches it")
        );
        // 29 February does come, every four years.
        assert_eq!(cron_problem("0 0 29 2 *"), None);
    }

    #[test]
    fn time_zones_are_known_iana_names() {
        assert_eq!(
            check_schedule(&spec("@daily", "Mars/Olympus"), None),
            vec![Problem::new(
                "spec.timeZone",
                "unknown time zone \"Mars/Olympus\"; use an IANA name such as \"Europe/Berlin\" \
                 or \"UTC\""
            )]
        );
        for zone in ["Europe/Berlin", "UTC", "America/New_York", "Asia/Kolkata"] {
            assert_eq!(check_schedule(&spec("@daily", zone), None), vec![], "{zone}");
        }
    }

    #[test]
    fn parameter_keys_are_c_identifiers() {
        let mut spec = spec("@daily", "UTC");
        spec.parameters.insert("max-items".to_owned(), "3".to_owned());
        assert_eq!(
            check_schedule(&spec, None),
            vec![Problem::new(
                "spec.parameters.max-items",
                "parameter name \"max-items\" is not a C identifier: use letters, digits and \
                 underscores, not starting with a digit"
            )]
        );
    }

    #[test]
    fn every_problem_is_reported() {
        let mut spec = spec("0 0 0 * * *", "Nowhere");
        spec.parameters.insert("1".to_owned(), String::new());
        let fields: Vec<String> =
            check_schedule(&spec, None).into_iter().map(|p| p.field).collect();
        assert_eq!(fields, ["spec.cron", "spec.timeZone", "spec.parameters.1"]);
    }

    #[test]
    fn updates_that_only_suspend_are_not_checked_again() {
        let mut old = spec("0 0 0 * * *", "Nowhere");
        old.parameters.insert("1".to_owned(), String::new());
        let mut new = old.clone();
        new.suspend = true;
        assert_eq!(check_schedule(&new, Some(&old)), vec![]);
        new.time_zone = "Also/Nowhere".to_owned();
        assert_eq!(check_schedule(&new, Some(&old)).len(), 1);
    }

    #[test]
    fn parse_reports_the_first_problem() {
        assert_eq!(CronSchedule::parse("nope", "Nowhere").unwrap_err().field, "spec.cron");
        assert_eq!(CronSchedule::parse("@daily", "Nowhere").unwrap_err().field, "spec.timeZone");
        assert_eq!(
            CronSchedule::parse("@daily", "Europe/Berlin").unwrap().time_zone().iana_name(),
            Some("Europe/Berlin")
        );
    }

    #[test]
    fn with_time_zone_reads_the_expression_in_the_given_zone() {
        let tokyo = jiff::tz::db().get("Asia/Tokyo").unwrap();
        let schedule = CronSchedule::with_time_zone("0 9 * * *", tokyo).unwrap();
        // 09:00 JST is 00:00 UTC.
        assert_eq!(
            schedule.next_after(ts("2026-01-01T12:00:00Z")),
            Some(ts("2026-01-02T00:00:00Z"))
        );
        let fixed = TimeZone::fixed(jiff::tz::offset(-5));
        let schedule = CronSchedule::with_time_zone("0 9 * * *", fixed).unwrap();
        assert_eq!(
            schedule.next_after(ts("2026-01-01T12:00:00Z")),
            Some(ts("2026-01-01T14:00:00Z"))
        );
        let refused = CronSchedule::with_time_zone("61 * * * *", TimeZone::UTC).unwrap_err();
        assert_eq!(refused.field, "spec.cron");
    }

    #[test]
    fn next_after_on_weekdays_in_new_york() {
        let schedule = CronSchedule::parse("0 9 * * 1-5", "America/New_York").unwrap();
        // Friday 2026-01-09 15:00 UTC is 10:00 EST: next is Monday 09:00 EST.
        assert_eq!(
            schedule.next_after(ts("2026-01-09T15:00:00Z")),
            Some(ts("2026-01-12T14:00:00Z"))
        );
        // Just before 09:00 EDT on Wednesday 2026-07-15 (UTC-4).
        assert_eq!(
            schedule.next_after(ts("2026-07-15T12:59:59Z")),
            Some(ts("2026-07-15T13:00:00Z"))
        );
        // Strictly after: at the firing instant itself, the next day.
        assert_eq!(
            schedule.next_after(ts("2026-07-15T13:00:00Z")),
            Some(ts("2026-07-16T13:00:00Z"))
        );
    }

    #[test]
    fn next_after_across_the_spring_gap_in_berlin() {
        // On 2026-03-29 Berlin's clocks jump from 02:00 CET to 03:00 CEST: 02:30 does not exist.
        // croner fires once, at the first instant after the gap, 03:00 CEST (01:00 UTC).
        let schedule = CronSchedule::parse("30 2 * * *", "Europe/Berlin").unwrap();
        let mut at = ts("2026-03-28T00:00:00Z");
        let mut fired = Vec::new();
        for _ in 0..3 {
            at = schedule.next_after(at).unwrap();
            fired.push(at);
        }
        assert_eq!(
            fired,
            [
                ts("2026-03-28T01:30:00Z"), // 02:30 CET
                ts("2026-03-29T01:00:00Z"), // 03:00 CEST, right after the gap
                ts("2026-03-30T00:30:00Z"), // 02:30 CEST
            ]
        );
    }

    #[test]
    fn next_after_across_the_autumn_overlap_in_berlin() {
        // On 2026-10-25 Berlin's clocks go back from 03:00 CEST to 02:00 CET: 02:30 happens
        // twice. A fixed-time job fires once, at the first (CEST) occurrence.
        let schedule = CronSchedule::parse("30 2 * * *", "Europe/Berlin").unwrap();
        let first = schedule.next_after(ts("2026-10-24T12:00:00Z")).unwrap();
        assert_eq!(first, ts("2026-10-25T00:30:00Z"));
        assert_eq!(schedule.next_after(first), Some(ts("2026-10-26T01:30:00Z")));
    }
}
