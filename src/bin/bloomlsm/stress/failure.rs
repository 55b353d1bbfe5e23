//! How a stress run fails: a read that disagrees with the expected state
//! ([`Mismatch`]), or an error of the store or of the run's own files.

use std::fmt;

use crate::{CliError, EXIT_FAILURE, EXIT_NEGATIVE, one_line};

/// A read that disagrees with the expected state.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// The operation that read it.
    pub op: &'static str,
    /// The keyspace's name.
    pub keyspace: String,
    /// The key, as text.
    pub key: String,
    /// What the expected state allows.
    pub expected: String,
    /// What was read.
    pub found: String,
}

/// Why a run stopped before its end.
#[derive(Clone, Debug)]
pub enum Failure {
    /// A wrong answer.
    Mismatch(Box<Mismatch>),
    /// A call that failed (any error of the store, or of the run's files).
    Error(String),
    /// A child of `--kill` that failed by itself: its exit status and its
    /// error.
    Child(i32, String),
}

impl Failure {
    /// A failed call: `what` failed with `e`.
    pub fn error(what: impl fmt::Display, e: impl fmt::Display) -> Failure {
        Failure::Error(one_line(&format!("{what}: {e}")))
    }

    /// A wrong answer of `op` on `key` of `keyspace`.
    pub fn mismatch(
        op: &'static str,
        keyspace: &str,
        key: &[u8],
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Failure {
        Failure::Mismatch(Box::new(Mismatch {
            op,
            keyspace: keyspace.to_string(),
            key: String::from_utf8_lossy(key).into_owned(),
            expected: expected.into(),
            found: found.into(),
        }))
    }

    /// The command's error for this failure in a run of `seed`: exit
    /// status 1 for a wrong answer, 4 for an error.
    pub fn into_cli(self, seed: u64, dir: &str) -> CliError {
        let code = match self {
            Failure::Mismatch(_) => EXIT_NEGATIVE,
            Failure::Error(_) => EXIT_FAILURE,
            Failure::Child(code, _) => code,
        };
        CliError::new(format!(
            "{self} (seed {seed}; the run's files are kept in {dir})"
        ))
        .with_code(code)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Mismatch(m) => write!(
                f,
                "mismatch: {} of keyspace {} key {}: expected {}, found {}",
                m.op, m.keyspace, m.key, m.expected, m.found
            ),
            Failure::Error(e) | Failure::Child(_, e) => f.write_str(e),
        }
    }
}

/// The result of a stress step.
pub type Checked<T = ()> = Result<T, Failure>;

/// Wraps a store error: `what` failed.
pub fn engine<T>(what: &str, r: bloomlsm::Result<T>) -> Checked<T> {
    r.map_err(|e| Failure::error(what, e))
}
