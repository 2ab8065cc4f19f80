//! The `log` action: one tracing line with the event's id and type and where it was routed.
//! Never the event body or any of its fields: clinical data must not reach logs.

use crate::engine::definition::{LogAction, LogLevel};

/// Where the line comes from.
pub(crate) struct LogContext<'a> {
    pub workflow: &'a str,
    pub route: &'a str,
    pub action: &'a str,
    pub event_id: Option<&'a str>,
    pub event_type: Option<&'a str>,
}

/// Writes the line at the action's level.
pub(crate) fn emit(action: &LogAction, context: &LogContext<'_>) {
    let message = action.message.as_deref().unwrap_or("workflow event routed");
    let LogContext { workflow, route, action: id, event_id, event_type } = *context;
    let event_id = event_id.unwrap_or("");
    let event_type = event_type.unwrap_or("");
    macro_rules! line {
        ($level:expr) => {
            tracing::event!(
                target: "keelson_integration::workflow",
                $level,
                workflow,
                route,
                action = id,
                event_id,
                event_type,
                "{message}"
            )
        };
    }
    match action.level {
        LogLevel::Trace => line!(tracing::Level::TRACE),
        LogLevel::Debug => line!(tracing::Level::DEBUG),
        LogLevel::Info => line!(tracing::Level::INFO),
        LogLevel::Warn => line!(tracing::Level::WARN),
        LogLevel::Error => line!(tracing::Level::ERROR),
    }
}
