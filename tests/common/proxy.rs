//! A TCP proxy on 127.0.0.1 in front of a server, which a test stops (the
//! listener closed, every live connection cut in both directions) and
//! restarts on the same port: the server going away and coming back, as
//! the client sees it, without losing what the server holds.

use std::collections::HashMap;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

struct Running {
    stop: Arc<AtomicBool>,
    accept: JoinHandle<()>,
}

/// The proxy; see the module docs.
pub struct Proxy {
    port: u16,
    target: SocketAddr,
    running: Mutex<Option<Running>>,
    /// Both ends of each connection still open, by number, to cut them at
    /// a stop; a connection leaves when its first direction ends.
    live: Arc<Mutex<HashMap<u64, [TcpStream; 2]>>>,
    accepted: Arc<AtomicU64>,
}

impl Proxy {
    /// A proxy to the server at `target` (`http://host:port` or
    /// `host:port`), listening on a free port.
    pub fn start(target: &str) -> Proxy {
        let hostport = target.trim_start_matches("http://").trim_end_matches('/');
        let target = hostport.to_socket_addrs().unwrap().next().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = Proxy {
            port: listener.local_addr().unwrap().port(),
            target,
            running: Mutex::new(None),
            live: Arc::new(Mutex::new(HashMap::new())),
            accepted: Arc::new(AtomicU64::new(0)),
        };
        proxy.serve(listener);
        proxy
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    pub fn is_running(&self) -> bool {
        self.running.lock().unwrap().is_some()
    }

    fn serve(&self, listener: TcpListener) {
        let stop = Arc::new(AtomicBool::new(false));
        let (s, live, accepted, target) = (
            stop.clone(),
            self.live.clone(),
            self.accepted.clone(),
            self.target,
        );
        let accept = std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(target) else {
                    continue;
                };
                let id = accepted.fetch_add(1, Ordering::Relaxed);
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let ends = [client.try_clone().unwrap(), server.try_clone().unwrap()];
                live.lock().unwrap().insert(id, ends);
                let up = (client.try_clone().unwrap(), server.try_clone().unwrap());
                pump(up.0, up.1, id, live.clone());
                pump(server, client, id, live.clone());
            }
            // The listener is dropped here: new connections are refused.
        });
        *self.running.lock().unwrap() = Some(Running { stop, accept });
    }

    /// Closes the listener and cuts every live connection.
    pub fn stop(&self) {
        let Some(r) = self.running.lock().unwrap().take() else {
            return;
        };
        r.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then drops the listener.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        r.accept.join().unwrap();
        for (_, ends) in self.live.lock().unwrap().drain() {
            for e in ends {
                let _ = e.shutdown(Shutdown::Both);
            }
        }
    }

    /// Listens on the same port again.
    pub fn restart(&self) {
        if self.is_running() {
            return;
        }
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", self.port)) {
                Ok(l) => break l,
                Err(e) if e.kind() == io::ErrorKind::AddrInUse && tries < 200 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => panic!("rebind 127.0.0.1:{}: {e}", self.port),
            }
        };
        self.serve(listener);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Copies `from` to `to` on a thread of its own until either end closes,
/// then closes the write side of `to` and drops connection `id` from
/// `live` (its descriptors close with the last pump).
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    id: u64,
    live: Arc<Mutex<HashMap<u64, [TcpStream; 2]>>>,
) {
    std::thread::spawn(move || {
        let _ = io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
        live.lock().unwrap().remove(&id);
    });
}
