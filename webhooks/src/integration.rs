//! Integration kinds: a session's title must say something.
//!
//! Integration has nothing to check beyond its schema.

use keelson_api_crds::integration::IntegrationSessionSpec;

use crate::Problem;

/// Problems with an IntegrationSession's spec: a title of only whitespace (`spec.title`).
pub fn check_integration_session(spec: &IntegrationSessionSpec) -> Vec<Problem> {
    if spec.title.trim().is_empty() {
        vec![Problem::new(
            "spec.title",
            "title is blank: give the session a title people can recognize",
        )]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(title: &str) -> IntegrationSessionSpec {
        IntegrationSessionSpec {
            tenant: "clinic-a".to_owned(),
            title: title.to_owned(),
            archived: false,
        }
    }

    #[test]
    fn a_titled_session_has_no_problem() {
        assert_eq!(check_integration_session(&session("ADT feed onboarding")), vec![]);
    }

    #[test]
    fn a_blank_title_is_refused() {
        for blank in ["", " ", "\t\n "] {
            assert_eq!(
                check_integration_session(&session(blank)),
                vec![Problem::new(
                    "spec.title",
                    "title is blank: give the session a title people can recognize"
                )],
                "{blank:?}"
            );
        }
    }
}
