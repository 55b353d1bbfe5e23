//! `bench`'s temporary files do not outlive an interrupted run.
//!
//! [`install`] blocks SIGINT and SIGTERM in the calling thread, and so in
//! every thread started after it (threads inherit their creator's signal
//! mask), and starts one thread that waits for them with `sigwait`. When one
//! arrives, that thread removes every path given to [`remove_on_interrupt`]
//! and ends the process with status 128 + the signal's number: 130 for
//! SIGINT, 143 for SIGTERM, as a shell reports a process the signal killed.
//!
//! The run is not unwound: it goes on until the process ends. Two things
//! keep it from leaving files behind meanwhile:
//!
//! - Whatever creates a directory that is to be removed runs inside
//!   [`guard`]: the signal thread waits for a guarded call in progress before
//!   it removes anything, and a guarded call that starts after the signal
//!   never runs (its thread waits for the exit instead). So nothing is
//!   created after the removal, where it would stay.
//! - [`settle`], on the way out of `main`, waits for the exit instead of
//!   reporting what the removal did to the run (files vanishing under it) as
//!   its error, or a success.
//!
//! Elsewhere than Linux (where the `libc` crate is a dependency) `install`
//! does nothing, and the signals end the process as they do by default.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Set by the signal thread once a signal has arrived.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Held by [`guard`]ed calls and by the signal thread while it removes.
static CREATING: Mutex<()> = Mutex::new(());
/// The paths the signal thread removes.
static PATHS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one leaves nothing half-updated: a Vec push.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits for the exit the signal thread is about to make.
fn wait_for_exit() -> ! {
    loop {
        std::thread::park();
    }
}

/// Blocks SIGINT and SIGTERM and starts the thread that handles them (once
/// per process; later calls do nothing). Call it before any other thread
/// starts, so that none of them takes the signals with their default action
/// (ending the process at once).
#[cfg(target_os = "linux")]
pub fn install() -> std::io::Result<()> {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    // SAFETY: `sigset_t` is plain data, initialised by `sigemptyset` before
    // any other use; the calls get valid pointers to it and to `sig`.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        std::thread::Builder::new()
            .name("bloomlsm-signals".into())
            .spawn(move || {
                let mut sig: libc::c_int = 0;
                while libc::sigwait(&set, &mut sig) != 0 {}
                on_signal(sig)
            })?;
    }
    Ok(())
}

/// See the Linux version: elsewhere the signals keep their default action.
#[cfg(not(target_os = "linux"))]
pub fn install() -> std::io::Result<()> {
    Ok(())
}

/// Removes the registered paths and ends the process (module docs).
#[cfg(target_os = "linux")]
fn on_signal(sig: libc::c_int) -> ! {
    INTERRUPTED.store(true, Ordering::SeqCst);
    let _creating = lock(&CREATING);
    let paths = lock(&PATHS).clone();
    for p in &paths {
        // The run may still be writing inside: files it creates in the
        // meantime make one removal fail, so try until the path is gone.
        for _ in 0..1000 {
            let _ = if p.is_dir() {
                std::fs::remove_dir_all(p)
            } else {
                std::fs::remove_file(p)
            };
            if std::fs::symlink_metadata(p).is_err() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    let name = if sig == libc::SIGINT {
        "SIGINT"
    } else {
        "SIGTERM"
    };
    eprintln!("bloomlsm: interrupted by {name}; temporary files removed");
    std::process::exit(128 + sig)
}

/// Removes `path` (a file, or a directory and everything in it) if the
/// process is interrupted.
pub fn remove_on_interrupt(path: PathBuf) {
    lock(&PATHS).push(path);
}

/// Runs `f`, which may create what [`remove_on_interrupt`] is to remove,
/// so that an interruption removes it only once `f` is done. After an
/// interruption `f` does not run: the caller waits for the exit.
pub fn guard<T>(f: impl FnOnce() -> T) -> T {
    let held = lock(&CREATING);
    if INTERRUPTED.load(Ordering::SeqCst) {
        drop(held);
        wait_for_exit();
    }
    f()
}

/// Waits for the exit if the process was interrupted (module docs); returns
/// at once otherwise.
pub fn settle() {
    if INTERRUPTED.load(Ordering::SeqCst) {
        wait_for_exit();
    }
}
