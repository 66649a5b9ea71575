//! Replacing user outputs so that a process killed at any instant (or a machine losing power
//! after the command returned) leaves each output either as it was or as the command made it,
//! never partial and never missing.
//!
//! - [`write_file`]: one file, through a temporary file in its folder that is fsynced, renamed
//!   over the target, and the folder fsynced (the rename is only durable once it is).
//! - [`staging_dir`]: a whole folder staged beside the target, then swapped in by [`StagedDir::commit`]
//!   with one `renameat2(RENAME_EXCHANGE)` — the two-rename dance leaves no target between
//!   its renames — and the old tree removed.
//! - [`commit_files`]: several files of one folder tree changed together (a catalog edit may
//!   touch a package file and the template that renders it): the tree is staged as hard links,
//!   the files replaced in the stage, and the stage swapped in the same way. [`stage_files`]
//!   is its first half, for a caller with something else to do before the swap.
//!
//! Staging names carry the creating process's id, so a later run can tell the leftovers of a
//! killed run (whose process is gone) from those of a run still going, and removes them.

mod file;
mod folder;
mod stale;

pub use file::{sync_dir, write_file};
pub use folder::{OldTree, StagedDir, commit_files, stage_files, staging_dir};
pub use stale::{is_staging_name, sweep};
