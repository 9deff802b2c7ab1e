//! Forked children for the tests that fork while other threads are busy (shared by ordo-ffi's
//! tests through `common` and by `tests/tests/fork.rs` through `#[path]`).

use std::time::{Duration, Instant};

/// Forks `rounds` children, one at a time; each runs `child` and exits with its status at once
/// (no exit handlers). The failures, one line per round: a child that hung for 10 s (killed)
/// or exited with a non-zero status.
///
/// `child` runs in a forked copy of a process whose other threads are gone: it may use only
/// what a forked child may (the test's subject, async-signal-safe calls).
pub fn fork_rounds(rounds: usize, child: impl Fn() -> i32) -> Vec<String> {
    let mut failures = Vec::new();
    for round in 0..rounds {
        // SAFETY: the child runs `child` on this thread and `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let status = child();
            // SAFETY: ends the child at once, without running the parent's exit handlers.
            unsafe { libc::_exit(status) };
        }
        if let Err(why) = wait_child(pid) {
            failures.push(format!("round {round}: {why}"));
        }
    }
    failures
}

/// Waits up to 10 s for forked child `pid`: `Err` with why when it hung (it is killed) or
/// exited with a non-zero status (`check N` for status N).
fn wait_child(pid: libc::pid_t) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut status = 0;
    loop {
        // SAFETY: our own child; `status` is writable.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            break;
        }
        if Instant::now() > deadline {
            // SAFETY: as above.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err("the child hung".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) != 0 {
        return Err(format!("the child failed check {}", libc::WEXITSTATUS(status)));
    }
    Ok(())
}
