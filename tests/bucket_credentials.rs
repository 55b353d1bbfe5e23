//! Wrong credentials against a real S3 server (`common::bucket`). moto
//! takes any key unless told to authenticate, which it is told server-wide
//! (`POST /moto-api/reset-auth`): so this check is a test binary of its
//! own, with one test, and puts the server back as it found it when done
//! (Cargo runs test binaries one at a time).

use std::io::{Read, Write};
use std::net::TcpStream;

use bloomlsm::fs::bucket::BucketFs;

mod common;
use common::bucket::{bucket, config, endpoint, prefix};

/// `POST /moto-api/reset-auth` with `body`: from then on the server lets
/// `body` requests pass unauthenticated (`inf`: all of them).
fn reset_auth(body: &str) {
    let host = endpoint().trim_start_matches("http://").to_string();
    let mut s = TcpStream::connect(&host).unwrap();
    write!(
        s,
        "POST /moto-api/reset-auth HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// Authentication on while alive.
struct Authenticating;

impl Authenticating {
    fn on() -> Authenticating {
        reset_auth("0");
        Authenticating
    }
}

impl Drop for Authenticating {
    fn drop(&mut self) {
        reset_auth("inf");
    }
}

#[test]
fn wrong_credentials_fail_the_construction_in_one_line_and_change_nothing_locally() {
    let root = tempfile::tempdir().unwrap();
    let (dir, cache) = (root.path().join("db"), root.path().join("cache"));
    let config = config(&dir, &cache, &prefix("credentials")).credentials("AKIDWRONG", "wrong");
    let r = {
        let _auth = Authenticating::on();
        BucketFs::open(config)
    };
    let Err(e) = r else {
        panic!("wrong credentials open");
    };
    let e = e.to_string();
    eprintln!("{e}");
    assert!(!e.contains('\n'), "{e}");
    assert!(e.contains(&endpoint()) && e.contains(&bucket()), "{e}");
    assert!(e.contains("403"), "not refused as forbidden: {e}");
    assert!(!dir.exists() && !cache.exists(), "made locally");
}
