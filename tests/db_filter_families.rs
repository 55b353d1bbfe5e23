//! Filter families registered at run time, in a store: files built with one
//! read right with it and without it, and a family that fails its build
//! stops the store with an error naming it, never a wrong answer.

mod common;

use std::sync::OnceLock;

use bloomlsm::filter::FilterDecodeError;
use bloomlsm::{
    Db, Error, Filter, FilterFamily, FilterKind, FilterOptions, FilterPolicy, Options,
    register_filter,
};
use common::child::Child;
use common::keys::key;

/// blocked512's bits under another name; `panics` makes its build panic
/// once `PANIC_AFTER` filters have been built.
struct Renamed {
    name: &'static str,
    panics: bool,
}

static BUILT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
const PANIC_AFTER: usize = 2;

impl FilterFamily for Renamed {
    fn name(&self) -> &str {
        self.name
    }
    fn model_fpr(&self, bits_per_key: f64, num_probes: u32) -> f64 {
        FilterKind::Blocked512.model_fpr(bits_per_key, num_probes)
    }
    fn best_probes(&self, bits_per_key: f64) -> u32 {
        FilterKind::Blocked512.best_probes(bits_per_key)
    }
    fn build(&self, hashes: &[u64], bits: f64, k: u32) -> Result<Vec<u8>, String> {
        let n = BUILT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.panics && n >= PANIC_AFTER {
            panic!("a bug in the family");
        }
        FilterKind::Blocked512.family().build(hashes, bits, k)
    }
    fn open(&self, bytes: &[u8]) -> Result<Filter, FilterDecodeError> {
        FilterKind::Blocked512.family().open(bytes)
    }
}

fn options(kind: FilterKind) -> Options {
    common::options::small().filters(FilterOptions::uniform(Some(FilterPolicy::new(kind, 10.0))))
}

fn load(db: &Db, n: u64) {
    for i in 0..n {
        db.put(key(2 * i), key(i)).unwrap();
    }
}

/// A store filtered by `kind` holding 3000 keys in compacted tables, its
/// counters zeroed.
fn compacted_store(kind: FilterKind) -> (tempfile::TempDir, Db) {
    let dir = common::scratch_dir();
    let db = Db::open(dir.path(), options(kind)).unwrap();
    load(&db, 3000);
    db.flush().unwrap();
    db.compact().unwrap();
    db.reset_stats();
    (dir, db)
}

fn check(db: &Db, n: u64) {
    for i in 0..n {
        assert_eq!(db.get(key(2 * i)).unwrap().as_deref(), Some(&key(i)[..]));
        assert_eq!(db.get(key(2 * i + 1)).unwrap(), None);
    }
}

/// The name only the child process registers.
const CHILD_ONLY: &str = "renamed_in_child";

/// The child: registers [`CHILD_ONLY`], writes a store with it, closes it.
#[test]
#[ignore = "run by files_of_a_family_this_process_lacks_read_unfiltered"]
fn child_writes_with_a_registered_family() {
    let Ok(dir) = std::env::var("FAMILY_DIR") else {
        return;
    };
    let kind = register_filter(Renamed {
        name: CHILD_ONLY,
        panics: false,
    })
    .unwrap();
    let db = Db::open(&dir, options(kind)).unwrap();
    load(&db, 3000);
    db.flush().unwrap();
    db.compact().unwrap();
    db.close().unwrap();
    println!("done");
}

#[test]
fn files_of_a_family_this_process_lacks_read_unfiltered() {
    let dir = common::scratch_dir();
    let mut child = Child::spawn(
        "child_writes_with_a_registered_family",
        &[("FAMILY_DIR", dir.path().display().to_string())],
    );
    // Past the test harness's own lines.
    let done = std::iter::from_fn(|| child.next_line()).any(|l| l.ends_with("done"));
    let k = child.kill();
    assert!(done, "{}", k.stderr);
    assert_eq!(FilterKind::from_name(CHILD_ONLY), None);
    // The store's design names the family: refused, saying how to go on.
    let e = Db::open(dir.path(), common::options::small()).unwrap_err();
    assert!(
        e.to_string()
            .contains("\"renamed_in_child\", which this process has not registered"),
        "{e}"
    );
    // Given another design: every file names a family this process does not
    // know, and is read without its filter.
    let opts = common::options::small().use_stored_design(false);
    let db = Db::open(dir.path(), opts).unwrap();
    assert!(
        db.stats()
            .levels
            .iter()
            .map(|l| l.unfiltered_files)
            .sum::<usize>()
            > 0
    );
    db.reset_stats();
    check(&db, 3000);
    let s = db.stats();
    assert_eq!(s.total.filter_checks, 0, "no filter was usable");
    assert!(s.total.unusable_filter_reads > 0, "{:?}", s.total);
}

