//! The crash tests' child processes: the test binary runs itself again with
//! one `#[ignore]`d test alone, which finds its orders in environment
//! variables and prints a line per acknowledged write; the parent reads
//! those lines, kills the child with SIGKILL at a moment of its choosing,
//! and checks what survived against the writes the child acknowledged.

use std::io::{BufRead, BufReader, Lines, Read};
use std::process::{ChildStdout, Command, ExitStatus, Stdio};

/// A running child.
pub struct Child {
    child: std::process::Child,
    /// `None` once handed to a thread ([`Child::lines_on_a_thread`]).
    lines: Option<Lines<BufReader<ChildStdout>>>,
}

/// What a killed child left.
pub struct Killed {
    /// Lines it printed before it died that were not read yet: a write
    /// acknowledged just before the kill still counts.
    pub rest: Vec<String>,
    /// How it ended.
    pub status: ExitStatus,
    /// Everything it wrote to stderr.
    pub stderr: String,
}

impl Child {
    /// Runs the `#[ignore]`d test `test` of this test binary alone, with
    /// `env` set.
    pub fn spawn(test: &str, env: &[(&str, String)]) -> Child {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                test,
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = Some(BufReader::new(child.stdout.take().unwrap()).lines());
        Child { child, lines }
    }

    /// The next line the child prints, waiting for it; `None` once the child
    /// has closed its stdout.
    pub fn next_line(&mut self) -> Option<String> {
        self.lines.as_mut()?.next().map(Result::unwrap)
    }

    /// The child's lines from now on, read by a thread of their own (to
    /// wait on several children at once).
    pub fn lines_on_a_thread(&mut self) -> std::sync::mpsc::Receiver<String> {
        let (tx, rx) = std::sync::mpsc::channel();
        if let Some(lines) = self.lines.take() {
            std::thread::spawn(move || {
                for l in lines.map_while(Result::ok) {
                    if tx.send(l).is_err() {
                        return;
                    }
                }
            });
        }
        rx
    }

    /// Waits for the child to end by itself and collects what it left.
    pub fn wait(mut self) -> Killed {
        let rest = match self.lines.as_mut() {
            Some(l) => l.by_ref().map_while(Result::ok).collect(),
            None => Vec::new(),
        };
        let status = self.child.wait().unwrap();
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        Killed {
            rest,
            status,
            stderr,
        }
    }

    /// Kills the child (SIGKILL) and collects what it left.
    pub fn kill(mut self) -> Killed {
        let _ = self.child.kill();
        self.wait()
    }
}
