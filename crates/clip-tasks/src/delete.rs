//! Cancelling and deleting a task: `DELETE /api/v3/contents/generations/tasks/{id}`
//! (wire-formats §5.3).
//!
//! The vendor answers 200 with no meaningful body when the call is allowed. What it does depends
//! on the task's status:
//!
//! | Status | Allowed | Effect | [`DeleteEffect`] |
//! |---|---|---|---|
//! | `queued` | yes | cancelled; the status becomes `cancelled` (the hold is refunded) | [`Cancel`](DeleteEffect::Cancel) |
//! | `running` | no | error | [`Refuse`](DeleteEffect::Refuse) |
//! | `succeeded`, `failed`, `expired` | yes | the record is deleted and can no longer be queried | [`Remove`](DeleteEffect::Remove) |
//! | `cancelled` | no | — | [`Refuse`](DeleteEffect::Refuse) |
//!
//! A status this crate does not know is refused: the gateway cannot tell whether the task is
//! still generating.

use serde::{Deserialize, Serialize};

use crate::task::TaskStatus;

/// What `DELETE` does to a task (wire-formats §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeleteEffect {
    /// A queued task is cancelled: its status becomes `cancelled`.
    Cancel,
    /// A finished task's record is deleted.
    Remove,
    /// The call is refused (a running or cancelled task, or an unknown status).
    Refuse,
}

impl DeleteEffect {
    /// Whether the call is allowed (answered 200).
    pub const fn is_allowed(self) -> bool {
        !matches!(self, DeleteEffect::Refuse)
    }
}

/// What `DELETE` does to a task in `status` (see the module's table).
///
/// ```
/// use tollgate_clip_tasks::{delete_effect, DeleteEffect, TaskStatus};
///
/// assert_eq!(delete_effect(&TaskStatus::Queued), DeleteEffect::Cancel);
/// assert_eq!(delete_effect(&TaskStatus::Running), DeleteEffect::Refuse);
/// assert_eq!(delete_effect(&TaskStatus::Expired), DeleteEffect::Remove);
/// ```
pub fn delete_effect(status: &TaskStatus) -> DeleteEffect {
    match status {
        TaskStatus::Queued => DeleteEffect::Cancel,
        TaskStatus::Succeeded | TaskStatus::Failed | TaskStatus::Expired => DeleteEffect::Remove,
        TaskStatus::Running | TaskStatus::Cancelled | TaskStatus::Unknown(_) => {
            DeleteEffect::Refuse
        }
    }
}