fn registered(name: &'static str, panics: bool) -> FilterKind {
    static KINDS: OnceLock<std::sync::Mutex<Vec<FilterKind>>> = OnceLock::new();
    let kinds = KINDS.get_or_init(Default::default);
    let mut kinds = kinds.lock().unwrap();
    if let Some(k) = kinds.iter().find(|k| k.name() == name) {
        return *k;
    }
    let k = register_filter(Renamed { name, panics }).unwrap();
    kinds.push(k);
    k
}

#[test]
fn a_registered_family_filters_like_a_built_in() {
    let kind = registered("renamed", false);
    let (dir, db) = compacted_store(kind);
    check(&db, 3000);
    let s = db.stats();
    assert!(s.total.filter_negatives > 2000, "{:?}", s.total);
    assert_eq!(s.total.unusable_filter_reads, 0);
    let files = db.file_stats();
    assert!(
        files.iter().all(|f| f.filter.starts_with("renamed")),
        "{files:?}"
    );
    db.close().unwrap();
    // Reopened: the manifest and the files name it.
    let db = Db::open(dir.path(), options(kind)).unwrap();
    check(&db, 3000);
}

#[test]
fn a_family_that_panics_while_building_stops_the_store_naming_it() {
    let kind = registered("renamed_panics", true);
    let dir = common::scratch_dir();
    let db = Db::open(dir.path(), options(kind)).unwrap();
    // The writer that meets the failure gets its cause; later calls get
    // the store's poison, which keeps it.
    let mut failed = None;
    for i in 0..20_000u64 {
        if let Err(e) = db.put(key(2 * i), key(i)).and_then(|()| db.flush()) {
            failed = Some((i, e));
            break;
        }
    }
    let (written, e) = failed.expect("a write or flush fails once the family panics");
    let cause = match e {
        Error::Poisoned { cause, .. } => cause,
        e => std::sync::Arc::new(e),
    };
    match &*cause {
        Error::Filter { family, what } => {
            assert_eq!(family, "renamed_panics");
            assert_eq!(what, "build panicked: a bug in the family");
        }
        other => panic!("{other:?}"),
    }
    match db.put(b"k", b"v") {
        Err(Error::Poisoned { cause, .. }) => assert!(matches!(*cause, Error::Filter { .. })),
        other => panic!("{other:?}"),
    }
    // Reads still answer right, and nothing acknowledged is lost on reopen
    // with a built-in family.
    check(&db, written);
    drop(db);
    let opts = common::options::small().use_stored_design(false);
    let db = Db::open(dir.path(), opts).unwrap();
    check(&db, written);
}

#[test]
fn binary_fuse_filters_serve_a_store() {
    for kind in [FilterKind::Fuse8, FilterKind::Fuse16] {
        let (dir, db) = compacted_store(kind);
        check(&db, 3000);
        let s = db.stats();
        assert!(s.total.filter_negatives > 2900, "{kind}: {:?}", s.total);
        assert_eq!(s.total.unusable_filter_reads, 0);
        // 2^-8 of about 3000 filtered misses: a handful at most.
        assert!(s.total.false_positives < 60, "{kind}: {:?}", s.total);
        let files = db.file_stats();
        assert!(
            files.iter().all(|f| f.filter.starts_with(kind.name())),
            "{files:?}"
        );
        db.close().unwrap();
        let db = Db::open(dir.path(), options(kind)).unwrap();
        check(&db, 3000);
    }
}
