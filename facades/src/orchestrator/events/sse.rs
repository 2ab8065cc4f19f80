//! The server-sent event stream of one run: `hello`, then the history after the client's
//! cursor, then live events until `end`. Subscribers read the shared history at their own
//! pace, so a slow one never holds up others or the controllers; one that falls behind what
//! the history keeps gets a `lagged` event and goes on from the oldest event kept.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde_json::json;
use tokio::sync::watch;

use super::diff::format_time;
use super::history::Stored;
use super::{EventHub, Read};

/// Interval of the `: heartbeat` comments that keep proxies from closing an idle stream.
pub const HEARTBEAT: Duration = Duration::from_secs(15);

/// Where a stream is.
struct Cursor {
    hub: EventHub,
    run: String,
    after: u64,
    latest: watch::Receiver<u64>,
    pending: std::collections::VecDeque<Event>,
    done: bool,
}

/// The stream of `run`'s events after seq `after`, opened with `hello` (which carries the
/// run's status); `None` when the hub knows nothing of the run.
pub fn stream(
    hub: EventHub,
    run: &str,
    after: u64,
    status: &str,
) -> Option<Sse<impl Stream<Item = Result<Event, Infallible>> + use<>>> {
    let latest = hub.subscribe(run)?;
    let (last_seq, _) = hub.position(run)?;
    let hello = json!({
        "seq": last_seq,
        "run_id": run,
        "type": "hello",
        "time": format_time(jiff::Timestamp::now()),
        "data": {"status": status, "last_seq": last_seq, "resume_after": after},
    });
    let cursor = Cursor {
        hub,
        run: run.to_owned(),
        after,
        latest,
        pending: [Event::default().event("hello").data(hello.to_string())].into(),
        done: false,
    };
    let events = futures::stream::unfold(cursor, |mut cursor| async move {
        let event = cursor.next().await?;
        Some((Ok(event), cursor))
    });
    Some(Sse::new(events).keep_alive(KeepAlive::new().interval(HEARTBEAT).text("heartbeat")))
}

fn frame(stored: &Stored) -> Event {
    Event::default().id(stored.seq.to_string()).event(stored.kind.as_str()).data(&*stored.json)
}

impl Cursor {
    /// The next frame, waiting for one; `None` ends the stream.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            // Mark what is seen before reading, so an event pushed meanwhile wakes us.
            self.latest.borrow_and_update();
            match self.hub.read(&self.run, self.after)? {
                Read::Lagged(lagged) => {
                    let data = json!({
                        "seq": lagged.oldest.saturating_sub(1),
                        "run_id": self.run,
                        "type": "lagged",
                        "time": format_time(jiff::Timestamp::now()),
                        "data": {"after": self.after, "oldest_kept": lagged.oldest},
                    });
                    self.pending.push_back(Event::default().event("lagged").data(data.to_string()));
                    self.after = lagged.oldest.saturating_sub(1);
                }
                Read::Events(events) if !events.is_empty() => {
                    for stored in events {
                        self.after = stored.seq;
                        self.pending.push_back(frame(&stored));
                        if stored.kind == super::diff::EventKind::End {
                            self.done = true;
                            break;
                        }
                    }
                }
                Read::Events(_) => {
                    // Nothing new: a finished run whose `end` was trimmed ends here too.
                    if self.hub.position(&self.run).is_some_and(|(_, ended)| ended) {
                        return None;
                    }
                    // The run was forgotten (deleted) when the channel closes.
                    self.latest.changed().await.ok()?;
                }
            }
        }
    }
}
